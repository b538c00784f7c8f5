"""What the extender and plugin tests of ``serve`` and ``run`` share: the verbs their HTTP extender
answers with and the in-process Filter plugin, so that both places are tested with the same ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.plugins import api


def node_names(args: dict[str, Any]) -> list[str]:
    """The candidate nodes of an ExtenderArgs, whether sent as names or as Node objects."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"]]


def outside_zones_filter(args: dict[str, Any]) -> dict[str, Any]:
    """Filter verb: ``n0`` is outside the allowed zones, and a pod named ``blocked*`` fits nowhere."""
    names = node_names(args)
    blocked = args["Pod"]["metadata"]["name"].startswith("blocked")
    kept = [] if blocked else [n for n in names if n != "n0"]
    failed = {n: "node(s) are outside the allowed zones" for n in names if n not in kept}
    return {"NodeNames": kept, "FailedNodes": failed, "Error": ""}


def prefer_n2(args: dict[str, Any]) -> list[dict[str, Any]]:
    """Prioritize verb: ``n2`` scores 10, every other node 0."""
    return [{"Host": n, "Score": 10 if n == "n2" else 0} for n in node_names(args)]


def binding_of(args: dict[str, Any]) -> dict[str, Any]:
    """The Binding a binding extender posts for the ExtenderBindingArgs it was sent, as a real one
    does to the API server it knows."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"], "uid": args["PodUID"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]},
    }


def failing_filter(broken: dict[str, bool]) -> Callable[[dict[str, Any]], Any]:
    """Filter verb answering 500 for pods named ``bad*`` while ``broken["on"]``, keeping every
    node otherwise."""

    def filter_(args: dict[str, Any]) -> Any:
        if broken["on"] and args["Pod"]["metadata"]["name"].startswith("bad"):
            return 500, b"internal error"
        return {"NodeNames": node_names(args), "FailedNodes": {}, "Error": ""}

    return filter_


class AvoidSlow:
    """A per-node Filter plugin registered in-process: nodes labelled ``tier: slow`` are refused."""

    name = "AvoidSlow"

    def filter(self, state: api.CycleState, pod: api.Pod, info: api.NodeInfo) -> api.Status | None:
        assert info.node is not None
        if info.node.labels.get("tier") == "slow":
            return api.Status.unschedulable("node(s) are slow")
        return None
