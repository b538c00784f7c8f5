"""The selector of a pod's workload, as upstream's ``helper.DefaultSelector`` (``plugins/helper/spread.go``):
what the default topology spread constraints count pods by."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from kubesched.api.objects import Pod
from kubesched.api.selectors import LabelSelector
from kubesched.api.workloads import (
    APPS_V1,
    CORE_V1,
    OwnerReference,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    controller_of,
    owner_references,
)
from kubesched.errors import InputError
from kubesched.store.informers import Change, InformerFactory

#: Parsed objects kept at most per cache; a cache starts over beyond it (pods come and go).
CACHE_LIMIT: Final = 8192


def default_selector(
    pod: Pod, informers: InformerFactory, parsed: OwnerRefCache | None = None
) -> LabelSelector:
    """Upstream ``helper.DefaultSelector``: the selector of the pod's workload.

    The ``spec.selector`` of every Service in the pod's namespace that selects the pod, merged, plus
    the selector of the ReplicationController, ReplicaSet or StatefulSet that controls the pod
    (``ownerReferences`` with ``controller: true``) when it exists. An empty result means "no workload".
    """
    cache = parsed if parsed is not None else OwnerRefCache()
    return _workload_selector(pod, informers, cache, _services_in_order(informers))


def _services_in_order(informers: InformerFactory) -> Iterator[Service | None]:
    """Every Service's parsed view in the lister's order (the store's: a new one last, an updated one
    in its place); None for one that did not parse."""
    services = informers.informer("Service")
    for obj in services.list_raw():
        meta = obj.get("metadata") or {}
        yield services.get(meta.get("namespace"), str(meta.get("name")))


def _workload_selector(
    pod: Pod, informers: InformerFactory, cache: OwnerRefCache, services: Iterable[Service | None]
) -> LabelSelector:
    """:func:`default_selector` given the Services (parsed, in store order; those of other namespaces
    are skipped)."""
    label_set: dict[str, str] = {}
    for svc in services:
        if svc is None or svc.namespace != pod.namespace or svc.selector is None:
            continue
        if svc.selects(pod.labels):
            label_set.update(svc.selector)
    requirements = LabelSelector.from_match_labels(label_set).requirements if label_set else ()
    owner = _controller(pod, cache)
    if owner is None:
        return LabelSelector(requirements)
    if owner.api_version == CORE_V1 and owner.kind == "ReplicationController":
        rc: ReplicationController | None = informers.informer("ReplicationController").get(
            pod.namespace, owner.name
        )
        if rc is not None:
            label_set.update(rc.selector)
            requirements = LabelSelector.from_match_labels(label_set).requirements
    elif owner.api_version == APPS_V1 and owner.kind in ("ReplicaSet", "StatefulSet"):
        workload: ReplicaSet | StatefulSet | None = informers.informer(owner.kind).get(
            pod.namespace, owner.name
        )
        if workload is not None and not workload.selector.match_nothing:
            requirements = (*requirements, *workload.selector.requirements)
    return LabelSelector(requirements)


class WorkloadSelectors:
    """:func:`default_selector` for many pods, without a pass over every Service per pod.

    Services are grouped by namespace once, and each result is remembered by what it depends on (the
    pod's namespace, labels and controller); both are dropped when the informers report a change to a
    Service, ReplicationController, ReplicaSet or StatefulSet. One per informer factory
    (:func:`workload_selectors`): a batch session builds PodTopologySpread anew each time, and a
    subscription per instance would outlive it."""

    KINDS: Final = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")

    def __init__(self, informers: InformerFactory, parsed: OwnerRefCache) -> None:
        self.informers = informers
        self._objects = parsed
        self._services: dict[str, list[Service]] | None = None
        self._selectors: dict[
            tuple[str, frozenset[tuple[str, str]], OwnerReference | None], LabelSelector
        ] = {}
        for kind in self.KINDS:
            informers.informer(kind).add_handler(self._on_change, replay=False)

    def _on_change(self, _change: Change[Any]) -> None:
        self._services = None
        self._selectors.clear()

    def selector(self, pod: Pod) -> LabelSelector:
        key = (pod.namespace, frozenset(pod.labels.items()), _controller(pod, self._objects))
        hit = self._selectors.get(key)
        if hit is None:
            services = self._services_by_namespace().get(pod.namespace, ())
            hit = _workload_selector(pod, self.informers, self._objects, services)
            if len(self._selectors) >= CACHE_LIMIT:
                self._selectors.clear()
            self._selectors[key] = hit
        return hit

    def _services_by_namespace(self) -> dict[str, list[Service]]:
        if self._services is None:
            grouped: dict[str, list[Service]] = {}
            for svc in _services_in_order(self.informers):
                if svc is not None and svc.selector is not None:
                    grouped.setdefault(svc.namespace, []).append(svc)
            self._services = grouped
        return self._services


def workload_selectors(informers: InformerFactory) -> WorkloadSelectors:
    """The one :class:`WorkloadSelectors` of a set of informers (made on first use)."""
    return informers.shared(WorkloadSelectors, lambda: WorkloadSelectors(informers, OwnerRefCache()))


def _controller(pod: Pod, cache: OwnerRefCache) -> OwnerReference | None:
    meta = pod.raw.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("ownerReferences"):
        return None
    refs = cache.get_refs(meta)
    return controller_of(refs) if refs is not None else None


class OwnerRefCache:
    """Parsed owner references of pods, keyed by the identity of the list (the store replaces an
    object on every update, so identity means "unchanged")."""

    def __init__(self) -> None:
        self._refs: dict[int, tuple[Any, tuple[OwnerReference, ...] | None]] = {}

    def get_refs(self, meta: Mapping[str, Any]) -> tuple[OwnerReference, ...] | None:
        raw = meta.get("ownerReferences")
        hit = self._refs.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        try:
            refs: tuple[OwnerReference, ...] | None = owner_references(meta)
        except InputError:
            refs = None
        if len(self._refs) >= CACHE_LIMIT:
            self._refs.clear()
        self._refs[id(raw)] = (raw, refs)
        return refs
