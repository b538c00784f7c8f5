"""Services: stored as given, with a status subresource."""

from __future__ import annotations

from kubesched.registry.strategy import Resource, Strategy

STRATEGY = Strategy(
    Resource("", "v1", "services", "service", "Service", True, ("svc",), ("status",), ("all",))
)
