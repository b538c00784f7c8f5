"""Simulation metrics over virtual time, on small scenarios whose numbers are worked out by hand."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.errors import InputError
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.samples import parse_reasons, percentiles, time_weighted_mean
from kubesched.sim.simulation import Simulation


def node(name: str, cpu: str, gpu: int = 0, labels: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"allocatable": alloc}}


def pod(
    name: str,
    cpu: str,
    *,
    gpu: int = 0,
    arrival: str | None = None,
    duration: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    ann = dict(annotations or {})
    if arrival is not None:
        ann["kubesched.io/arrival"] = arrival
    if duration is not None:
        ann["kubesched.io/duration"] = duration
    requests = {"cpu": cpu}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": ann},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}]},
    }


def simulate(
    objs: list[dict[str, Any]], recorder: MetricsRecorder | None = None, seed: int = 0
) -> Simulation:
    sim = Simulation(seed=seed, metrics=recorder)
    sim.load(LoadResult([ManifestObject(o["kind"], o, "test.yaml", i + 1) for i, o in enumerate(objs)]))
    sim.run()
    return sim


def two_nodes_three_pods() -> list[dict[str, Any]]:
    """n1: 2 CPU / 4 GPU, n2: 2 CPU / 2 GPU.

    t=0   a (2 CPU, 3 GPU, runs 100s) → n1 (the only node with 3 free GPUs)
    t=10  b (1 CPU, 2 GPU, runs 50s)  → n2
    t=20  c (2 CPU, 2 GPU, runs 30s)  waits: n1 has no CPU left, n2 1 CPU
    t=60  b finishes → c → n2 (latency 40s)
    t=90  c finishes; t=100 a finishes.
    """
    return [
        node("n1", "2", gpu=4, labels={"kubesched.io/pool": "big"}),
        node("n2", "2", gpu=2, labels={"kubesched.io/pool": "small"}),
        pod("a", "2", gpu=3, duration="100s"),
        pod("b", "1", gpu=2, arrival="10s", duration="50s"),
        pod("c", "2", gpu=2, arrival="20s", duration="30s"),
    ]


def at(rec: MetricsRecorder, column: str, t: float) -> float:
    """The value a step series holds at time t."""
    times = rec.series.array("time")
    i = int(np.searchsorted(times, t, side="right")) - 1
    return float(rec.series.array(column)[i])


def test_hand_computed_series() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    assert rec.series.columns["time"] == [0.0, 10.0, 20.0, 60.0, 90.0, 100.0]
    assert rec.series.columns["pending"] == [0, 0, 1, 0, 0, 0]
    assert rec.series.columns["running"] == [1, 2, 2, 2, 1, 0]
    assert rec.series.columns["completed"] == [0, 0, 0, 1, 2, 3]
    # cpu: a 2 of 4; +b 3 of 4; c replaces b at 60: 4 of 4; a alone; nothing.
    assert rec.series.columns["alloc.cpu"] == [0.5, 0.75, 0.75, 1.0, 0.5, 0.0]
    assert rec.series.columns["alloc.nvidia.com/gpu"] == pytest.approx([3 / 6, 5 / 6, 5 / 6, 5 / 6, 3 / 6, 0])
    # per pool: n1 (big) holds a throughout; n2 (small) holds b then c
    assert at(rec, "alloc.nvidia.com/gpu[big]", 50) == 0.75
    assert at(rec, "alloc.cpu[small]", 15) == 0.5
    assert at(rec, "alloc.cpu[small]", 70) == 1.0
    assert rec.pool_label == "kubesched.io/pool"


def test_hand_computed_latency_jct_makespan() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    latencies = {r.name: r.latency for r in rec.pods.values()}
    assert latencies == {"a": 0.0, "b": 0.0, "c": 40.0}
    assert sorted(rec.job_completion_times().tolist()) == [50.0, 70.0, 100.0]
    assert rec.makespan() == 100.0
    summary = rec.summary()
    assert summary["latencyP50"] == 0.0
    assert summary["latencyP90"] == pytest.approx(32.0)  # linear: 0 + 0.8 * 40
    assert summary["jctP50"] == 70.0
    assert summary["completed"] == 3 and summary["neverScheduled"] == 0
    # pending: 1 pod during [20, 60) of 100s
    assert summary["pendingMean"] == pytest.approx(0.4)
    assert summary["allocMean.cpu"] == pytest.approx((0.5 * 10 + 0.75 * 50 + 1.0 * 30 + 0.5 * 10) / 100)


def test_gpu_fragmentation_counts_free_gpus_too_small_for_the_smallest_pending_request() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    # At t=20 c (2 GPUs) waits; n1 has 1 free GPU (< 2): unusable; n2 has none free.
    frag = rec.series.columns["gpu_frag.nvidia.com/gpu"]
    assert frag == [0, 0, 1, 0, 0, 0]
    assert rec.series.columns["gpu_frag_ratio.nvidia.com/gpu"][2] == 1.0


def test_fragmentation_ignores_free_gpus_big_enough() -> None:
    # One pending 2-GPU pod (blocked by CPU), one node with 1 free GPU and one with 3 free.
    rec = MetricsRecorder()
    simulate(
        [
            node("n1", "1", gpu=2),
            node("n2", "1", gpu=4),
            pod("x", "1", gpu=1),  # → n1 or n2; both end with cpu full
            pod("y", "1", gpu=1),
            pod("z", "1", gpu=2, arrival="1s"),  # no CPU anywhere: waits
        ],
        rec,
    )
    free = {"n1": 2, "n2": 4}
    for r in rec.pods.values():
        if r.node is not None:
            free[r.node] -= r.requests["nvidia.com/gpu"]
    expected = sum(f for f in free.values() if 0 < f < 2)
    assert rec.series.columns["gpu_frag.nvidia.com/gpu"][-1] == expected
    assert rec.series.columns["gpu_frag_ratio.nvidia.com/gpu"][-1] == pytest.approx(
        expected / sum(free.values())
    )


def test_arrived_gpu_workload_is_the_running_sum_of_arrived_requests() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    # 6 GPUs in all; a (3) at 0, b (2) at 10, c (2) at 20: arrived never falls when pods finish,
    # while allocation does (and c waits at 20, so allocation lags arrived from then on).
    assert rec.series.columns["arrived.nvidia.com/gpu"] == pytest.approx(
        [3 / 6, 5 / 6, 7 / 6, 7 / 6, 7 / 6, 7 / 6]
    )
    assert rec.series.columns["alloc.nvidia.com/gpu"] == pytest.approx([3 / 6, 5 / 6, 5 / 6, 5 / 6, 3 / 6, 0])
    assert "arrived.cpu" not in rec.series.columns  # GPU resources only


def test_unschedulable_reasons_histogram() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    assert rec.reasons == {"Insufficient cpu": 1, "Insufficient nvidia.com/gpu": 1}
    assert not rec.final_reasons()  # c was placed in the end


def test_final_reasons_of_pods_left_waiting() -> None:
    rec = MetricsRecorder()
    simulate([node("n1", "1"), pod("big", "2")], rec)
    assert rec.final_reasons() == {"Insufficient cpu": 1}
    assert rec.summary()["neverScheduled"] == 1


@pytest.mark.parametrize(
    ("message", "phrases"),
    [
        (
            "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) had untolerated taint(s).",
            ["Insufficient cpu", "node(s) had untolerated taint(s)"],
        ),
        (
            "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate,"
            " preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod.",
            ["Insufficient nvidia.com/gpu"],
        ),
        ("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.", None),
        ("no nodes available to schedule pods", ["no nodes available to schedule pods"]),
        ("", []),
    ],
)
def test_parse_reasons(message: str, phrases: list[str] | None) -> None:
    if phrases is None:  # a PreFilter message is one phrase
        phrases = ["pod has unbound immediate PersistentVolumeClaims"]
    assert parse_reasons(message) == phrases


def test_gang_job_completion_time_spans_first_arrival_to_last_completion() -> None:
    group = {"scheduling.k8s.io/group-name": "job1"}
    rec = MetricsRecorder()
    simulate(
        [
            node("n1", "4"),
            pod("w0", "1", duration="30s", annotations=group),
            pod("w1", "1", arrival="5s", duration="60s", annotations=group),
            pod("solo", "1", arrival="10s", duration="20s"),
        ],
        rec,
    )
    # job1: w0 arrives at 0, w1 finishes at 65; solo: 20s.
    assert sorted(rec.job_completion_times().tolist()) == [20.0, 65.0]


def test_sample_every_records_the_state_on_a_virtual_grid() -> None:
    rec = MetricsRecorder(sample_every=25)
    simulate(two_nodes_three_pods(), rec)
    assert rec.series.columns["time"] == [0.0, 25.0, 50.0, 75.0, 100.0]
    # 0: a; 25 and 50: a+b (state since 20); 75: a+c (since 60); 100: the end.
    assert rec.series.columns["alloc.cpu"] == [0.5, 0.75, 0.75, 1.0, 0.0]
    assert rec.series.columns["pending"] == [0, 1, 1, 0, 0]


def test_sample_every_must_be_positive() -> None:
    with pytest.raises(InputError) as err:
        MetricsRecorder(sample_every=0)
    assert err.value.field == "sample_every"


def test_explicit_pool_label_and_nodes_without_it() -> None:
    rec = MetricsRecorder(pool_label="zone")
    simulate(
        [
            node("n1", "2", labels={"zone": "z1"}),
            node("n2", "2"),
            pod("p", "1", duration="10s"),
        ],
        rec,
    )
    pools = sorted(n for n in rec.series.names("alloc.cpu["))
    assert pools == ["alloc.cpu[(none)]", "alloc.cpu[z1]"]


def test_queue_share_against_deserved() -> None:
    """Two queues of weight 1 on 4 CPUs: qa asks 3, qb 1 → deserved 3/4 and 1/4 of the cluster."""
    queue_of = {
        "qa": {"scheduling.volcano.sh/queue-name": "qa"},
        "qb": {"scheduling.volcano.sh/queue-name": "qb"},
    }
    objs = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": q},
            "spec": {"weight": 1},
        }
        for q in ("qa", "qb")
    ]
    objs += [
        node("n1", "4"),
        pod("a1", "2", annotations=queue_of["qa"]),
        pod("a2", "1", annotations=queue_of["qa"]),
        pod("b1", "1", annotations=queue_of["qb"]),
    ]
    rec = MetricsRecorder()
    simulate(objs, rec)
    assert rec.series.columns["queue.allocated[qa]"][-1] == 0.75
    assert rec.series.columns["queue.deserved[qa]"][-1] == 0.75
    assert rec.series.columns["queue.allocated[qb]"][-1] == 0.25
    assert rec.series.columns["queue.deserved[qb]"][-1] == 0.25
    assert rec.series.columns["queue.share[qa]"][-1] == pytest.approx(1.0)


def test_no_queue_series_without_queues() -> None:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    assert not rec.series.names("queue.")


def test_same_seed_same_metrics() -> None:
    objs = [node(f"n{i}", "4") for i in range(4)] + [
        pod(f"p{i}", "1", arrival=f"{i % 7}s", duration=f"{10 + i % 5}s") for i in range(30)
    ]
    runs = []
    for _ in range(2):
        rec = MetricsRecorder()
        simulate(objs, rec, seed=3)
        runs.append((rec.series.columns, list(rec.pod_rows()), rec.summary()))
    assert runs[0] == runs[1]


def test_metrics_do_not_change_the_outcome() -> None:
    objs = [node(f"n{i}", "4") for i in range(3)] + [
        pod(f"p{i}", "1", arrival=f"{i % 5}s", duration=f"{5 + i % 3}s") for i in range(20)
    ]
    plain = Simulation(seed=1)
    plain.load(LoadResult([ManifestObject(o["kind"], o, "t", i) for i, o in enumerate(objs)]))
    with_metrics = Simulation(seed=1, metrics=MetricsRecorder())
    with_metrics.load(LoadResult([ManifestObject(o["kind"], o, "t", i) for i, o in enumerate(objs)]))
    a, b = plain.run(), with_metrics.run()
    assert [(o.key, o.node, o.status) for o in a.outcomes] == [(o.key, o.node, o.status) for o in b.outcomes]
    assert a.virtual_seconds == b.virtual_seconds


def test_recording_never_reads_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_wall_clock() -> float:
        raise AssertionError("wall clock read during a simulation with metrics")

    rec = MetricsRecorder()
    for name in ("time", "monotonic", "perf_counter"):
        monkeypatch.setattr(time, name, no_wall_clock)
    simulate(two_nodes_three_pods(), rec)
    monkeypatch.undo()
    assert rec.end_time == 100.0


def test_percentiles_and_time_weighted_mean() -> None:
    assert percentiles([]) == {"p50": None, "p90": None, "p99": None}
    assert percentiles([1.0, 2.0, 3.0, 4.0])["p50"] == 2.5
    t = np.array([0.0, 10.0, 30.0])
    assert time_weighted_mean(t, np.array([1.0, 3.0, 0.0]), 40.0) == pytest.approx((10 + 60) / 40)
    # a metric that appears later is averaged over the time it exists
    assert time_weighted_mean(t, np.array([math.nan, 2.0, 4.0]), 40.0) == pytest.approx((40 + 40) / 30)
    assert time_weighted_mean(np.array([5.0]), np.array([7.0]), 5.0) == 7.0
