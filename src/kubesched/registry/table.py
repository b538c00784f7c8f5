"""The one table of served resources: each entry is a kind's strategy, in discovery order.

Serving a new kind takes a strategy module and one entry here; discovery, routing, validation,
tables, admission defaults and the garbage collector all read this table.
"""

from __future__ import annotations

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.registry.apiregistration import apiservice
from kubesched.registry.apps import controllerrevision, daemonset, deployment, replicaset, statefulset
from kubesched.registry.authentication import selfsubjectreview, tokenreview
from kubesched.registry.authorization import (
    selfsubjectaccessreview,
    selfsubjectrulesreview,
    subjectaccessreview,
)
from kubesched.registry.batch import cronjob, job
from kubesched.registry.coordination import lease
from kubesched.registry.core import (
    configmap,
    endpoints,
    event,
    namespace,
    node,
    persistentvolume,
    persistentvolumeclaim,
    pod,
    replicationcontroller,
    secret,
    service,
    serviceaccount,
)
from kubesched.registry.discovery import endpointslice
from kubesched.registry.networking import servicecidr
from kubesched.registry.policy import poddisruptionbudget
from kubesched.registry.rbac import bindings as rbac_bindings
from kubesched.registry.rbac import roles as rbac_roles
from kubesched.registry.resource import deviceclass, resourceclaim, resourceclaimtemplate, resourceslice
from kubesched.registry.scheduling import podgroup as scheduling_podgroup
from kubesched.registry.scheduling import priorityclass, workload
from kubesched.registry.storage import (
    csidriver,
    csinode,
    csistoragecapacity,
    storageclass,
    volumeattachment,
)
from kubesched.registry.strategy import Strategy
from kubesched.registry.topology import hypernode
from kubesched.registry.volcano import podgroup, queue

STRATEGIES: tuple[Strategy, ...] = (
    namespace.STRATEGY,
    node.STRATEGY,
    pod.STRATEGY,
    event.STRATEGY,
    replicationcontroller.STRATEGY,
    service.STRATEGY,
    endpoints.STRATEGY,
    configmap.STRATEGY,
    secret.STRATEGY,
    serviceaccount.STRATEGY,
    persistentvolume.STRATEGY,
    persistentvolumeclaim.STRATEGY,
    apiservice.STRATEGY,
    priorityclass.STRATEGY,
    workload.STRATEGY,
    scheduling_podgroup.STRATEGY,
    poddisruptionbudget.STRATEGY,
    rbac_roles.CLUSTER_ROLE,
    rbac_roles.ROLE,
    rbac_bindings.CLUSTER_ROLE_BINDING,
    rbac_bindings.ROLE_BINDING,
    lease.STRATEGY,
    deployment.STRATEGY,
    replicaset.STRATEGY,
    statefulset.STRATEGY,
    daemonset.STRATEGY,
    controllerrevision.STRATEGY,
    job.STRATEGY,
    cronjob.STRATEGY,
    selfsubjectreview.STRATEGY,
    selfsubjectaccessreview.STRATEGY,
    selfsubjectrulesreview.STRATEGY,
    tokenreview.STRATEGY,
    subjectaccessreview.STRATEGY,
    storageclass.STRATEGY,
    csidriver.STRATEGY,
    csinode.STRATEGY,
    csistoragecapacity.STRATEGY,
    volumeattachment.STRATEGY,
    deviceclass.STRATEGY,
    resourceclaim.STRATEGY,
    resourceclaimtemplate.STRATEGY,
    resourceslice.STRATEGY,
    servicecidr.STRATEGY,
    endpointslice.STRATEGY,
    event.EVENTS_V1,
    podgroup.STRATEGY,
    queue.STRATEGY,
    hypernode.STRATEGY,
)

#: (group, version) → plural → strategy.
BY_GROUP_VERSION: dict[tuple[str, str], dict[str, Strategy]] = {}
for _s in STRATEGIES:
    BY_GROUP_VERSION.setdefault((_s.resource.group, _s.resource.version), {})[_s.resource.plural] = _s

#: Groups in discovery order (the legacy core group is served under /api).
GROUPS: list[str] = []
for _s in STRATEGIES:
    if _s.resource.group and _s.resource.group not in GROUPS:
        GROUPS.append(_s.resource.group)

#: Store kind → the strategy objects of that kind are served with by default (the first listed).
BY_KIND: dict[str, Strategy] = {}
for _s in STRATEGIES:
    BY_KIND.setdefault(_s.store_kind, _s)

#: The store kinds whose objects live in a namespace (review kinds are never stored).
NAMESPACED_KINDS: frozenset[str] = frozenset(
    s.store_kind for s in STRATEGIES if s.resource.namespaced and "list" in s.resource.verbs
)


class _Served:
    """The table as the feature gates of one generation leave it (every request reads it)."""

    def __init__(self) -> None:
        self.generation = DEFAULT_FEATURE_GATES.generation
        self.by_group_version: dict[tuple[str, str], dict[str, Strategy]] = {}
        for gv, strategies in BY_GROUP_VERSION.items():
            served = {p: s for p, s in strategies.items() if s.served()}
            if served:
                self.by_group_version[gv] = served
        self.versions: dict[str, list[str]] = {}
        for group, version in self.by_group_version:
            self.versions.setdefault(group, []).append(version)
        for versions in self.versions.values():
            versions.sort()
        self.groups = [g for g in GROUPS if g in self.versions]


_served = _Served()


def _table() -> _Served:
    global _served
    if _served.generation != DEFAULT_FEATURE_GATES.generation:
        _served = _Served()
    return _served


def served_strategies(group: str, version: str) -> dict[str, Strategy]:
    """Plural → strategy of the resources a group version serves now (feature gates applied)."""
    return _table().by_group_version.get((group, version), {})


def served_groups() -> list[str]:
    """The groups with a resource served now, in discovery order."""
    return _table().groups


def versions_of(group: str) -> list[str]:
    """The versions of ``group`` with a resource served now."""
    return _table().versions.get(group, [])
