"""What a simulation holds, by structure rather than by size: a finished run lets its cluster go,
and what the output is written from is the same document ``json.dumps`` would print."""

from __future__ import annotations

import gc
import io
import json
import weakref
from pathlib import Path

import pytest

from kubesched.api.manifests import load_manifests
from kubesched.cli.simulate import write_json
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.simulation import Simulation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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
