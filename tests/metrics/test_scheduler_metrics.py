"""kube-scheduler metrics of a scheduling run, as a scrape of ``/metrics`` would show them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.metrics.conftest import bucket_bounds, sample, samples
from tests.test_scheduler import make_node, make_pod

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.sim.simulation import Simulation

PROFILE = "default-scheduler"


def run(
    objects: list[dict[str, Any]], *, sample_percent: float = 10, seed: int = 0
) -> tuple[Simulation, SchedulerMetrics]:
    sim = Simulation(seed=seed)
    metrics = SchedulerMetrics(plugin_sample_percent=sample_percent, sample_seed=0, process=False)
    metrics.attach(sim.scheduler)
    for obj in objects:
        sim.store.create(obj)
    sim.run()
    return sim, metrics


def gated_pod(name: str) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return pod


def test_attempts_are_counted_per_result_and_profile() -> None:
    _, metrics = run([make_node("n1", cpu="1"), make_pod("a", cpu="600m"), make_pod("b", cpu="600m")])
    text = metrics.exposition()
    assert sample(text, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 1
    assert sample(text, "scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) == 1
    assert sample(text, "scheduler_schedule_attempts_total", result="error", profile=PROFILE) is None
    duration = "scheduler_scheduling_attempt_duration_seconds_count"
    assert sample(text, duration, result="scheduled", profile=PROFILE) == 1
    assert sample(text, duration, result="unschedulable", profile=PROFILE) == 1
    # Every cycle ran the algorithm once; the one bound pod needed one attempt.
    assert sample(text, "scheduler_scheduling_algorithm_duration_seconds_count") == 2
    assert sample(text, "scheduler_pod_scheduling_attempts_count") == 1
    assert sample(text, "scheduler_pod_scheduling_attempts_sum") == 1
    assert sample(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 1


def test_an_unschedulable_pod_is_counted_under_its_plugin_until_it_is_scheduled() -> None:
    sim, metrics = run([make_node("n1", cpu="1"), make_pod("big", cpu="2")])
    text = metrics.exposition()
    assert sample(text, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=PROFILE) == 1
    assert sample(text, "scheduler_pending_pods", queue="unschedulable") == 1
    assert sample(text, "scheduler_pending_pods", queue="active") == 0
    assert sample(text, "scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") == 1
    assert (
        sample(
            text, "scheduler_queue_incoming_pods_total", queue="unschedulable", event="ScheduleAttemptFailure"
        )
        == 1
    )

    sim.store.create(make_node("n2", cpu="4"))
    sim.run()
    text = metrics.exposition()
    # The new node moved the pod (NodeResourcesFit registered Node/Add) and it was bound.
    assert sample(text, "scheduler_queue_incoming_pods_total", event="NodeAdd") == 1
    assert sample(text, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=PROFILE) == 0
    assert sample(text, "scheduler_pending_pods", queue="unschedulable") == 0
    assert sample(text, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 1
    assert sample(text, "scheduler_pod_scheduling_attempts_sum") == 2


def test_a_gated_pod_is_pending_as_gated_and_counted_under_its_gate() -> None:
    sim, metrics = run([make_node("n1"), gated_pod("g")])
    text = metrics.exposition()
    assert sample(text, "scheduler_pending_pods", queue="gated") == 1
    assert sample(text, "scheduler_pending_pods", queue="unschedulable") == 0
    assert sample(text, "scheduler_unschedulable_pods", plugin="SchedulingGates", profile=PROFILE) == 1
    assert sample(text, "scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) is None

    sim.store.delete("Pod", "default", "g")
    sim.run()
    text = metrics.exposition()
    assert sample(text, "scheduler_pending_pods", queue="gated") == 0
    assert sample(text, "scheduler_unschedulable_pods", plugin="SchedulingGates", profile=PROFILE) == 0


def test_preemption_attempts_and_victims() -> None:
    sim, metrics = run([make_node("n1", cpu="1"), make_pod("low", cpu="800m", priority=0)])
    sim.store.create(make_pod("high", cpu="800m", priority=100))
    sim.run()
    text = metrics.exposition()
    assert sample(text, "scheduler_preemption_attempts_total") == 1
    assert sample(text, "scheduler_preemption_victims_count") == 1
    assert sample(text, "scheduler_preemption_victims_sum") == 1
    assert sample(text, "scheduler_preemption_victims_bucket", le="1.0") == 1


def test_histograms_have_upstream_buckets() -> None:
    _, metrics = run([make_node("n1"), make_pod("a")], sample_percent=100)
    text = metrics.exposition()

    def bounds(name: str, **labels: str) -> list[float]:
        got = bucket_bounds(text, name, **labels)
        assert got[-1] == "+Inf"
        return [float(b) for b in got[:-1]]

    def exponential(start: float, factor: float, count: int) -> list[float]:
        return [start * factor**i for i in range(count)]

    assert bounds("scheduler_scheduling_attempt_duration_seconds", result="scheduled") == pytest.approx(
        exponential(0.001, 2, 15)
    )
    assert bounds("scheduler_scheduling_algorithm_duration_seconds") == pytest.approx(
        exponential(0.001, 2, 15)
    )
    assert bounds("scheduler_pod_scheduling_sli_duration_seconds") == pytest.approx(exponential(0.01, 2, 20))
    assert bounds("scheduler_pod_scheduling_attempts") == [1, 2, 4, 8, 16]
    assert bounds(
        "scheduler_framework_extension_point_duration_seconds", extension_point="Bind", status="Success"
    ) == pytest.approx(exponential(0.0001, 2, 12))
    assert bounds(
        "scheduler_plugin_execution_duration_seconds", plugin="DefaultBinder", extension_point="Bind"
    ) == pytest.approx(exponential(0.00001, 1.5, 20))


def test_extension_points_are_timed_every_cycle_and_plugins_only_in_sampled_ones() -> None:
    pods = [make_pod(f"p{i}") for i in range(20)]
    _, never = run([make_node("n1"), *pods], sample_percent=0)
    text = never.exposition()
    ext = "scheduler_framework_extension_point_duration_seconds_count"
    assert sample(text, ext, extension_point="PreFilter", status="Success", profile=PROFILE) == 20
    assert sample(text, ext, extension_point="Bind", status="Success", profile=PROFILE) == 20
    assert samples(text, "scheduler_plugin_execution_duration_seconds_count") == []

    _, always = run([make_node("n1"), *pods], sample_percent=100)
    text = always.exposition()
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    assert sample(text, plugin, plugin="NodeResourcesFit", extension_point="Filter", status="Success") == 20
    assert sample(text, plugin, plugin="DefaultBinder", extension_point="Bind", status="Success") == 20

    _, some = run([make_node("n1"), *pods], sample_percent=10)
    counted = sample(some.exposition(), plugin, plugin="DefaultBinder", extension_point="Bind") or 0
    assert 0 <= counted < 20


def test_filters_judging_chunks_of_rows_are_timed_too() -> None:
    # 200 nodes: a cycle judges the Filters over the rows its walk reaches, not over every node.
    nodes = [make_node(f"n{i}") for i in range(200)]
    _, always = run([*nodes, *(make_pod(f"p{i}") for i in range(20))], sample_percent=100)
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    text = always.exposition()
    assert sample(text, plugin, plugin="NodeResourcesFit", extension_point="Filter", status="Success") == 20
    assert sample(text, plugin, plugin="TaintToleration", extension_point="Filter", status="Success") == 20


def test_metrics_do_not_change_decisions() -> None:
    objects = [make_node(f"n{i}", cpu="2") for i in range(5)] + [
        make_pod(f"p{i}", cpu="300m") for i in range(25)
    ]
    plain = Simulation(seed=3)
    for obj in objects:
        plain.store.create(obj)
    placed = {o.name: o.node for o in plain.run().outcomes}
    sim, _ = run(objects, sample_percent=50, seed=3)
    assert {o.name: o.node for o in sim.outcomes()} == placed


def test_two_schedulers_keep_their_own_metrics() -> None:
    _, first = run([make_node("n1"), make_pod("a")])
    _, second = run([make_node("n1"), make_pod("a"), make_pod("b")])
    attempts = "scheduler_schedule_attempts_total"
    assert sample(first.exposition(), attempts, result="scheduled") == 1
    assert sample(second.exposition(), attempts, result="scheduled") == 2


class _SlotsFilter:
    __slots__ = ()
    name = "SlotsFilter"

    def filter_nodes(self, *args: Any) -> None:
        return None


class _PlainFilter:
    name = "PlainFilter"

    def filter_nodes(self, *args: Any) -> None:
        return None


def test_sampled_cycles_time_the_plugins_that_take_attributes_and_run_the_others_as_they_are() -> None:
    from types import SimpleNamespace

    from kubesched.metrics.instrument import PLUGIN_POINTS, PluginTimers

    slots, plain = _SlotsFilter(), _PlainFilter()
    lists: dict[str, Any] = {attr: [] for attr in PLUGIN_POINTS}
    lists["filter"] = [slots, plain]
    fwk = SimpleNamespace(**lists, score=[], _normalizers={})
    metrics = SchedulerMetrics(plugin_sample_percent=100, sample_seed=0, process=False)
    timers = PluginTimers(fwk, metrics.kube)  # type: ignore[arg-type]
    for on in (True, False, True):
        timers.switch(on)
        slots.filter_nodes()
        plain.filter_nodes()
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    text = metrics.exposition()
    assert sample(text, plugin, plugin="PlainFilter", extension_point="Filter", status="Success") == 2
    assert sample(text, plugin, plugin="SlotsFilter", extension_point="Filter") is None


def test_sampled_cycles_time_score_plugins_even_where_scores_are_kept() -> None:
    # Scores kept between cycles would spare NodeResourcesFit a call when none of the rows changed;
    # a sampled cycle still runs and times every Score plugin, as upstream's does.
    sim, metrics = run([*(make_node(f"n{i}") for i in range(200)), make_pod("a")], sample_percent=100)
    sched = sim.scheduler
    fwk = sched.profiles[PROFILE]
    probe = Pod.from_dict({**make_pod("probe"), "metadata": {"name": "probe", "uid": "uid-probe"}})
    table = sched.snapshot.table
    slots = np.flatnonzero(table.valid)[:150]
    plugin = "scheduler_plugin_execution_duration_seconds_count"

    def scored() -> float:
        return sample(metrics.exposition(), plugin, plugin="NodeResourcesFit", extension_point="Score") or 0

    before = scored()
    for _ in range(2):
        state = CycleState()
        fwk.run_pre_score(state, probe, table, slots)
        fwk.run_score(state, probe, table, slots, None)
    assert scored() == before + 2
