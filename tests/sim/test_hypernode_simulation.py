"""A hard-mode gang on a two-tier fabric, simulated: no leaf has room for the whole gang, so it
waits with Volcano's reason; once one leaf frees up, the gang goes there whole."""

from __future__ import annotations

from typing import Any

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.sim.simulation import Simulation

CONF = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "network-topology-aware"}]},
    ],
}
LEAVES, PER_LEAF, GANG = 4, 16, 16


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _hyper_node(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def _pod(name: str, *, node: str = "", group: str = "", duration: str = "") -> dict[str, Any]:
    annotations = {"kubesched.io/duration": duration} if duration else {}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]}
    if group:
        annotations["scheduling.k8s.io/group-name"] = group
        spec["schedulerName"] = "volcano"
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": spec,
    }


def fabric(blocker_seconds: dict[int, str]) -> list[dict[str, Any]]:
    """Leaves ``leaf-i`` (tier 1, nodes by name pattern) under ``spine`` (tier 2); one node of each
    leaf is taken by a pod running for ``blocker_seconds[i]`` (forever when empty); a hard-mode gang
    of 16 whole-node pods may not cross a leaf."""
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"}}
    ]
    for i in range(LEAVES):
        objs += [_node(f"leaf{i}-n{j:02d}") for j in range(PER_LEAF)]
        objs.append(
            _hyper_node(
                f"leaf-{i}", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^leaf{i}-"}}}]
            )
        )
        objs.append(_pod(f"blocker-{i}", node=f"leaf{i}-n00", duration=blocker_seconds[i]))
    objs.append(
        _hyper_node(
            "spine",
            2,
            [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"leaf-{i}"}}} for i in range(LEAVES)],
        )
    )
    objs.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": GANG, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
        }
    )
    objs += [_pod(f"train-{k:02d}", group="train") for k in range(GANG)]
    return objs


def simulate(objs: list[dict[str, Any]], horizon: float) -> Simulation:
    loaded = LoadResult()
    for i, obj in enumerate(objs):
        loaded.objects.append(ManifestObject(obj["kind"], obj, "fabric.yaml", i + 1))
    sim = Simulation(seed=1, batch_conf=batch_conf_from_dict(CONF))
    sim.load(loaded)
    sim.run(horizon)
    return sim


def _placed(sim: Simulation) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in sim.store.list("Pod")
        if p["metadata"]["name"].startswith("train-") and p["spec"].get("nodeName")
    }


def test_hard_gang_waits_for_a_whole_leaf_then_goes_there_whole() -> None:
    # The blockers never finish: the gang waits to the end, and says why.
    early = simulate(fabric(dict.fromkeys(range(LEAVES), "")), horizon=30)
    assert _placed(early) == {}
    group = early.store.get("PodGroup", "default", "train")
    conditions = {c["type"]: c for c in group["status"].get("conditions", [])}
    assert conditions["Unschedulable"]["reason"] == "NotEnoughResources"
    message = conditions["Unschedulable"]["message"]
    # Volcano's gang message: the one task left without a node in the last leaf tried, and why.
    assert message.startswith(
        "1/16 tasks in gang unschedulable: pod group is not ready, 16 Pending, 16 minAvailable; "
        "Pending: 1 Unschedulable, 15 Schedulable. Origin reason is train-"
    )
    assert ": In hyperNode leaf-3: 0/16 nodes are unavailable: 16 Insufficient cpu." in message

    # The blocker of leaf 0 finishes after a minute: the gang goes there, whole.
    later = simulate(fabric({0: "60s", 1: "", 2: "", 3: ""}), horizon=200)
    placed = _placed(later)
    assert len(placed) == GANG
    assert {node.split("-")[0] for node in placed.values()} == {"leaf0"}


def test_a_soft_gang_crosses_leaves_at_once() -> None:
    objs = fabric(dict.fromkeys(range(LEAVES), ""))
    for obj in objs:
        if obj["kind"] == "PodGroup":
            obj["spec"]["networkTopology"]["mode"] = "soft"
    placed = _placed(simulate(objs, horizon=30))
    assert len(placed) == GANG
    assert len({node.split("-")[0] for node in placed.values()}) == 2
