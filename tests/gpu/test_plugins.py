"""GpuShare and the GPU score plugins inside the scheduler, end to end on the embedded cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.config import config_from_dict
from kubesched.gpu.cards import (
    ANNOTATION_GPU_CARDS,
    ANNOTATION_GPU_COUNT,
    ANNOTATION_GPU_MILLI,
    LABEL_GPU_MODEL,
)
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _node(name: str, gpus: int, model: str = "T4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, LABEL_GPU_MODEL: model}},
        "status": {
            "allocatable": {
                "cpu": "32",
                "memory": "64Gi",
                "pods": "110",
                "nvidia.com/gpu": str(gpus),
                "kubesched.io/gpu-milli": str(gpus * 1000),
            }
        },
    }


def _pod(name: str, count: int, milli: int) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": "1", "memory": "1Gi", "kubesched.io/gpu-milli": str(count * milli)}
    if milli == 1000:
        requests["nvidia.com/gpu"] = str(count)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {ANNOTATION_GPU_COUNT: str(count), ANNOTATION_GPU_MILLI: str(milli)},
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
    }


def _sim(score: str) -> Simulation:
    registry = default_registry()
    config = config_from_dict(
        {
            **API,
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {
                        "multiPoint": {"enabled": [{"name": "GpuShare"}, {"name": score}]},
                        "score": {"disabled": [{"name": "*"}], "enabled": [{"name": score}]},
                    },
                }
            ],
        },
        registry,
    )
    return Simulation(config, registry)


def _cards(sim: Simulation, name: str) -> str:
    obj = sim.store.get("Pod", "default", name)
    assert obj is not None
    return str(obj["metadata"].get("annotations", {}).get(ANNOTATION_GPU_CARDS, ""))


def test_shares_never_overlap_a_card_and_cards_are_annotated() -> None:
    # Two 0.6 shares take one card each; 0.8 GPU is left on the node in all, but no card has 0.5.
    sim = _sim("GpuBestFit")
    sim.store.create(_node("n1", 2))
    for name in ("a", "b"):
        sim.store.create(_pod(name, 1, 600))
    sim.run()
    sim.store.create(_pod("half", 1, 500))
    sim.run()
    statuses = {o.name: (o.status, o.node) for o in sim.outcomes()}
    assert statuses["a"] == statuses["b"] == ("Scheduled", "n1")
    assert {_cards(sim, "a"), _cards(sim, "b")} == {"0", "1"}
    o = next(o for o in sim.outcomes() if o.name == "half")
    assert o.status == "Unschedulable"
    assert "no GPU card with enough left" in o.message


def test_a_two_gpu_pod_takes_two_whole_cards_of_one_node() -> None:
    sim = _sim("GpuPacking")
    sim.store.create(_node("n1", 4))
    sim.store.create(_pod("share", 1, 300))
    sim.store.create(_pod("two", 2, 1000))
    sim.run()
    assert {o.name: o.status for o in sim.outcomes()} == {"share": "Scheduled", "two": "Scheduled"}
    share, two = _cards(sim, "share"), _cards(sim, "two")
    assert len(two.split("-")) == 2 and share not in two.split("-")


def test_fgd_puts_a_share_where_it_fragments_least() -> None:
    # n1 has a card with 0.4 left and a free card; n2 is idle. Typical pods ask 0.4: FGD fills the
    # 0.4 card exactly rather than cutting into a whole card.
    sim = _sim("FGD")
    sim.store.create(_node("n1", 2))
    sim.store.create(_node("n2", 2))
    sim.store.create(_pod("first", 1, 600))
    sim.run()
    first_node = next(o.node for o in sim.outcomes() if o.name == "first")
    sim.store.create(_pod("second", 1, 400))
    sim.run()
    second = next(o for o in sim.outcomes() if o.name == "second")
    assert second.node == first_node
    assert _cards(sim, "second") == _cards(sim, "first")


@pytest.mark.parametrize("example", ["fgd.yaml", "bestfit.yaml"])
def test_the_example_configs_enable_gpushare_and_a_gpu_score(example: str) -> None:
    from pathlib import Path

    from kubesched.framework.config import load_config

    path = Path(__file__).resolve().parents[2] / "examples" / "gpu-sharing" / example
    config = load_config(path, default_registry())
    sim = Simulation(config)
    sim.store.create(_node("n1", 2))
    sim.store.create(_pod("p", 1, 300))
    sim.run()
    assert _cards(sim, "p") in {"0", "1"}
