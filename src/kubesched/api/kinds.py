"""Which store kind an object is kept under.

The store, the informers, the registry and the watch stream key objects by their kind. Two API
groups define a ``PodGroup``: Volcano's ``scheduling.volcano.sh`` (and scheduler-plugins'
``scheduling.x-k8s.io``, read by the same view) keeps the plain kind, and the workload API's
``scheduling.k8s.io`` PodGroup is kept as ``PodGroup.scheduling.k8s.io`` (``kind.group``, as kubectl
names a resource of one group). On the wire both keep ``kind: PodGroup`` and their own
``apiVersion``; only the store's key differs. Every other kind is stored under its own name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: Kind → {API group → store kind} for the kinds whose name more than one group uses.
_QUALIFIED: Final[Mapping[str, Mapping[str, str]]] = {
    "PodGroup": {"scheduling.k8s.io": "PodGroup.scheduling.k8s.io"},
}
#: The kinds whose store kind depends on the group (a quick test before :func:`store_kind`).
SHARED_KINDS: Final = frozenset(_QUALIFIED)
#: Store kind → the kind written on the wire, for the qualified store kinds.
_WIRE: Final[Mapping[str, str]] = {
    qualified: kind for kind, groups in _QUALIFIED.items() for qualified in groups.values()
}


def group_of(api_version: str) -> str:
    """The API group of an ``apiVersion`` (``""`` for core ``v1``)."""
    group, sep, _ = api_version.rpartition("/")
    return group if sep else ""


def store_kind(api_version: str, kind: str) -> str:
    """The store kind of objects of ``kind`` in ``api_version``."""
    groups = _QUALIFIED.get(kind)
    if groups is None:
        return kind
    return groups.get(group_of(api_version), kind)


def store_kind_in_group(group: str, kind: str) -> str:
    """The store kind of ``kind`` served in API ``group``."""
    groups = _QUALIFIED.get(kind)
    if groups is None:
        return kind
    return groups.get(group, kind)


def object_store_kind(obj: Mapping[str, Any]) -> str:
    """The store kind of a stored or written object."""
    kind = str(obj.get("kind"))
    if kind not in SHARED_KINDS:
        return kind
    return store_kind(str(obj.get("apiVersion") or ""), kind)


def wire_kind(kind: str) -> str:
    """The ``kind`` an object kept under store kind ``kind`` carries on the wire."""
    return _WIRE.get(kind, kind)
