"""DynamicResources: devices for pods through ResourceClaims (resource.k8s.io/v1)."""
