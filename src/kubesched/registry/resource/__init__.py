"""The ``resource.k8s.io`` kinds of Dynamic Resource Allocation."""
