"""Sessions keep job infos between periods and work only on what changed or waits (see
docs/batch.md, "Performance"). Their outcomes must be exactly those of a scheduler that rebuilds
every job and works out every job's status each session."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.sim.simulation import Simulation
from kubesched.sim.workload import GroupSpec, Workload, WorkloadNode, WorkloadPod, to_manifests

GPU = "nvidia.com/gpu"

#: Volcano's default actions and tiers, and one with priorities and minResources admission.
CONFS = {
    "default": None,
    "binpack": """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: binpack
""",
}


def workload(seed: int) -> Workload:
    """Gangs of GPU workers in three queues on a small cluster, arriving faster than they finish so
    queues fill, wait behind their deserved share and drain again."""
    rng = random.Random(seed)
    w = Workload()
    for i in range(6):
        w.nodes.append(WorkloadNode(f"n{i}", {"cpu": 16000, "memory": 64 << 30, "pods": 110, GPU: 4}))
    queues = ["qa", "qb", "qc"]
    for q in queues:
        w.add_queue(q)
    for j in range(60):
        queue = rng.choice(queues)
        workers = rng.choice([1, 1, 1, 2, 3])
        gpus = rng.choice([1, 1, 2, 4])
        name = f"job-{j:03d}"
        w.groups[name] = GroupSpec(name, workers, queue)
        arrival = float(rng.randrange(0, 600, 7))
        duration = float(rng.randrange(20, 400))
        for k in range(workers):
            requests: dict[str, int] = {GPU: gpus, "cpu": 1000 * rng.choice([0, 1, 2])}
            if rng.random() < 0.1:
                requests = {}  # best effort: backfill places it
            w.pods.append(
                WorkloadPod(
                    f"{name}-{k}",
                    arrival=arrival,
                    duration=duration,
                    requests=requests,
                    priority=rng.choice([0, 0, 10]),
                    scheduler_name="volcano",
                    group=name,
                    group_min_member=workers,
                    queue=queue,
                )
            )
    return w


def run(seed: int, conf: str | None, incremental: bool) -> dict[str, Any]:
    batch_conf = batch_conf_from_dict(yaml.safe_load(conf), "test.conf") if conf is not None else None
    sim = Simulation(seed=0, batch_conf=batch_conf)
    objs = [ManifestObject(str(o["kind"]), o, "trace", i) for i, o in enumerate(to_manifests(workload(seed)))]
    sim.load(LoadResult(objects=objs))
    assert sim.batch is not None
    sim.batch.incremental = incremental
    sim.batch.verify_totals = incremental
    result = sim.run(horizon=10_000)
    return {
        "pods": [(o.namespace, o.name, o.node, o.status, o.message) for o in result.outcomes],
        "evicted": result.evicted,
        "virtual": result.virtual_seconds,
        "groups": [(g.name, g.phase, g.bound, g.message) for g in result.pod_groups],
        "queues": [(q.name, q.allocated, q.deserved, q.bound, q.pending) for q in result.queues],
        "binds": [s.bound for s in sim.batch.sessions],
        "waited": sum(1 for s in sim.batch.sessions if s.pending_before),
    }


@pytest.mark.parametrize("conf", sorted(CONFS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_sessions_match_full_rebuilds(seed: int, conf: str) -> None:
    fast = run(seed, CONFS[conf], incremental=True)
    full = run(seed, CONFS[conf], incremental=False)
    assert fast == full
    # The workload does make jobs wait across sessions (else the comparison shows little).
    assert fast["waited"] > 10
    assert sum(fast["binds"]) > 0
