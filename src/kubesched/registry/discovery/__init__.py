"""discovery.k8s.io kinds."""
