"""Preemption end to end: victims evicted, the preemptor nominated then bound, nominated pods'
reservations, the nominator in the queue, and what users see (evicted list, explain, messages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.cli import main
from kubesched.queue.nominator import Nominator
from kubesched.sim.simulation import Simulation


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str, priority: int, node_name: str = "", nominated: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
    }
    obj["spec"] = spec
    if nominated:
        obj["status"] = {"nominatedNodeName": nominated}
    return obj


def stored(sim: Simulation, name: str) -> dict[str, Any] | None:
    obj = sim.store.get("Pod", "default", name)
    return dict(obj) if obj is not None else None


def outcome(sim: Simulation, name: str) -> Any:
    return next(o for o in sim.scheduler.outcomes.values() if o.name == name)


def test_preemptor_evicts_nominates_then_binds() -> None:
    sim = Simulation(seed=0)
    for obj in (node("n1"), node("n2"), pod("lo-1", "3", 1, "n1"), pod("lo-2", "3", 5, "n2")):
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    created = sim.store.create(pod("hi", "3", 100))
    sched.informers.pump()
    sched.schedule_one()
    # One cycle: not bound yet, nominated where the cheapest victim was, victim gone.
    hi = stored(sim, "hi")
    assert hi is not None and hi["status"]["nominatedNodeName"] == "n1"
    assert not hi["spec"].get("nodeName")
    assert sched.queue.nominator.node_of(created["metadata"]["uid"]) == "n1"
    assert stored(sim, "lo-1") is None and stored(sim, "lo-2") is not None
    preempted = [e for e in sim.store.list("Event") if e["reason"] == "Preempted"]
    assert [(e["regarding"]["name"], e["note"], e["type"]) for e in preempted] == [
        ("lo-1", f"Preempted by pod {created['metadata']['uid']} on node n1", "Normal")
    ]
    # Then the simulation retries it after its backoff: it binds to its nominated node.
    result = sim.run()
    hi = stored(sim, "hi")
    assert hi is not None and hi["spec"]["nodeName"] == "n1"
    assert "nominatedNodeName" not in hi["status"]
    assert not sched.queue.nominator.node_of(created["metadata"]["uid"])
    assert result.evicted == ["default/lo-1"]


def test_victim_gets_disruption_target_condition_before_deletion() -> None:
    sim = Simulation(seed=0)
    watch = sim.store.watch(frozenset({"Pod"}))
    for obj in (node("n1"), pod("lo", "3", 1, "n1"), pod("hi", "3", 100)):
        sim.store.create(obj)
    sim.run()
    deleted = [e.obj for e in watch.drain() if e.type == "DELETED"]
    assert [d["metadata"]["name"] for d in deleted] == ["lo"]
    [cond] = [c for c in deleted[0]["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )


def test_nominated_pod_reserves_its_node_from_lower_priority_pods() -> None:
    sim = Simulation(seed=0)
    for obj in (node("n1"), pod("lo", "3", 1, "n1")):
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    sim.store.create(pod("hi", "3", 100))
    sched.informers.pump()
    sched.schedule_one()  # preempts lo, nominated to n1, backs off
    sched.informers.pump()  # lo's deletion reaches the cache: n1 is empty now
    sim.store.create(pod("mid", "3", 50))
    sched.informers.pump()
    sched.schedule_one()  # mid would fit n1, but hi's nomination holds it
    mid = outcome(sim, "mid")
    assert mid.status == "Unschedulable"
    assert mid.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    sim.run()
    assert outcome(sim, "hi").node == "n1"
    assert outcome(sim, "mid").status == "Unschedulable"


def test_equal_priority_pods_count_each_others_nominations() -> None:
    sim = Simulation(seed=0)
    for obj in (node("n1"), node("n2"), pod("lo-1", "3", 1, "n1"), pod("lo-2", "3", 1, "n2")):
        sim.store.create(obj)
    for name in ("hi-1", "hi-2"):
        sim.store.create(pod(name, "3", 100))
    result = sim.run()
    # The second preemptor does not pick the node the first one is nominated to.
    assert sorted(result.evicted) == ["default/lo-1", "default/lo-2"]
    assert {outcome(sim, "hi-1").node, outcome(sim, "hi-2").node} == {"n1", "n2"}


def test_lower_priority_nominations_on_the_node_are_cleared() -> None:
    sim = Simulation(seed=0)
    for obj in (node("n1"), pod("lo", "3", 1, "n1"), pod("lo-small", "1", 1, "n1")):
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    mid = sim.store.create(pod("mid", "3", 50))
    sched.informers.pump()
    sched.schedule_one()  # mid preempts lo and is nominated to n1
    assert sched.queue.nominator.node_of(mid["metadata"]["uid"]) == "n1"
    sched.informers.pump()
    sim.store.create(pod("big", "4", 100))
    sched.informers.pump()
    sched.schedule_one()  # big needs all of n1: it evicts lo-small, and mid may no longer fit there
    assert sched.queue.nominator.node_of(mid["metadata"]["uid"]) == ""
    mid_obj = stored(sim, "mid")
    assert mid_obj is not None and "nominatedNodeName" not in mid_obj["status"]


def test_pod_tries_its_nominated_node_first() -> None:
    sim = Simulation(seed=0)
    # n1 would score higher (emptier), but the pod arrives nominated to n2 and fits there.
    for obj in (node("n1", cpu="8"), node("n2"), pod("p", "1", 0, nominated="n2")):
        sim.store.create(obj)
    sim.run()
    assert outcome(sim, "p").node == "n2"


def test_nominator_keeps_one_node_per_pod() -> None:
    def mk(name: str, priority: int) -> Pod:
        return Pod.from_dict(
            {"metadata": {"name": name, "uid": name}, "spec": pod(name, "1", priority)["spec"]}
        )

    n = Nominator()
    a, b = mk("a", 1), mk("b", 2)
    n.add(a, "n1")
    n.add(b, "n1")
    assert [p.name for p in n.pods_for_node("n1")] == ["a", "b"]
    n.add(a, "n2")  # re-nominated elsewhere
    assert [p.name for p in n.pods_for_node("n1")] == ["b"] and n.node_of("a") == "n2"
    n.add(b, "")  # cleared
    assert n.pods_for_node("n1") == [] and len(n) == 1
    n.delete("a")
    assert len(n) == 0 and list(n.nodes()) == []


def test_queue_nominates_from_status_and_forgets_deleted_pods() -> None:
    sim = Simulation(seed=0)
    created = sim.store.create(pod("p", "1", 0, nominated="n9"))
    sim.informers.pump()
    uid = created["metadata"]["uid"]
    assert sim.scheduler.queue.nominator.node_of(uid) == "n9"
    sim.store.delete("Pod", "default", "p")
    sim.informers.pump()
    assert sim.scheduler.queue.nominator.node_of(uid) == ""


def test_cli_json_lists_evictions_and_explain_records_preemption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), pod("lo", "3", 1, "n1"), pod("hi", "3", 100)]))
    assert main(["simulate", str(path), "-o", "json", "--explain"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evicted"] == ["default/lo"]
    hi, lo = doc["pods"]
    assert lo["name"] == "lo" and lo["status"] == "Evicted" and lo["node"] == "n1"
    assert hi["node"] == "n1" and hi["status"] == "Scheduled"
    assert hi["preemption"] == {"nominatedNode": "n1", "victims": ["default/lo"]}
    assert main(["simulate", str(path)]) == 0
    assert "1 evicted: default/lo" in capsys.readouterr().out


def _with_claim(obj: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """``obj`` using its own claim, pre-bound to its own EBS CSI volume."""
    obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pv-{claim}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{claim}"},
                "claimRef": {"namespace": "default", "name": claim},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": f"pv-{claim}",
            },
        },
        obj,
    ]


@pytest.mark.parametrize("limit", [None, 1], ids=["no-csinode", "csinode-limit-1"])
def test_a_nomination_holds_the_node_for_pods_with_volumes(limit: int | None) -> None:
    """A nominated pod's resources and volumes count on its node for pods of lower priority, with
    the volume plugins in play: with no CSINode limit the nominated pods are counted in the table's
    columns, with one (the volume counts too) node by node."""
    sim = Simulation(seed=0)
    objs: list[dict[str, Any]] = [node("n1"), pod("lo", "3", 1, "n1")]
    if limit is not None:
        objs.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": "n1"},
                "spec": {
                    "drivers": [{"name": "ebs.csi.aws.com", "nodeID": "n1", "allocatable": {"count": limit}}]
                },
            }
        )
    for obj in objs:
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    for obj in _with_claim(pod("hi", "3", 100), "hi-data"):
        sim.store.create(obj)
    sched.informers.pump()
    sched.schedule_one()  # preempts lo, nominated to n1, backs off
    sched.informers.pump()
    # 1 CPU fits beside hi's 3; its volume fits only where no limit counts hi's.
    for obj in _with_claim(pod("mid", "1" if limit else "3", 50), "mid-data"):
        sim.store.create(obj)
    sched.informers.pump()
    sched.schedule_one()
    mid = outcome(sim, "mid")
    assert mid.status == "Unschedulable"
    reason = "1 node(s) exceed max volume count" if limit else "1 Insufficient cpu"
    assert mid.message.startswith(f"0/1 nodes are available: {reason}."), mid.message
    sim.run()
    assert outcome(sim, "hi").node == "n1"
    assert outcome(sim, "mid").status == "Unschedulable"
