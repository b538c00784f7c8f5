"""The capacity plugin, end to end through the batch scheduler: cases of Volcano's
``plugins/capacity/capacity_test.go`` (same pods, nodes, queues and expectations, case names
verbatim), plus the hierarchy and the conf rules.

As in Volcano's test, the tier enables only the switches the test names (every other switch off).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.resources import CPU, MEMORY, PODS
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.operations import Op
from kubesched.batch.plugins.capacity import CapacityAttr
from kubesched.batch.session import Session
from kubesched.batch.shares import ResourceSpace, Vector
from kubesched.batch.statement import Statement
from kubesched.batch.testing import node, plugin, pod, pod_group, queue, scheduler_on
from kubesched.cli import main
from kubesched.registry.admission import admitted

NS = "ns1"


def q(
    name: str, deserved: dict[str, str] | None, capability: dict[str, str] | None, **kw: Any
) -> dict[str, Any]:
    """Volcano's ``BuildQueueWithResourcesQuantity(name, deserved, capability)``."""
    spec: dict[str, Any] = {}
    if deserved:
        spec["deserved"] = deserved
    if capability:
        spec["capability"] = capability
    return queue(name, **spec, **kw)


def p(name: str, node_name: str, group: str, cpu: str, mem: str, **kw: Any) -> dict[str, Any]:
    selector = kw.pop("selector", None)
    d = pod(name, node_name, group, cpu, mem, ns=NS, **kw)
    if selector:
        d["spec"]["nodeSelector"] = selector
    return d


def pg(name: str, queue_name: str, phase: str, min_member: int = 1) -> dict[str, Any]:
    return pod_group(name, queue_name, min_member, phase, ns=NS)


def worker(name: str, cpu: str, mem: str) -> dict[str, Any]:
    d = node(name, cpu, mem)
    d["metadata"]["labels"] = {"selector": "worker"}
    return d


def outcome(objects: list[dict[str, Any]], actions: str, plugins: list[dict[str, Any]]) -> dict[str, Any]:
    """Binds, committed pipelines (job → node) and evictions of one session."""
    pipelined: list[tuple[str, str]] = []
    commit = Statement.commit

    def recording_commit(self: Statement) -> None:
        pipelined.extend((o.task.job, o.task.node_name) for o in self.operations if o.op is Op.PIPELINE)
        commit(self)

    sched = scheduler_on(objects, {"actions": actions, "tiers": [{"plugins": plugins}]})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Statement, "commit", recording_commit)
        ssn = sched.run_session()
    assert isinstance(ssn, Session)
    binds = {f"{t.pod.namespace}/{t.pod.name}": t.node_name for t in ssn.to_bind}
    return {"binds": binds, "pipelined": sorted(pipelined), "evicted": sorted(sched.evicted)}


TIER = [
    plugin("capacity", "allocatable", "preemptive", "reclaimable", "queue_order"),
    plugin("predicates", "predicate"),
    plugin("gang", "job_starving"),
]

CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    (
        "case0: Pod allocatable when queue has not exceed capability",
        [
            worker("n1", "2", "4Gi"),
            node("n2", "2", "4Gi"),
            p("p1", "n1", "pg1", "1", "1Gi"),
            p("p2", "", "pg2", "1", "1Gi", selector={"selector": "worker"}),
            pg("pg1", "q1", "Running"),
            pg("pg2", "q1", "Inqueue"),
            q("q1", None, {"cpu": "2", "memory": "2Gi"}),
        ],
        {"binds": {"ns1/p2": "n1"}, "pipelined": [], "evicted": []},
    ),
    (
        "case1: Pod not allocatable when queue exceed queue capability",
        [
            worker("n1", "2", "4Gi"),
            node("n2", "2", "4Gi"),
            p("p3", "n1", "pg3", "1", "1Gi"),
            p("p4", "", "pg4", "1", "1Gi"),
            pg("pg3", "q2", "Running"),
            pg("pg4", "q2", "Inqueue"),
            q("q2", None, {"cpu": "1.5", "memory": "1.5Gi"}),
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case2: Can reclaim from other queues when allocated < deserved",
        [
            worker("n1", "2", "4Gi"),
            node("n2", "2", "4Gi"),
            p("p5", "n1", "pg5", "2", "4Gi", preemptable="false"),
            p("p6", "n2", "pg5", "2", "4Gi"),
            p("p7", "", "pg6", "2", "4Gi"),
            pg("pg5", "q3", "Running"),
            pg("pg6", "q4", "Inqueue"),
            q("q3", {"cpu": "2", "memory": "4Gi"}, None),
            q("q4", {"cpu": "2", "memory": "4Gi"}, None),
        ],
        {"binds": {}, "pipelined": [("ns1/pg6", "n2")], "evicted": ["ns1/p6"]},
    ),
    (
        "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        [
            node("n5", "2", "4Gi"),
            node("n6", "2", "4Gi"),
            p("p13", "n5", "pg10", "2", "4Gi"),
            p("p14", "", "pg11", "2", "4Gi"),
            p("p15", "", "pg12", "2", "4Gi"),
            pg("pg10", "q7", "Running"),
            pg("pg11", "q8", "Inqueue"),
            pg("pg12", "q9", "Inqueue"),
            q("q7", None, {"cpu": "2", "memory": "4Gi"}, priority=5),
            q("q8", None, {"cpu": "2", "memory": "4Gi"}, priority=1),
            q("q9", None, {"cpu": "2", "memory": "4Gi"}, priority=10),
        ],
        {"binds": {"ns1/p15": "n6"}, "pipelined": [], "evicted": []},
    ),
    (
        "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
        [
            worker("n1", "2", "4Gi"),
            p("p16", "n1", "pg16", "1", "3Gi"),
            p("p17", "", "pg17", "1", "1Gi"),
            p("p18", "n1", "pg18", "1", "1Gi"),
            pg("pg16", "q10", "Running"),
            pg("pg17", "q10", "Inqueue"),
            pg("pg18", "q11", "Running"),
            q("q10", {"cpu": "2", "memory": "2Gi"}, {"cpu": "4", "memory": "4Gi"}),
            q("q11", {"cpu": "0", "memory": "0Gi"}, {"cpu": "2", "memory": "2Gi"}),
        ],
        {"binds": {}, "pipelined": [("ns1/pg17", "n1")], "evicted": ["ns1/p18"]},
    ),
    (
        "case6: Can not reclaim from other queues when allocated + req > deserved",
        [
            worker("n1", "2", "4Gi"),
            p("p19", "n1", "pg19", "1", "1Gi"),
            p("p20", "", "pg20", "1", "2Gi"),
            p("p21", "n1", "pg21", "1", "1Gi"),
            pg("pg19", "q12", "Running"),
            pg("pg20", "q12", "Inqueue"),
            pg("pg21", "q13", "Running"),
            q("q12", {"cpu": "1", "memory": "2Gi"}, {"cpu": "4", "memory": "4Gi"}),
            q("q13", {"cpu": "0", "memory": "0Gi"}, {"cpu": "2", "memory": "2Gi"}),
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability",
        [
            node("n9", "8", "100Gi"),
            node("n10", "8", "100Gi"),
            p("p33", "n9", "pg33", "7", "90Gi"),
            p("p34", "", "pg34", "2", "5Gi"),
            p("p35", "n10", "pg35", "2", "5Gi"),
            pg("pg33", "queue21", "Running"),
            pg("pg34", "queue21", "Inqueue"),
            pg("pg35", "queue22", "Running"),
            q("queue21", {"cpu": "8", "memory": "100Gi"}, {"cpu": "8", "memory": "100Gi"}),
            q("queue22", None, {"cpu": "2", "memory": "5Gi"}),
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
]


def sp(name: str, node_name: str, group: str, requests: dict[str, str], **kw: Any) -> dict[str, Any]:
    """A pod asking for ``requests`` (Volcano's ``BuildResourceList`` with scalar resources; a zero
    cpu or memory is still written, as Volcano's builder does)."""
    d = p(name, node_name, group, requests.get("cpu"), requests.get("memory"), **kw)
    d["spec"]["containers"][0]["resources"] = {"requests": dict(requests)}
    return d


def sn(name: str, allocatable: dict[str, str]) -> dict[str, Any]:
    d = node(name, allocatable["cpu"], allocatable["memory"], pods=allocatable.get("pods", "10"))
    d["status"]["allocatable"] = d["status"]["capacity"] = dict(
        allocatable, pods=allocatable.get("pods", "10")
    )
    return d


A100 = "nvidia.com/A100"
GPU = "nvidia.com/gpu"

CASES += [
    (
        "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not "
        "request CPU & Memory, reclaim should happen",
        [
            sn("n3", {"cpu": "2", "memory": "4Gi", A100: "10"}),
            sn("n4", {"cpu": "2", "memory": "4Gi", A100: "10"}),
            sp("p8", "n3", "pg7", {"cpu": "0", "memory": "0Gi", A100: "10"}, preemptable="false"),
            sp("p9", "n4", "pg7", {"cpu": "0", "memory": "0Gi", A100: "10"}),
            p("p10", "n3", "pg8", "2", "4Gi"),
            p("p11", "n4", "pg8", "2", "4Gi"),
            sp("p12", "", "pg9", {"cpu": "0", "memory": "0Gi", A100: "10"}),
            pg("pg7", "q5", "Running"),
            pg("pg8", "q6", "Running"),
            pg("pg9", "q6", "Inqueue"),
            q("q5", {"cpu": "2", "memory": "4Gi", A100: "10"}, None),
            q("q6", {"cpu": "2", "memory": "4Gi", A100: "10"}, None),
        ],
        {"binds": {}, "pipelined": [("ns1/pg9", "n4")], "evicted": ["ns1/p9"]},
    ),
    (
        "case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
        [
            sn("n7", {"cpu": "4", "memory": "8Gi", GPU: "4"}),
            p("p22", "n7", "pg22", "2", "4Gi"),
            sp("p23", "n7", "pg23", {"cpu": "0", "memory": "0Gi", GPU: "1"}),
            sp("p24", "n7", "pg24", {"cpu": "2", "memory": "1Gi", GPU: "1"}),
            sp("p25", "", "pg25", {"cpu": "2", "memory": "3Gi", GPU: "1"}),
            pg("pg22", "queue14", "Running"),
            pg("pg23", "queue15", "Running"),
            pg("pg24", "queue16", "Running"),
            pg("pg25", "queue16", "Inqueue"),
            q("queue14", {"cpu": "2", "memory": "4Gi", GPU: "2"}, None),
            q("queue15", None, None),
            q("queue16", {"cpu": "2", "memory": "4Gi", GPU: "2"}, None),
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case8: reclaimer dimensions are considered properly while evicting reclaimees",
        [
            sn("n8", {"cpu": "4", "memory": "8Gi", GPU: "1"}),
            p("p26", "n8", "pg26", "0", "4Gi"),
            p("p27", "n8", "pg27", "1", "0Gi"),
            sp("p28", "n8", "pg28", {"cpu": "0", "memory": "0Gi", GPU: "1"}),
            p("p29", "n8", "pg29", "2", "4Gi"),
            sp("p30", "", "pg30", {"cpu": "1", "memory": "0Gi", GPU: "1"}),
            pg("pg26", "queue17", "Running"),
            pg("pg27", "queue17", "Running"),
            pg("pg28", "queue17", "Running"),
            pg("pg29", "queue18", "Running"),
            pg("pg30", "queue18", "Inqueue"),
            q("queue17", {"cpu": "2", "memory": "2Gi"}, None),
            q("queue18", {"cpu": "2", "memory": "4Gi", GPU: "1"}, None),
        ],
        {"binds": {}, "pipelined": [("ns1/pg30", "n8")], "evicted": ["ns1/p28"]},
    ),
    (
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on "
        "cpu/memory",
        [
            sn("n8", {"cpu": "4", "memory": "8Gi", GPU: "1"}),
            sp("p31", "n8", "pg31", {"cpu": "4", "memory": "4Gi", GPU: "1"}),
            p("p32", "", "pg32", "1", "1Gi"),
            pg("pg31", "queue19", "Running"),
            pg("pg32", "queue20", "Inqueue"),
            q("queue19", {GPU: "1"}, None),
            q("queue20", {"cpu": "2", "memory": "2Gi"}, None),
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
]


@pytest.mark.parametrize(("objects", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_capacity_without_hierarchy(objects: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert outcome(objects, "allocate, reclaim", TIER) == expected


def with_min(group: dict[str, Any], cpu: str, mem: str) -> dict[str, Any]:
    group["spec"]["minResources"] = {"cpu": cpu, "memory": mem}
    return group


ENQUEUE_TIER = [plugin("capacity", "allocatable", "preemptive", "overused", "job_enqueued")]


def _enqueue_objects(*names: str) -> list[dict[str, Any]]:
    pods = {
        "pod1": p("pod1", "n1", "pg1", "1", "3G"),
        "pod2": p("pod2", "n2", "pg2", "3", "1G"),
        "pod3": p("pod3", "", "pg3", "1", "0G"),
        "pod4": p("pod4", "", "pg4", "0", "1G"),
        "pod5": p("pod5", "", "pg5", "1", "1G"),
        "pod6": p("pod6", "", "pg6", "1", "1G"),
    }
    groups = {
        "pg1": with_min(pg("pg1", "q1", "Running"), "1", "3G"),
        "pg2": with_min(pg("pg2", "q2", "Running"), "3", "1G"),
        "pg3": with_min(pg("pg3", "q1", "Pending"), "1", "0G"),
        "pg4": with_min(pg("pg4", "q2", "Pending"), "0", "1G"),
        "pg5": with_min(pg("pg5", "q1", "Pending"), "1", "1G"),
        "pg6": with_min(pg("pg6", "q3", "Pending"), "1", "1G"),
    }
    queues = {
        "q1": q("q1", {"cpu": "2", "memory": "2G"}, {"cpu": "2", "memory": "2G"}),
        "q2": q("q2", {"cpu": "2", "memory": "2G"}, {"cpu": "3", "memory": "3G"}),
        "q3": q("q3", None, {"cpu": "3", "memory": "3G"}, state="Closed"),
    }
    table = pods | groups | queues
    return [node("n1", "3", "3G"), node("n2", "3", "3G"), *(table[n] for n in names)]


ENQUEUE_CASES: list[tuple[str, list[dict[str, Any]], dict[str, str]]] = [
    (
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        _enqueue_objects("pod1", "pod2", "pod3", "pg1", "pg2", "pg3", "q1", "q2"),
        {"ns1/pod3": "n1"},
    ),
    (
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        _enqueue_objects("pod1", "pod2", "pod4", "pg1", "pg2", "pg4", "q1", "q2"),
        {"ns1/pod4": "n2"},
    ),
    (
        "case2: exceed capacity, can not enqueue",
        _enqueue_objects("pod1", "pod2", "pod5", "pg1", "pg2", "pg5", "q1", "q2"),
        {},
    ),
    (
        "case4: queue with non-open state, can not enqueue",
        _enqueue_objects("pod6", "pg6", "q3"),
        {},
    ),
]


@pytest.mark.parametrize(
    ("objects", "binds"), [c[1:] for c in ENQUEUE_CASES], ids=[c[0] for c in ENQUEUE_CASES]
)
def test_enqueue_and_allocatable(objects: list[dict[str, Any]], binds: dict[str, str]) -> None:
    assert outcome(objects, "enqueue, allocate", ENQUEUE_TIER)["binds"] == binds


# -- hierarchy ---------------------------------------------------------------------------------- #

HIERARCHY_TIER = [
    plugin(
        "capacity", "allocatable", "preemptive", "reclaimable", "queue_order", "hierarchy", "job_enqueued"
    ),
    plugin("predicates", "predicate"),
    plugin("gang", "job_starving"),
]


def hq(
    name: str, parent: str, deserved: dict[str, str] | None, capability: dict[str, str] | None
) -> dict[str, Any]:
    """Volcano's ``buildQueueWithParents(name, parent, deserved, capability)``."""
    d = q(name, deserved, capability)
    if parent:
        d["spec"]["parent"] = parent
    return d


def _res(cpu: str, mem: str, pods: str | None = None) -> dict[str, str]:
    out = {"cpu": cpu, "memory": mem}
    if pods is not None:
        out["pods"] = pods
    return out


ROOT = hq("root", "", None, None)
Q1 = hq("q1", "root", None, _res("4", "4Gi"))
Q2 = hq("q2", "root", None, _res("4", "4Gi"))
Q11 = hq("q11", "q1", None, _res("1", "1Gi"))
Q12 = hq("q12", "q1", None, _res("3", "3Gi"))
Q3 = hq("q3", "root", _res("4", "4Gi", "10"), _res("4", "4Gi", "10"))
Q4 = hq("q4", "root", _res("2", "2Gi", "1"), _res("4", "4Gi", "4"))
Q31 = hq("q31", "q3", _res("2", "2Gi", "2"), _res("4", "4Gi", "4"))
Q32 = hq("q32", "q3", _res("2", "2Gi", "2"), _res("4", "4Gi", "4"))
Q33 = hq("q33", "q3", _res("0", "0Gi", "2"), _res("4", "4Gi", "4"))
Q5 = hq("q5", "root", None, {"memory": "4Gi"})
Q51 = hq("q51", "q5", None, {"memory": "2Gi"})
Q6 = hq("q6", "root", None, _res("2", "4Gi"))
Q61 = hq("q61", "q6", None, None)
Q62 = hq("q62", "q6", None, None)
N1 = node("n1", "8", "8Gi", pods="11")

HIERARCHY_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    (
        "case0: Pod allocatable when queue is leaf queue",
        [N1, p("p1", "", "pg1", "1", "1Gi"), pg("pg1", "q11", "Inqueue"), ROOT, Q1, Q2, Q11, Q12],
        {"binds": {"ns1/p1": "n1"}, "pipelined": [], "evicted": []},
    ),
    (
        "case1: Pod not allocatable when queue is not leaf queue",
        [N1, p("p2", "", "pg2", "1", "1Gi"), pg("pg2", "q1", "Pending"), ROOT, Q1, Q2, Q11, Q12],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case2: Pod allocatable when queue has not exceed capability",
        [
            N1,
            p("p3", "", "pg3", "2", "2Gi"),
            p("p4", "", "pg3", "2", "2Gi"),
            pg("pg3", "q31", "Inqueue", min_member=2),
            ROOT,
            Q3,
            Q4,
            Q31,
            Q32,
        ],
        {"binds": {"ns1/p3": "n1", "ns1/p4": "n1"}, "pipelined": [], "evicted": []},
    ),
    (
        "case3: Can reclaim from other queues when allocated < deserved",
        [
            N1,
            p("p5", "n1", "pg4", "4", "4Gi"),
            p("p6", "n1", "pg5", "2", "2Gi", preemptable="false"),
            p("p7", "n1", "pg5", "2", "2Gi"),
            p("p8", "", "pg6", "2", "2Gi"),
            pg("pg4", "q4", "Running"),
            pg("pg5", "q31", "Running"),
            pg("pg6", "q32", "Inqueue"),
            ROOT,
            Q3,
            Q31,
            Q32,
            Q4,
        ],
        {"binds": {}, "pipelined": [("ns1/pg6", "n1")], "evicted": ["ns1/p7"]},
    ),
    (
        "case4: Pod is not allocatable when ancestor queue's real capability not enough",
        [
            N1,
            p("p6", "n1", "pg5", "2", "2Gi", preemptable="false"),
            p("p9", "n1", "pg7", "2", "2Gi"),
            p("p10", "", "pg8", "3", "3Gi"),
            pg("pg5", "q31", "Running"),
            pg("pg7", "q32", "Running"),
            pg("pg8", "q33", "Inqueue"),
            ROOT,
            Q3,
            Q31,
            Q32,
            Q33,
        ],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case5: If the capability cpu or memory is not specified, "
        "the value should be inherited from parent queue",
        [N1, p("p11", "", "pg9", "1", None), pg("pg9", "q51", "Running"), ROOT, Q5, Q51],
        {"binds": {"ns1/p11": "n1"}, "pipelined": [], "evicted": []},
    ),
]


GPU_NODE = sn("n-gpu", {"cpu": "8", "memory": "8Gi", GPU: "8"})
N2 = sn("n2", {"cpu": "8", "memory": "8Gi", GPU: "8", "hugepages-1Gi": "0"})
N3 = sn("n3", {"cpu": "16", "memory": "16Gi", "nvidia.com/a100": "5", "rdma/hca": "1001", "pods": "11"})
ROOT2 = hq("root", "", {"cpu": "16", "memory": "16Gi", "nvidia.com/a100": "4", "rdma": "1000"}, None)
A100_HCA = {"cpu": "1", "memory": "1Gi", "nvidia.com/a100": "2", "rdma/hca": "1"}

HIERARCHY_CASES += [
    (
        "case8: When the queue's deserved value has a scalar resource set, the check can pass",
        [
            GPU_NODE,
            sp("p12", "", "pg12", {"cpu": "2", "memory": "2Gi", GPU: "1"}),
            pg("pg12", "q81", "Inqueue"),
            ROOT,
            hq("q8", "root", {"cpu": "4", "memory": "4Gi", GPU: "8"}, None),
            hq("q81", "q8", {"cpu": "2", "memory": "2Gi", GPU: "4"}, None),
            hq("q82", "q8", {"cpu": "2", "memory": "2Gi", GPU: "4"}, None),
        ],
        {"binds": {"ns1/p12": "n-gpu"}, "pipelined": [], "evicted": []},
    ),
    (
        "case9: When some scalar resources are 0 in deserved, the check can still pass",
        [
            N2,
            sp("p13", "", "pg13", {"cpu": "2", "memory": "2Gi", GPU: "1"}),
            pg("pg13", "q91", "Inqueue"),
            ROOT,
            hq("q9", "root", {"cpu": "2", "memory": "2Gi", GPU: "8", "hugepages-1Gi": "0"}, None),
            hq("q91", "q9", {"cpu": "2", "memory": "2Gi", GPU: "4", "hugepages-1Gi": "0"}, None),
        ],
        {"binds": {"ns1/p13": "n2"}, "pipelined": [], "evicted": []},
    ),
    (
        "case11: If the capability scalar resources is not specified, the value should be inherited "
        "from parent queue",
        [
            N2,
            sp("p14", "", "pg14", {"cpu": "1", "memory": "1Gi", GPU: "4"}),
            sp("p15", "", "pg15", {"cpu": "1", "memory": "1Gi", GPU: "4"}),
            pg("pg14", "case11_queue11", "Inqueue"),
            pg("pg15", "case11_queue12", "Inqueue"),
            ROOT,
            hq("case11_queue1", "root", None, None),
            hq("case11_queue11", "case11_queue1", None, {"cpu": "4", "memory": "4Gi", GPU: "4"}),
            hq("case11_queue12", "case11_queue1", None, {"cpu": "4", "memory": "4Gi", GPU: "4"}),
        ],
        {"binds": {"ns1/p14": "n2", "ns1/p15": "n2"}, "pipelined": [], "evicted": []},
    ),
    (
        "case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension",
        [
            N3,
            sp("p16", "", "pg16", A100_HCA),
            sp("p17", "n3", "pg17", A100_HCA),
            sp("p18", "n3", "pg18", A100_HCA, preemptable="false"),
            pg("pg16", "case12_queue11", "Inqueue"),
            pg("pg17", "case12_queue12", "Running"),
            pg("pg18", "case12_queue12", "Running"),
            ROOT2,
            hq("case12_queue1", "root", {"nvidia.com/a100": "2"}, None),
            hq("case12_queue11", "case12_queue1", {"nvidia.com/a100": "2"}, None),
            hq("case12_queue12", "case12_queue1", None, None),
        ],
        {"binds": {}, "pipelined": [("ns1/pg16", "n3")], "evicted": ["ns1/p17"]},
    ),
]


Q7 = hq("q7", "root", None, _res("6", "4Gi"))
Q71 = hq("q71", "q7", None, _res("6", "4Gi"))
Q72 = hq("q72", "q7", None, _res("6", "4Gi"))
for _q in (Q71, Q72):
    _q["spec"]["guarantee"] = {"resource": _res("4", "3Gi")}

HIERARCHY_CASES += [
    (
        "case7: the sum of sub queue 71 and 72's guarantee exceeds the capacity of queue7, but should "
        "not panic",
        [N1, ROOT, Q7, Q71, Q72],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
    (
        "case10: root queue's capability > cluster total resource, but should not panic",
        [N1, hq("root", "", None, _res("16", "16Gi")), hq("q10", "root", None, _res("10", "4Gi"))],
        {"binds": {}, "pipelined": [], "evicted": []},
    ),
]


@pytest.mark.parametrize(
    ("objects", "expected"), [c[1:] for c in HIERARCHY_CASES], ids=[c[0] for c in HIERARCHY_CASES]
)
def test_capacity_with_hierarchy(objects: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert outcome(objects, "enqueue, reclaim, allocate", HIERARCHY_TIER) == expected


def test_capacity_with_hierarchy_case6_enqueue_checks_every_ancestor() -> None:
    """case6: podgroup can't be enqueued when any ancestor queue's capability is not enough.

    Each group has one pending pod (kubesched's sessions hold PodGroups that have pods), and only
    enqueue runs, so the phases are the enqueue verdicts."""
    objects = [
        N1,
        with_min(pg("pg10", "q61", "Pending"), "2", "4Gi"),
        with_min(pg("pg11", "q62", "Pending"), "2", "4Gi"),
        p("p10", "", "pg10", "2", "4Gi"),
        p("p11", "", "pg11", "2", "4Gi"),
        ROOT,
        Q6,
        Q61,
        Q62,
    ]
    sched = scheduler_on(objects, {"actions": "enqueue", "tiers": [{"plugins": HIERARCHY_TIER}]})
    sched.run_session()
    phases = {g["metadata"]["name"]: g["status"]["phase"] for g in sched.informers.store.list("PodGroup")}
    assert phases == {"pg10": "Inqueue", "pg11": "Pending"}


# -- Volcano's Test_capacityPlugin_AncestorReclaimScenarios ------------------------------------- #

A100 = "nvidia.com/a100"
HCA = "rdma/hca"
ONE_A100 = {"cpu": "1", "memory": "1Gi", A100: "1", HCA: "1"}
N_A100 = sn("n1", {"cpu": "16", "memory": "16Gi", A100: "4", HCA: "1001", "pods": "11"})
N_SMALL = node("n1", "2", "2Gi")


def ancestor_tier(level: int, with_priority: bool) -> list[dict[str, Any]]:
    capacity = plugin(
        "capacity", "allocatable", "preemptive", "reclaimable", "queue_order", "hierarchy", "job_enqueued"
    )
    capacity["arguments"] = {"ancestorReclaimLevel": level}
    tier = [capacity, plugin("predicates", "predicate"), plugin("gang", "job_starving")]
    if with_priority:
        tier.append(plugin("priority", "job_order", "task_order"))
    return tier


def project_tree() -> list[dict[str, Any]]:
    return [
        ROOT2,
        hq("project1_root", "root", {A100: "1"}, {A100: "2"}),
        hq("project1_non-preemptable", "project1_root", {A100: "1"}, {A100: "1"}),
        hq("project1_preemptable", "project1_root", None, None),
        hq("project2_root", "root", {A100: "3"}, {A100: "4"}),
        hq("project2_non-preemptable", "project2_root", {A100: "3"}, {A100: "3"}),
        hq("project2_preemptable", "project2_root", None, None),
    ]


def level_tree() -> list[dict[str, Any]]:
    return [
        ROOT,
        hq("grand-a", "root", _res("2", "2Gi"), _res("4", "4Gi")),
        hq("parent-a", "grand-a", _res("2", "2Gi"), _res("2", "2Gi")),
        hq("queue-a", "parent-a", _res("2", "2Gi"), _res("2", "2Gi")),
        hq("grand-b", "root", _res("3", "3Gi"), _res("4", "4Gi")),
        hq("parent-b", "grand-b", _res("1", "1Gi"), _res("2", "2Gi")),
        hq("queue-b", "parent-b", _res("1", "1Gi"), _res("2", "2Gi")),
    ]


def victim_and_reclaimer(victim_queue: str, reclaimer_queue: str) -> list[dict[str, Any]]:
    return [
        p("p-victim", "n1", "pg-victim", "2", "2Gi"),
        p("p-reclaimer", "", "pg-reclaimer", "2", "2Gi"),
        pg("pg-victim", victim_queue, "Running"),
        pg("pg-reclaimer", reclaimer_queue, "Inqueue"),
    ]


NOTHING = {"binds": {}, "pipelined": [], "evicted": []}

# (name, ancestorReclaimLevel, with priority, objects, expected)
ANCESTOR_CASES: list[tuple[str, int, bool, list[dict[str, Any]], dict[str, Any]]] = [
    (
        "case1: Can reclaim based on parent deserved when ancestorReclaimLevel is 1",
        1,
        True,
        [
            N_A100,
            ROOT2,
            hq("case1_queue1", "root", {A100: "1"}, None),
            hq("case1_queue11", "case1_queue1", None, None),
            hq("case1_queue2", "root", None, None),
            pg("pg1", "case1_queue2", "Running"),
            pg("pg2", "case1_queue11", "Inqueue"),
            sp("p1", "n1", "pg1", {"cpu": "1", "memory": "1Gi", A100: "4", HCA: "1"}),
            sp("p2", "", "pg2", ONE_A100),
        ],
        {"binds": {}, "pipelined": [("ns1/pg2", "n1")], "evicted": ["ns1/p1"]},
    ),
    (
        "case2: Cross-parent reclaim pipelines project1 pending job when project2 child and parent are "
        "both over deserved",
        1,
        True,
        [
            N_A100,
            *project_tree(),
            *(pg(f"pg{i}", "project2_preemptable", "Running") for i in range(1, 5)),
            pg("pg5", "project1_preemptable", "Pending"),
            sp("p1", "n1", "pg1", ONE_A100, priority=2),
            sp("p2", "n1", "pg2", ONE_A100, priority=2),
            sp("p3", "n1", "pg3", ONE_A100, priority=2),
            sp("p4", "n1", "pg4", ONE_A100, priority=1),
            sp("p5", "", "pg5", ONE_A100),
        ],
        {"binds": {}, "pipelined": [("ns1/pg5", "n1")], "evicted": ["ns1/p4"]},
    ),
    (
        "case3: Cross-parent reclaim can evict sibling-queue victim first",
        1,
        True,
        [
            N_A100,
            *project_tree(),
            *(pg(f"pg{i}", "project2_preemptable", "Running") for i in range(1, 4)),
            pg("pg4_reclaimed", "project2_preemptable", "Inqueue"),
            pg("pg5_pipelined", "project1_preemptable", "Running"),
            pg("pg6", "project2_non-preemptable", "Pending"),
            sp("p1", "n1", "pg1", ONE_A100, priority=2),
            sp("p2", "n1", "pg2", ONE_A100, priority=2),
            sp("p3", "n1", "pg3", ONE_A100, priority=2),
            sp("p4", "", "pg4_reclaimed", ONE_A100),
            sp("p5", "n1", "pg5_pipelined", ONE_A100),
            sp("p6", "", "pg6", ONE_A100),
        ],
        {"binds": {}, "pipelined": [("ns1/pg6", "n1")], "evicted": ["ns1/p3"]},
    ),
    (
        "case4: Cross-parent reclaim is blocked when victim child is not over deserved",
        1,
        True,
        [
            sn("n1", {"cpu": "8", "memory": "8Gi", A100: "1", HCA: "1001", "pods": "11"}),
            ROOT2,
            hq("case4_parent1", "root", {A100: "1"}, None),
            hq("case4_child1", "case4_parent1", {A100: "1"}, None),
            hq("case4_child1_sibling", "case4_parent1", None, None),
            hq("case4_parent2", "root", {A100: "1"}, None),
            hq("case4_child2", "case4_parent2", {A100: "1"}, None),
            pg("pg1", "case4_child1", "Running"),
            pg("pg2", "case4_child2", "Pending"),
            pg("pg3", "case4_child1_sibling", "Running"),
            sp("p1", "n1", "pg1", ONE_A100),
            sp("p2", "", "pg2", ONE_A100),
            sp("p3", "n1", "pg3", ONE_A100, preemptable="false"),
        ],
        NOTHING,
    ),
    (
        "case5: level 0 allows reclaim based on leaf-level deserved checks",
        0,
        False,
        [N_SMALL, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
        {"binds": {}, "pipelined": [("ns1/pg-reclaimer", "n1")], "evicted": ["ns1/p-victim"]},
    ),
    (
        "case6: level 1 allows reclaim when parent-level check passes",
        1,
        False,
        [N_SMALL, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
        {"binds": {}, "pipelined": [("ns1/pg-reclaimer", "n1")], "evicted": ["ns1/p-victim"]},
    ),
    (
        "case7: level 2 blocks reclaim when grandparent-level check fails",
        2,
        False,
        [N_SMALL, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
        NOTHING,
    ),
    (
        "case8: level 1 blocks sibling reclaim when leaf deserved is unset and no ancestor gate applies",
        1,
        False,
        [
            N_SMALL,
            ROOT,
            hq("parent", "root", _res("4", "4Gi"), _res("4", "4Gi")),
            hq("queue-a", "parent", None, None),
            hq("queue-b", "parent", None, None),
            *victim_and_reclaimer("queue-b", "queue-a"),
        ],
        NOTHING,
    ),
    (
        "case9: level 2 blocks reclaim when leaf deserved is unset and queues share grandparent",
        2,
        False,
        [
            N_SMALL,
            ROOT,
            hq("grand", "root", _res("2", "2Gi"), _res("2", "2Gi")),
            hq("parent-a", "grand", None, None),
            hq("queue-a", "parent-a", None, None),
            hq("parent-b", "grand", None, None),
            hq("queue-b", "parent-b", None, None),
            *victim_and_reclaimer("queue-b", "queue-a"),
        ],
        NOTHING,
    ),
    (
        "case10: level 2 blocks reclaim in unbalanced shared-grandparent tree when leaf deserved is unset",
        2,
        False,
        [
            N_SMALL,
            ROOT,
            hq("grand", "root", _res("1", "1Gi"), _res("2", "2Gi")),
            hq("parent-deep", "grand", _res("1", "1Gi"), _res("2", "2Gi")),
            hq("queue-deep", "parent-deep", None, None),
            hq("queue-shallow", "grand", None, None),
            *victim_and_reclaimer("queue-deep", "queue-shallow"),
        ],
        NOTHING,
    ),
    (
        "case11: unbalanced level2 blocks reclaim when depth-2 ancestor is not over deserved",
        2,
        False,
        [
            sn("n1", {"cpu": "4", "memory": "4Gi", "pods": "10", A100: "2"}),
            ROOT,
            hq("shallow-parent", "root", {A100: "1"}, None),
            hq("queue-shallow", "shallow-parent", {A100: "1"}, None),
            hq("deep-grand", "root", {A100: "2"}, None),
            hq("deep-parent", "deep-grand", {A100: "1"}, None),
            hq("queue-deep", "deep-parent", {A100: "1"}, None),
            sp("p-victim", "n1", "pg-victim", {"cpu": "1", "memory": "1Gi", A100: "2"}),
            sp("p-reclaimer", "", "pg-reclaimer", {"cpu": "1", "memory": "1Gi", A100: "1"}),
            pg("pg-victim", "queue-deep", "Running"),
            pg("pg-reclaimer", "queue-shallow", "Inqueue"),
        ],
        NOTHING,
    ),
]


@pytest.mark.parametrize(
    ("level", "with_priority", "objects", "expected"),
    [c[1:] for c in ANCESTOR_CASES],
    ids=[c[0] for c in ANCESTOR_CASES],
)
def test_capacity_ancestor_reclaim(
    level: int, with_priority: bool, objects: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    assert outcome(objects, "enqueue, reclaim, allocate", ancestor_tier(level, with_priority)) == expected


# -- Volcano's Test_updateQueueAttrShare -------------------------------------------------------- #

GI = 2**30
SHARE_SPACE = ResourceSpace((CPU, MEMORY, PODS))


def res(cpu: float, mem_gi: float) -> Vector:
    return SHARE_SPACE.from_dict({CPU: cpu * 1000, MEMORY: mem_gi * GI})


EMPTY = SHARE_SPACE.zeros()

# (name, deserved, allocated, request, share)
SHARE_CASES: list[tuple[str, Vector, Vector, Vector, float]] = [
    ("best-effort queue with allocated resources", EMPTY, res(1, 1), EMPTY, 1.0),
    ("best-effort queue with pending requests only (no allocated)", EMPTY, EMPTY, res(1, 1), 1.0),
    ("best-effort queue with both allocated and request", EMPTY, res(1, 1), res(0.5, 0.5), 1.0),
    ("best-effort queue completely idle", EMPTY, EMPTY, EMPTY, 1.0),
    ("queue with deserved but no allocated", res(2, 2), EMPTY, EMPTY, 0.0),
    ("queue with deserved, allocated < deserved (CPU dimension)", res(2, 2), res(1, 1), EMPTY, 0.5),
    ("queue with deserved, allocated = deserved", res(2, 2), res(2, 2), EMPTY, 1.0),
    ("queue with deserved, allocated > deserved (CPU dimension)", res(2, 2), res(3, 2), EMPTY, 1.5),
    ("queue with deserved, memory is dominant resource", res(2, 4), res(1, 3), EMPTY, 0.75),
    ("queue with deserved, CPU is dominant resource", res(2, 4), res(1.5, 2), EMPTY, 0.75),
    ("queue with deserved, allocated exceeds on both dimensions", res(2, 2), res(3, 3), EMPTY, 1.5),
    (
        "queue with deserved, request should not affect share calculation",
        res(2, 2),
        res(1, 1),
        res(1, 1),
        0.5,
    ),
    ("queue with deserved but zero values", res(0, 0), res(1, 1), EMPTY, 1.0),
    ("queue with deserved, allocated is zero", res(2, 2), res(0, 0), EMPTY, 0.0),
    ("best-effort queue with only CPU allocated", EMPTY, res(1, 0), EMPTY, 1.0),
    ("best-effort queue with only memory allocated", EMPTY, res(0, 1), EMPTY, 1.0),
    ("best-effort queue with only CPU request (no allocated)", EMPTY, EMPTY, res(1, 0), 1.0),
]


@pytest.mark.parametrize(
    ("deserved", "allocated", "requested", "share"),
    [c[1:] for c in SHARE_CASES],
    ids=[c[0] for c in SHARE_CASES],
)
def test_capacity_queue_share(deserved: Vector, allocated: Vector, requested: Vector, share: float) -> None:
    zero = SHARE_SPACE.zeros()
    attr = CapacityAttr(
        "test-queue",
        deserved.copy(),
        allocated.copy(),
        requested.copy(),
        zero,
        zero,
        zero,
        zero,
        zero,
        pods=2,
    )
    attr.update_share()
    assert attr.share == share


def test_a_queue_owed_only_pods_is_best_effort() -> None:
    """Volcano counts a queue whose deserved names nothing but ``pods`` as owed nothing."""
    zero = SHARE_SPACE.zeros()
    deserved = SHARE_SPACE.from_dict({PODS: 10})
    attr = CapacityAttr(
        "q", deserved, SHARE_SPACE.from_dict({PODS: 2}), zero, zero, zero, zero, zero, zero, pods=2
    )
    attr.update_share()
    assert attr.share == 1.0


# -- Volcano's Test_buildHierarchicalQueueAttrs_nilSafety and double-counting regression -------- #

NIL_SAFETY_TIER = [
    plugin("capacity", "allocatable", "reclaimable", "queue_order", "hierarchy", "job_enqueued"),
    plugin("predicates", "predicate"),
    plugin("gang", "job_starving"),
]
N4 = node("n1", "4", "4Gi")
NIL_SAFETY_CASES: list[tuple[str, list[dict[str, Any]]]] = [
    ("no-panic when root queue is absent (empty ssn.Queues)", [N4]),
    (
        "no-panic when job references a deleted queue",
        [N4, ROOT, p("orphan", "", "pg-orphan", "1", "1Gi"), pg("pg-orphan", "deleted-queue", "Inqueue")],
    ),
]


@pytest.mark.parametrize("objects", [c[1] for c in NIL_SAFETY_CASES], ids=[c[0] for c in NIL_SAFETY_CASES])
def test_capacity_hierarchy_without_the_queues_it_names(objects: list[dict[str, Any]]) -> None:
    assert outcome(objects, "allocate", NIL_SAFETY_TIER) == NOTHING


def test_no_double_counting_for_inqueue_job_with_binding_tasks() -> None:
    """Volcano's TestNoDoubleCountingForInqueueJobWithBindingTasks (capacity): a gang bound in one
    session while its PodGroup is still Inqueue reserves nothing more in the next, so a one-cpu job
    still fits the queue's four."""
    objects = [
        node("n1", "4", "8Gi"),
        q("q1", None, _res("4", "8Gi")),
        with_min(pg("pgA", "q1", "Inqueue", min_member=3), "3", "3Gi"),
        *(p(f"pA{i}", "", "pgA", "1", "1Gi") for i in (1, 2, 3)),
    ]
    tier = [plugin("capacity", "allocatable", "overused", "job_enqueued")]
    sched = scheduler_on(objects, {"actions": "allocate", "tiers": [{"plugins": tier}]})
    sched.run_session()
    store = sched.informers.store
    assert all(store.get("Pod", NS, f"pA{i}")["spec"].get("nodeName") == "n1" for i in (1, 2, 3))
    sched.conf = batch_conf_from_dict({"actions": "enqueue, allocate", "tiers": [{"plugins": tier}]})
    store.create(admitted(store, with_min(pg("pgB", "q1", "Pending"), "1", "1Gi")))
    store.create(admitted(store, p("pB1", "", "pgB", "1", "1Gi")))
    sched.informers.pump()
    sched.run_session()
    assert store.get("Pod", NS, "pB1")["spec"].get("nodeName") == "n1"


def test_queue_report_shows_the_tree_with_subtree_totals() -> None:
    """The queue report lists the tree depth first; a parent reports its children's totals."""
    objects = [
        N1,
        ROOT, Q3, Q31, Q32, Q4,
        p("p5", "n1", "pg4", "4", "4Gi"),
        p("p7", "n1", "pg5", "2", "2Gi"),
        p("p9", "n1", "pg7", "1", "1Gi"),
        pg("pg4", "q4", "Running"),
        pg("pg5", "q31", "Running"),
        pg("pg7", "q32", "Running"),
    ]  # fmt: skip
    sched = scheduler_on(objects, {"actions": "allocate", "tiers": [{"plugins": HIERARCHY_TIER}]})
    sched.run_session()
    rows = [(r.name, r.depth, r.parent, r.allocated.get("cpu"), r.bound) for r in sched.queue_report_list()]
    assert rows == [
        ("root", 0, "", 7000, 3),
        ("default", 1, "root", None, 0),
        ("q3", 1, "root", 3000, 2),
        ("q31", 2, "q3", 2000, 1),
        ("q32", 2, "q3", 1000, 1),
        ("q4", 1, "root", 4000, 1),
    ]
    q3 = next(r for r in sched.queue_report_list() if r.name == "q3")
    assert q3.deserved == {"cpu": 4000, "memory": 4 * 2**30}


def test_a_job_in_a_parent_queue_stops_the_hierarchy() -> None:
    """Jobs may only live in leaf queues: otherwise the session allocates nothing, anywhere."""
    leaf_job = [N1, ROOT, Q1, Q11, p("p1", "", "pg1", "1", "1Gi"), pg("pg1", "q11", "Inqueue")]
    parent_job = [p("p2", "", "pg2", "1", "1Gi"), pg("pg2", "q1", "Inqueue")]
    assert outcome(leaf_job, "allocate", HIERARCHY_TIER)["binds"] == {"ns1/p1": "n1"}
    assert outcome(leaf_job + parent_job, "allocate", HIERARCHY_TIER)["binds"] == {}


def test_hierarchy_example(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/batch-hierarchy with capacity-hierarchy.conf: train borrows beyond its deserved but
    eng's capability (12 cpu) caps train and infer together; parents show their subtree."""
    root = Path(__file__).resolve().parents[2] / "examples" / "batch"
    code = main(
        [
            "simulate",
            str(root.parent / "batch-hierarchy"),
            "--batch-conf",
            str(root / "capacity-hierarchy.conf"),
            "-o",
            "json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    queues = {q["name"]: q for q in doc["queues"]}
    assert queues["eng"]["allocated"]["cpu"] == 12000 and queues["eng"]["parent"] == "root"
    assert queues["train"]["allocated"]["cpu"] == 10000 and queues["train"]["parent"] == "eng"
    assert queues["root"]["allocated"]["cpu"] == 14000 and "parent" not in queues["root"]


# -- capacity beside proportion ---------------------------------------------------------------- #


def _two_weighted_queues() -> list[dict[str, Any]]:
    """q1 (weight 1) and q2 (weight 3) both want the whole 4-cpu node: proportion owes q1 1 cpu;
    capacity, with no capability set, lets either queue take the node."""
    return [
        node("n1", "4", "8Gi"),
        queue("q1", 1, deserved={"cpu": "3", "memory": "3Gi"}),
        queue("q2", 3),
        pg("big", "q1", "Inqueue"),
        p("big-0", "", "big", "2", "1Gi"),
        pg("rest", "q2", "Inqueue"),
        *(p(f"rest-{i}", "", "rest", "1", "1Gi") for i in range(4)),
    ]


@pytest.mark.parametrize(
    ("plugins", "big_bound"),
    [
        (["capacity"], True),
        (["proportion"], False),
        (["proportion", "capacity"], False),
        (["capacity", "proportion"], False),
    ],
)
def test_beside_proportion_a_task_must_be_allocatable_to_both(plugins: list[str], big_bound: bool) -> None:
    tier = [plugin(name, "allocatable", "queue_order") for name in plugins]
    sched = scheduler_on(_two_weighted_queues(), {"actions": "allocate", "tiers": [{"plugins": tier}]})
    sched.run_session()
    node_name = sched.informers.store.get("Pod", NS, "big-0")["spec"].get("nodeName")
    assert bool(node_name) is big_bound


@pytest.mark.parametrize(
    ("order", "q1_deserved_cpu"), [(["proportion", "capacity"], 3000), (["capacity", "proportion"], 1000)]
)
def test_beside_proportion_the_report_shows_the_later_plugins_deserved(
    order: list[str], q1_deserved_cpu: int
) -> None:
    """capacity reads q1's deserved from its spec (3 cpu); proportion shares the node by weight (1)."""
    tier = [plugin(name, "allocatable", "queue_order") for name in order]
    sched = scheduler_on(_two_weighted_queues(), {"actions": "allocate", "tiers": [{"plugins": tier}]})
    sched.run_session()
    q1 = next(r for r in sched.queue_report_list() if r.name == "q1")
    assert q1.deserved["cpu"] == q1_deserved_cpu


# -- invariants --------------------------------------------------------------------------------- #

_LEAVES = ("a1", "a2", "b")
_PARENT = {"a": "root", "b": "root", "a1": "a", "a2": "a"}


@settings(max_examples=25, deadline=None)
@given(
    caps=st.fixed_dictionaries({name: st.none() | st.integers(1, 10) for name in _PARENT}),
    jobs=st.lists(st.tuples(st.sampled_from(_LEAVES), st.integers(1, 3), st.integers(1, 3)), max_size=6),
)
def test_no_queue_of_the_tree_holds_more_than_its_capability(
    caps: dict[str, int | None], jobs: list[tuple[str, int, int]]
) -> None:
    """Whatever the capabilities, what allocate places in a queue's subtree stays within the
    queue's cpu capability and every ancestor's."""
    objects: list[dict[str, Any]] = [node("n1", "8", "32Gi"), node("n2", "8", "32Gi"), ROOT]
    for name, parent in _PARENT.items():
        cap = caps[name]
        objects.append(hq(name, parent, None, {"cpu": str(cap)} if cap else None))
    for i, (leaf, cpu, count) in enumerate(jobs):
        objects.append(pg(f"j{i}", leaf, "Inqueue"))
        objects += [p(f"j{i}-{k}", "", f"j{i}", str(cpu), "1Gi") for k in range(count)]
    placed = outcome(objects, "allocate", HIERARCHY_TIER)["binds"]
    cpu_of = {f"ns1/j{i}-{k}": cpu for i, (_, cpu, count) in enumerate(jobs) for k in range(count)}
    leaf_of = {f"ns1/j{i}-{k}": leaf for i, (leaf, _, count) in enumerate(jobs) for k in range(count)}
    held = dict.fromkeys(_PARENT, 0)
    for pod_name in placed:
        queue_name = leaf_of[pod_name]
        while queue_name != "root":
            held[queue_name] += cpu_of[pod_name]
            queue_name = _PARENT[queue_name]
    for name in caps:
        limits = [c for q_ in (name, *_ancestor_names(name)) if (c := caps.get(q_)) is not None]
        assert held[name] <= min(limits, default=16), (name, held, caps)


def _ancestor_names(name: str) -> list[str]:
    out = []
    while (name := _PARENT.get(name, "root")) != "root":
        out.append(name)
    return out
