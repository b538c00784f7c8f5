"""ResourceClaimTemplates: the claim a pod's ``spec.resourceClaims`` entry has generated for it;
fixed once made."""

from __future__ import annotations

from kubesched.registry.resource.common import ResourceStrategy
from kubesched.registry.strategy import Resource

STRATEGY = ResourceStrategy(
    Resource(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        "ResourceClaimTemplate",
        True,
    )
)
