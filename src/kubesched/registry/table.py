"""The one table of served resources: each entry is a kind's strategy, in discovery order.

Serving a new kind takes a strategy module and one entry here; discovery, routing, validation,
tables, admission defaults and the garbage collector all read this table.
"""

from __future__ import annotations

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
    secret,
    service,
    serviceaccount,
)
from kubesched.registry.discovery import endpointslice
from kubesched.registry.networking import servicecidr
from kubesched.registry.policy import poddisruptionbudget
from kubesched.registry.resource import deviceclass, resourceclaim, resourceclaimtemplate, resourceslice
from kubesched.registry.scheduling import priorityclass
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
    service.STRATEGY,
    endpoints.STRATEGY,
    configmap.STRATEGY,
    secret.STRATEGY,
    serviceaccount.STRATEGY,
    persistentvolume.STRATEGY,
    persistentvolumeclaim.STRATEGY,
    priorityclass.STRATEGY,
    poddisruptionbudget.STRATEGY,
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

#: Kind → the strategy objects of that kind are served with by default (the first listed).
BY_KIND: dict[str, Strategy] = {}
for _s in STRATEGIES:
    BY_KIND.setdefault(_s.kind, _s)

#: The kinds whose objects live in a namespace (review kinds are never stored).
NAMESPACED_KINDS: frozenset[str] = frozenset(
    s.kind for s in STRATEGIES if s.resource.namespaced and "list" in s.resource.verbs
)


def versions_of(group: str) -> list[str]:
    return sorted({s.resource.version for s in STRATEGIES if s.resource.group == group})
