"""A replay for the web UI: manifests run on a fresh embedded cluster over virtual time, returned as
a timeline the page steps through with a slider.

The manifests are read as ``simulate`` reads them (pods arrive at ``kubesched.io/arrival`` and
finish after ``kubesched.io/duration``); the run uses the configurations the served schedulers run
with, on a cluster of its own, so the served cluster is left as it is. The answer holds every
node (its labels and allocatable), every pod's life (arrival, bind, finish, node, requests, the
last reason it could not be placed) and the report's time series (pending, running, allocation per
resource), in plain units: CPU in cores, memory in bytes, the rest in counts.
"""

from __future__ import annotations

import io
import math
from typing import Any

from kubesched.api.manifests import load_manifests
from kubesched.api.objects import Node
from kubesched.api.resources import CPU
from kubesched.batch.conf import BatchConf
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.simulation import Simulation

#: The most pods one replay from the page may hold (the answer carries every one).
MAX_REPLAY_PODS = 20_000

#: The time series sent: counts, and allocation per resource (``alloc.<resource>``).
_SERIES_PREFIXES = ("pending", "running", "completed", "evicted", "alloc.")


def _plain(resources: dict[str, int]) -> dict[str, float]:
    return {name: value / 1000 if name == CPU else value for name, value in resources.items()}


def replay_timeline(
    text: str, config: SchedulerConfig | None = None, batch_conf: BatchConf | None = None
) -> dict[str, Any]:
    """Run ``text`` (YAML manifests) to the end; raises :class:`InputError` for bad input."""
    loaded = load_manifests(["-"], stdin=io.StringIO(text))
    pods = len(loaded.of_kind("Pod"))
    if pods > MAX_REPLAY_PODS:
        raise InputError(f"{pods} pods: a replay from the page holds at most {MAX_REPLAY_PODS}")
    recorder = MetricsRecorder()
    sim = Simulation(config, seed=0, metrics=recorder, batch_conf=batch_conf)
    sim.load(loaded)
    result = sim.run()
    outcomes = {o.key: o for o in result.outcomes}
    nodes = []
    for obj in sim.store.list("Node"):
        node = Node.from_dict(obj)
        nodes.append(
            {"name": node.name, "labels": dict(node.labels), "allocatable": _plain(node.allocatable)}
        )
    records = []
    for rec in recorder.pods.values():
        outcome = outcomes.get(rec.key)
        records.append(
            {
                "key": rec.key,
                "arrival": rec.arrival,
                "bound": rec.bound,
                "finished": rec.finished,
                "deleted": rec.deleted,
                "node": rec.node,
                "requests": _plain(rec.requests),
                "status": outcome.status if outcome is not None else "",
                "message": rec.last_failure or (outcome.message if outcome is not None else ""),
            }
        )
    series = {
        name: [None if isinstance(v, float) and math.isnan(v) else v for v in column]
        for name, column in recorder.series.columns.items()
        if name == "time" or (name.startswith(_SERIES_PREFIXES) and not name.endswith("]"))
    }
    return {
        "end": max(recorder.end_time, result.virtual_seconds),
        "nodes": nodes,
        "pods": records,
        "series": series,
        "warnings": [*result.warnings, *recorder.warnings],
    }
