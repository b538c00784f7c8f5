"""Volcano metrics of batch sessions: session, action and plugin latencies, attempts, queue gauges."""

from __future__ import annotations

from typing import Any

import pytest
from tests.batch.test_batch_scheduling import group, node, pod, queue
from tests.metrics.conftest import bucket_bounds, sample

from kubesched.batch.conf_loader import default_batch_conf
from kubesched.batch.scheduler import BatchScheduler
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.store.memory import MemoryStore

ORDER = {"Queue": 0, "Node": 1, "PodGroup": 2, "Pod": 3}


def batch_run(objects: list[dict[str, Any]], sessions: int = 1) -> tuple[BatchScheduler, SchedulerMetrics]:
    store = MemoryStore()
    for obj in sorted(objects, key=lambda o: ORDER[o["kind"]]):
        store.create(obj)
    batch = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=default_batch_conf())).start_batch()
    metrics = SchedulerMetrics(process=False)
    metrics.attach_batch(batch)
    for _ in range(sessions):
        batch.informers.pump()
        batch.run_session()
    return batch, metrics


def test_a_session_records_its_latencies_and_the_pods_it_bound() -> None:
    _, metrics = batch_run(
        [queue("default"), node("n1"), group("g", 2, "default"), pod("g-0", "g"), pod("g-1", "g")], sessions=2
    )
    text = metrics.exposition()
    assert sample(text, "volcano_e2e_scheduling_latency_milliseconds_count") == 2
    for action in ("enqueue", "allocate", "backfill"):
        assert sample(text, "volcano_action_scheduling_latency_microseconds_count", action=action) == 2
    for plugin in ("priority", "gang", "proportion", "predicates"):
        for on_session in ("OnSessionOpen", "OnSessionClose"):
            assert (
                sample(
                    text,
                    "volcano_plugin_scheduling_latency_microseconds_count",
                    plugin=plugin,
                    OnSession=on_session,
                )
                == 2
            )
    assert sample(text, "volcano_schedule_attempts_total", result="Success") == 2
    assert bucket_bounds(text, "volcano_e2e_scheduling_latency_milliseconds")[:-1] == [
        str(float(5 * 2**i)) for i in range(10)
    ]
    assert [
        float(b)
        for b in bucket_bounds(text, "volcano_action_scheduling_latency_microseconds", action="allocate")
    ][:-1] == pytest.approx([5 * 2**i for i in range(10)])


def test_queue_gauges_follow_the_session() -> None:
    objects = [
        queue("default", weight=3),
        queue("other"),
        node("n1", cpu="4", memory="16Gi"),
        group("fits", 1, "default"),
        pod("fits-0", "fits", cpu="2", memory="1Gi"),
        group("big", 2, "other"),
        pod("big-0", "big", cpu="3"),
        pod("big-1", "big", cpu="3"),
    ]
    _, metrics = batch_run(objects, sessions=2)
    text = metrics.exposition()
    assert sample(text, "volcano_queue_allocated_milli_cpu", queue_name="default") == 2000
    assert sample(text, "volcano_queue_allocated_memory_bytes", queue_name="default") == 1024**3
    assert sample(text, "volcano_queue_request_milli_cpu", queue_name="other") == 6000
    assert sample(text, "volcano_queue_allocated_milli_cpu", queue_name="other") == 0
    assert sample(text, "volcano_queue_weight", queue_name="default") == 3
    assert (sample(text, "volcano_queue_deserved_milli_cpu", queue_name="other") or 0) > 0
    assert sample(text, "volcano_queue_pod_group_running_count", queue_name="default") == 1
    assert sample(text, "volcano_queue_pod_group_running_count", queue_name="other") == 0
    assert sample(text, "volcano_schedule_attempts_total", result="Success") == 1
