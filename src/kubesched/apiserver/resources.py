"""The resources the API server serves, with what discovery says about each."""

from __future__ import annotations

from dataclasses import dataclass

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def status_subresource(self) -> bool:
        return "status" in self.subresources


_ALL = ("all",)

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), ("status",)),
    Resource("", "v1", "nodes", "node", "Node", False, ("no",), ("status",)),
    Resource("", "v1", "pods", "pod", "Pod", True, ("po",), ("status", "binding", "eviction"), _ALL),
    Resource("", "v1", "events", "event", "Event", True, ("ev",)),
    Resource("", "v1", "services", "service", "Service", True, ("svc",), ("status",), _ALL),
    Resource("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",)),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", False, ("pc",)),
    Resource(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        ("status",),
    ),
    Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease", True),
    Resource(
        "apps", "v1", "deployments", "deployment", "Deployment", True, ("deploy",), ("status", "scale"), _ALL
    ),
    Resource(
        "apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, ("rs",), ("status", "scale"), _ALL
    ),
    Resource(
        "apps", "v1", "statefulsets", "statefulset", "StatefulSet", True, ("sts",), ("status", "scale"), _ALL
    ),
    Resource("batch", "v1", "jobs", "job", "Job", True, (), ("status",), _ALL),
    Resource("events.k8s.io", "v1", "events", "event", "Event", True, ("ev",)),
    Resource(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "podgroup",
        "PodGroup",
        True,
        ("pg", "podgroup-v1beta1"),
        ("status",),
    ),
    Resource(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "queue",
        "Queue",
        False,
        ("q", "queue-v1beta1"),
        ("status",),
    ),
)

#: (group, version) → plural → resource.
BY_GROUP_VERSION: dict[tuple[str, str], dict[str, Resource]] = {}
for _r in RESOURCES:
    BY_GROUP_VERSION.setdefault((_r.group, _r.version), {})[_r.plural] = _r

#: Groups in discovery order (the legacy core group is served under /api).
GROUPS: list[str] = []
for _r in RESOURCES:
    if _r.group and _r.group not in GROUPS:
        GROUPS.append(_r.group)

#: Kind → the resource objects of that kind are served as by default (the first listed).
BY_KIND: dict[str, Resource] = {}
for _r in RESOURCES:
    BY_KIND.setdefault(_r.kind, _r)


def versions_of(group: str) -> list[str]:
    return sorted({r.version for r in RESOURCES if r.group == group})


def api_resource_list(group: str, version: str) -> dict[str, object]:
    """The APIResourceList discovery document of one group version."""
    items: list[dict[str, object]] = []
    for r in BY_GROUP_VERSION[(group, version)].values():
        entry: dict[str, object] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        items.append(entry)
        for sub in r.subresources:
            if sub == "status":
                items.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "scale":
                items.append(
                    {
                        "name": f"{r.plural}/scale",
                        "singularName": "",
                        "namespaced": True,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
            elif sub == "binding":
                items.append(
                    {
                        "name": "pods/binding",
                        "singularName": "",
                        "namespaced": True,
                        "kind": "Binding",
                        "verbs": ["create"],
                    }
                )
            elif sub == "eviction":
                items.append(
                    {
                        "name": "pods/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def api_group(group: str) -> dict[str, object]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions_of(group)]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def api_group_list() -> dict[str, object]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(g) for g in GROUPS]}
