"""Leases: the leader election records, stored as given."""

from __future__ import annotations

from kubesched.registry.strategy import Resource, Strategy

STRATEGY = Strategy(Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease", True))
