"""Discovery documents (APIResourceList, APIGroup, APIGroupList) built from the registry's table."""

from __future__ import annotations

from kubesched.registry.table import served_groups, served_strategies, versions_of

#: The pod subresources served by the kubelet, with their kinds and verbs as upstream lists them.
_POD_STREAMS = {
    "attach": ("PodAttachOptions", ("create", "get")),
    "exec": ("PodExecOptions", ("create", "get")),
    "log": ("Pod", ("get",)),
    "portforward": ("PodPortForwardOptions", ("create", "get")),
}

#: The pod subresources served by the kubelet, with their kinds and verbs as upstream lists them.
_POD_STREAMS = {
    "attach": ("PodAttachOptions", ("create", "get")),
    "exec": ("PodExecOptions", ("create", "get")),
    "log": ("Pod", ("get",)),
    "portforward": ("PodPortForwardOptions", ("create", "get")),
}


def api_resource_list(group: str, version: str) -> dict[str, object]:
    """The APIResourceList discovery document of one group version."""
    items: list[dict[str, object]] = []
    for strategy in served_strategies(group, version).values():
        r = strategy.resource
        entry: dict[str, object] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
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
            elif sub in _POD_STREAMS:
                kind, verbs = _POD_STREAMS[sub]
                items.append(
                    {
                        "name": f"pods/{sub}",
                        "singularName": "",
                        "namespaced": True,
                        "kind": kind,
                        "verbs": list(verbs),
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
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(g) for g in served_groups()]}
