"""``run`` follows the DRA kinds: ``resource.k8s.io/v1`` where served (serve serves it), else the
``v1beta2`` of Kubernetes 1.33 presented as v1; a 1.32 server's ``v1beta1`` is not followed, with
a warning, and those reflectors are skipped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.reflector import ReflectorSet

KINDS = {
    "DeviceClass": ("deviceclasses", False),
    "ResourceClaim": ("resourceclaims", True),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True),
    "ResourceSlice": ("resourceslices", False),
}


class _Server:
    """The discovery documents of a server serving the DRA kinds in one version of the group."""

    def __init__(self, version: str) -> None:
        self.version = version

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        if path == "/api":
            return {"versions": ["v1"]}
        if path == "/apis":
            return {"groups": [{"name": "resource.k8s.io", "versions": [{"version": self.version}]}]}
        if path == "/api/v1":
            return {"resources": [{"name": "pods", "kind": "Pod", "namespaced": True}]}
        if path == f"/apis/resource.k8s.io/{self.version}":
            return {
                "resources": [
                    {"name": plural, "kind": kind, "namespaced": namespaced}
                    for kind, (plural, namespaced) in KINDS.items()
                ]
            }
        return {}


def test_the_dra_kinds_are_followed_in_v1(cluster, loop_thread, connect):
    assert set(KINDS) <= set(FOLLOWED_KINDS)
    # Claims are followed after the classes, slices and templates they name.
    assert FOLLOWED_KINDS.index("ResourceClaim") > FOLLOWED_KINDS.index("DeviceClass")
    discovery = loop_thread.run(Discovery.discover(connect(cluster)))
    found = {kind: (discovery.info(kind).plural, discovery.info(kind).namespaced) for kind in KINDS}
    assert found == KINDS
    assert {discovery.info(kind).group_version for kind in KINDS} == {"resource.k8s.io/v1"}
    assert discovery.path("ResourceClaim", "ml", "c", "status") == (
        "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/c/status"
    )


def test_v1beta2_is_followed_and_presented_as_v1(loop_thread):
    discovery = loop_thread.run(Discovery.discover(_Server("v1beta2")))
    slices = discovery.info("ResourceSlice")
    assert slices.group_version == "resource.k8s.io/v1beta2" and slices.converted
    assert discovery.convert("ResourceSlice", {"metadata": {}})["apiVersion"] == "resource.k8s.io/v1"
    assert (
        "ResourceClaim: resource.k8s.io/v1 is not served; using resource.k8s.io/v1beta2" in discovery.warnings
    )


def test_v1beta1_is_not_followed(loop_thread):
    discovery = loop_thread.run(Discovery.discover(_Server("v1beta1")))
    assert not any(discovery.has(kind) for kind in KINDS)
    assert any(
        w.startswith("ResourceClaim: not served (tried resource.k8s.io/v1, ") for w in discovery.warnings
    )
    reflectors = ReflectorSet(None, discovery, MirrorStore(), FOLLOWED_KINDS)  # type: ignore[arg-type]
    assert set(KINDS) <= set(reflectors.skipped)
