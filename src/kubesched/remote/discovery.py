"""Which API serves each kind the schedulers follow, read from the server's discovery documents.

``/api`` and ``/apis`` name the group versions a server offers; the resource list of each group
version we may use gives a kind's plural and scope. Each kind has versions in order of preference;
the first one served is used. Objects of an older version are presented to the parsers as the
preferred version (``apiVersion`` rewritten; the fields the scheduler reads are the same in both):

- PodDisruptionBudget: ``policy/v1`` (Kubernetes 1.21+), else ``policy/v1beta1`` with a warning
  (in v1beta1 an empty selector selects no pod, which is how the PDB parser reads any empty one);
- PriorityClass: ``scheduling.k8s.io/v1``, else ``v1beta1``;
- Event: ``events.k8s.io/v1``, else the core ``v1`` Event (written, not followed);
- PodGroup, Queue: ``scheduling.volcano.sh/v1beta1``; without the Volcano CRDs a warning, and those
  informers stay empty (the batch scheduler has nothing to do).
- HyperNode: ``topology.volcano.sh/v1alpha1``; without Volcano's topology CRD a warning, and batch
  jobs are placed with no network topology.
- Workload and the runtime PodGroup of ``scheduling.k8s.io/v1alpha2`` (served while the server's
  GenericWorkload gate is on): without them a warning, those informers stay empty. The PodGroup is
  kept under its store kind ``PodGroup.scheduling.k8s.io``, apart from Volcano's (``api/kinds.py``).
- the storage kinds: PersistentVolume and PersistentVolumeClaim (core ``v1``), StorageClass and
  VolumeAttachment (``storage.k8s.io/v1``), CSIDriver and CSINode (``v1``, else ``v1beta1``, served
  since v1.14), CSIStorageCapacity (``v1`` since v1.24, else ``v1beta1``, else the ``v1alpha1`` of
  v1.19 and v1.20 when enabled); a server without one gets a warning and that informer stays empty.
- the DRA kinds (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice):
  ``resource.k8s.io/v1`` (Kubernetes 1.34+), else ``v1beta2`` (1.33), whose objects have v1's shape
  and are presented as ``v1``. The ``v1beta1`` of 1.32 puts a request's fields and a device's
  fields one level up (no ``exactly``, a ``basic`` device); its objects are not followed: a server
  that serves only it gets a warning, those informers stay empty and pods with claims wait.

A kind the server does not serve at all is reported in :attr:`Discovery.warnings` and left out;
it never stops the scheduler.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesched.api.kinds import wire_kind
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, SCHEDULING_GROUP, WORKLOAD_VERSION
from kubesched.store.base import StoreError

log = logging.getLogger(__name__)

GroupVersion = tuple[str, str]

#: Kind → the (group, version)s that may serve it, preferred first (the first is what our parsers
#: expect; objects of the others are presented as it).
KIND_VERSIONS: Mapping[str, tuple[GroupVersion, ...]] = {
    "Pod": (("", "v1"),),
    "Node": (("", "v1"),),
    "Namespace": (("", "v1"),),
    "Service": (("", "v1"),),
    "ReplicationController": (("", "v1"),),
    "PriorityClass": (("scheduling.k8s.io", "v1"), ("scheduling.k8s.io", "v1beta1")),
    "PodDisruptionBudget": (("policy", "v1"), ("policy", "v1beta1")),
    "ReplicaSet": (("apps", "v1"),),
    "StatefulSet": (("apps", "v1"),),
    "PodGroup": (("scheduling.volcano.sh", "v1beta1"),),
    "Queue": (("scheduling.volcano.sh", "v1beta1"),),
    "HyperNode": (("topology.volcano.sh", "v1alpha1"),),
    "Workload": ((SCHEDULING_GROUP, WORKLOAD_VERSION),),
    POD_GROUP_STORE_KIND: ((SCHEDULING_GROUP, WORKLOAD_VERSION),),
    "Lease": (("coordination.k8s.io", "v1"),),
    "Event": (("events.k8s.io", "v1"), ("", "v1")),
    "PersistentVolume": (("", "v1"),),
    "PersistentVolumeClaim": (("", "v1"),),
    "StorageClass": (("storage.k8s.io", "v1"),),
    "CSIDriver": (("storage.k8s.io", "v1"), ("storage.k8s.io", "v1beta1")),
    "CSINode": (("storage.k8s.io", "v1"), ("storage.k8s.io", "v1beta1")),
    "CSIStorageCapacity": (
        ("storage.k8s.io", "v1"),
        ("storage.k8s.io", "v1beta1"),
        ("storage.k8s.io", "v1alpha1"),
    ),
    "VolumeAttachment": (("storage.k8s.io", "v1"),),
    "DeviceClass": (("resource.k8s.io", "v1"), ("resource.k8s.io", "v1beta2")),
    "ResourceClaim": (("resource.k8s.io", "v1"), ("resource.k8s.io", "v1beta2")),
    "ResourceClaimTemplate": (("resource.k8s.io", "v1"), ("resource.k8s.io", "v1beta2")),
    "ResourceSlice": (("resource.k8s.io", "v1"), ("resource.k8s.io", "v1beta2")),
}

#: The kinds whose objects the scheduler keeps a mirror of (Lease and Event are only written).
FOLLOWED_KINDS: tuple[str, ...] = (
    "Namespace",
    "Node",
    "Pod",
    "PriorityClass",
    "PodDisruptionBudget",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "Queue",
    "PodGroup",
    "HyperNode",
    "Workload",
    POD_GROUP_STORE_KIND,
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "ResourceClaim",
)


#: Kinds whose older version has the fields the scheduler reads under the same names: their objects
#: are presented as the preferred version. Any other kind keeps the version it is served in.
SAME_SHAPE = frozenset(
    {
        "PriorityClass",
        "PodDisruptionBudget",
        "CSIDriver",
        "CSINode",
        "CSIStorageCapacity",
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
    }
)


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Where one kind is served."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    #: The apiVersion set on every object: the preferred version for a kind of the same shape in an
    #: older version (see ``SAME_SHAPE``), else the version served.
    preferred: str

    @property
    def group_version(self) -> str:
        return _gv(self.group, self.version)

    @property
    def converted(self) -> bool:
        """Objects are served in an older version than the preferred one."""
        return self.group_version != self.preferred

    def prefix(self) -> str:
        return "/api/v1" if not self.group else f"/apis/{self.group}/{self.version}"


class NotServed(StoreError):
    """The server offers no API for this kind."""


class _Getter(Protocol):
    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any: ...


@dataclass
class Discovery:
    """The kind table of one server (see the module docstring)."""

    kinds: dict[str, KindInfo]
    warnings: list[str] = field(default_factory=list)
    #: Every group version the server offers, as ``group/version`` (``v1`` for the core group).
    group_versions: frozenset[str] = frozenset()

    # -- building -------------------------------------------------------------------------------
    @classmethod
    async def discover(cls, client: _Getter, kinds: Iterable[str] = tuple(KIND_VERSIONS)) -> Discovery:
        wanted = {k: KIND_VERSIONS[k] for k in kinds}
        offered: set[GroupVersion] = set()
        core = await client.get("/api")
        for version in (core or {}).get("versions") or []:
            offered.add(("", str(version)))
        groups = await client.get("/apis")
        for group in (groups or {}).get("groups") or []:
            for version in group.get("versions") or []:
                offered.add((str(group.get("name") or ""), str(version.get("version") or "")))
        needed = sorted({gv for versions in wanted.values() for gv in versions if gv in offered})
        warnings: list[str] = []

        async def resources(gv: GroupVersion) -> tuple[GroupVersion, list[dict[str, Any]]]:
            path = f"/api/{gv[1]}" if not gv[0] else f"/apis/{gv[0]}/{gv[1]}"
            try:
                listed = await client.get(path)
            except StoreError as exc:  # an aggregated API that is down: its kinds are left out
                warnings.append(f"discovery of {_gv(*gv)} failed: {exc}")
                return gv, []
            return gv, list((listed or {}).get("resources") or [])

        by_gv = dict(await asyncio.gather(*(resources(gv) for gv in needed)))
        table: dict[str, KindInfo] = {}
        for kind, versions in wanted.items():
            for gv in versions:
                found = _find(by_gv.get(gv, ()), wire_kind(kind))
                if found is None:
                    continue
                preferred = _gv(*versions[0]) if kind in SAME_SHAPE else _gv(*gv)
                table[kind] = KindInfo(
                    kind, gv[0], gv[1], str(found["name"]), bool(found.get("namespaced")), preferred
                )
                break
            note = _missing_note(kind, table.get(kind), versions)
            if note:
                warnings.append(note)
        for warning in warnings:
            log.warning("%s", warning)
        return cls(table, warnings, frozenset(_gv(*gv) for gv in offered))

    # -- reading --------------------------------------------------------------------------------
    def has(self, kind: str) -> bool:
        return kind in self.kinds

    def info(self, kind: str) -> KindInfo:
        found = self.kinds.get(kind)
        if found is None:
            raise NotServed(f"the server does not serve {kind}")
        return found

    def serves(self, group_version: str) -> bool:
        return group_version in self.group_versions

    def path(
        self, kind: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of a kind's collection (in ``namespace``, or across all of them when None),
        of one object, or of one object's subresource."""
        info = self.info(kind)
        parts = [info.prefix()]
        if info.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(info.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError(f"a subresource ({subresource}) needs an object name")
        return "/".join(parts)

    def convert(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as our parsers expect it: ``apiVersion`` and ``kind`` set (list items come
        without them), an older version presented as the preferred one. Changes ``obj`` in place."""
        info = self.kinds.get(kind)
        obj["kind"] = wire_kind(kind)
        if info is not None:
            obj["apiVersion"] = info.preferred
        return obj


def _find(resources: Iterable[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for res in resources:
        if res.get("kind") == kind and "/" not in str(res.get("name") or ""):
            return res
    return None


def _missing_note(kind: str, info: KindInfo | None, versions: tuple[GroupVersion, ...]) -> str | None:
    wanted = _gv(*versions[0])
    if info is None:
        if kind in ("PodGroup", "Queue"):
            return (
                f"{kind}: {wanted} is not served (no Volcano CRDs); the {kind} informer stays empty "
                "and the batch scheduler's pods wait (kinds are discovered at start: restart kubesched "
                "after installing the CRDs)"
            )
        if kind in ("Workload", POD_GROUP_STORE_KIND):
            return (
                f"{wire_kind(kind)}: {wanted} is not served (the server's GenericWorkload gate is off); "
                "its informer stays empty and pods are scheduled without workload-aware scheduling"
            )
        if kind == "HyperNode":
            return (
                f"HyperNode: {wanted} is not served (no Volcano topology CRD); batch jobs are placed "
                "without network topology"
            )
        return (
            f"{kind}: not served (tried {', '.join(_gv(*gv) for gv in versions)}); its informer stays empty"
        )
    if kind == "PodDisruptionBudget" and info.converted:
        return (
            f"PodDisruptionBudget: {wanted} is not served; following {info.group_version} "
            f"(objects presented as {wanted})"
        )
    if info.group_version != wanted:
        return f"{kind}: {wanted} is not served; using {info.group_version}"
    return None
