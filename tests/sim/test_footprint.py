"""What a simulation holds, by structure rather than by size: pods of one shape share what they
repeat, from the manifest to the store; a finished run lets its cluster go; and the output is
written as ``json.dumps`` would print it."""

from __future__ import annotations

import gc
import io
import json
import weakref
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.manifests import load_manifests
from kubesched.cli import build_parser
from kubesched.cli.simulate import load_inputs, write_json
from kubesched.plugins import default_registry
from kubesched.runtime.collector import SCHEDULER_THRESHOLDS
from kubesched.sim import compare
from kubesched.sim.compare import plan_runs
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.simulation import Simulation
from kubesched.sim.sweep_engine import cell_task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
""" + "".join(
    f"""---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, labels: {{app: web}}}}
spec:
  containers:
  - name: c
    image: nginx
    resources: {{requests: {{cpu: 100m, memory: 200Mi}}}}
"""
    for i in range(4)
)


def test_stored_pods_share_the_parts_of_the_manifest_they_repeat(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    loaded = load_inputs(build_parser().parse_args(["simulate", str(path)]))
    manifest = {mo.obj["metadata"]["name"]: mo.obj for mo in loaded.of_kind("Pod")}
    sim = Simulation(seed=0)
    sim.load(loaded)
    result = sim.run()
    assert result.scheduled == 4
    stored = {name: sim.store.get("Pod", "default", name) for name in manifest}
    first = stored["p0"]
    assert first is not None and first["spec"]["nodeName"] == "n1"
    for name, obj in stored.items():
        assert obj is not None
        # One containers list and one labels map for every pod of the shape, the manifest's own.
        containers = obj["spec"]["containers"]
        assert containers is first["spec"]["containers"] is manifest[name]["spec"]["containers"]
        assert obj["metadata"]["labels"] is first["metadata"]["labels"]
        # The strings the manifest reader made, not copies.
        assert obj["metadata"]["name"] is manifest[name]["metadata"]["name"]
        # Bound at the first try in the same second: one status for all.
        assert obj["status"] is first["status"]
        assert obj["status"] == {"phase": "Pending", "conditions": [first["status"]["conditions"][0]]}


@pytest.mark.parametrize("example", ["quickstart", "dra", "batch", "stateful"])
def test_a_finished_simulation_is_freed_once_dropped(example: str) -> None:
    # A process that runs many simulations (several --config, a sweep's cells) must not keep
    # every cluster it built: nothing outside the simulation may hold it once the run is over,
    # not the plugins' indexes shared over its informers, nor the metrics recorder.
    recorder = MetricsRecorder()
    sim = Simulation(seed=0, metrics=recorder)
    sim.load(load_manifests([str(EXAMPLES / example)]))
    result = sim.run()
    assert result.outcomes
    gone = weakref.ref(sim)
    store = weakref.ref(sim.store)
    del sim
    gc.collect()
    assert gone() is None
    assert store() is None
    assert recorder.summary()  # what the report needs stays with the recorder


@pytest.mark.parametrize(
    "doc",
    [
        {},
        [],
        {"pods": [{"name": "p", "node": None, "score": {"n": 1.5}}], "evicted": [], "ü": "ß"},
        {"pods": [{"namespace": "default", "name": f"pod-{i}", "node": f"n{i % 7}"} for i in range(20_000)]},
    ],
)
def test_json_output_is_what_json_dumps_prints(doc: object) -> None:
    out = io.StringIO()
    write_json(doc, out, indent=2)
    assert out.getvalue() == json.dumps(doc, indent=2) + "\n"


def test_each_run_of_several_configs_is_freed_before_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the collector's thresholds of a kubesched process, full passes are rare: a run's
    # cluster (cyclic garbage once the run is over) must not wait for one beside the next run,
    # whether the runs go one after the other in the command's process or to one engine worker.
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    made: list[weakref.ref[Simulation]] = []
    alive_at_start: list[list[bool]] = []

    class Recorded(Simulation):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            alive_at_start.append([ref() is not None for ref in made])
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(compare, "Simulation", Recorded)
    registry = default_registry()
    runs = plan_runs([str(config)] * 3, None, registry)
    settings = compare.RunSettings(registry=registry, metrics=True)
    thresholds = gc.get_threshold()
    gc.set_threshold(*SCHEDULER_THRESHOLDS)
    try:
        compare.run_inline(settings, runs, load_manifests([str(EXAMPLES / "quickstart")]))
        assert alive_at_start == [[], [False], [False, False]]
        made.clear()
        alive_at_start.clear()
        loaded = load_manifests([str(EXAMPLES / "quickstart")])
        for run in runs:
            # What a worker of the sweep engine does with each run it is given.
            cell_task(compare.run_one, settings, run, loaded)
    finally:
        gc.set_threshold(*thresholds)
    assert alive_at_start == [[], [False], [False, False]]
