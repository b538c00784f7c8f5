"""networking.k8s.io kinds."""
