"""The batch pipeline's gpushare plugin: per-card predicate and policy node order inside sessions."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.errors import InputError
from kubesched.gpu.cards import ANNOTATION_GPU_COUNT, ANNOTATION_GPU_MILLI, LABEL_GPU_MODEL
from kubesched.sim.simulation import Simulation

VOLCANO = "scheduling.volcano.sh/v1beta1"
CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: gpushare
    arguments: {{gpushare.policy: {policy}}}
"""


def _node(name: str, gpus: int) -> dict[str, Any]:
    alloc = {"cpu": "32", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    alloc["kubesched.io/gpu-milli"] = str(gpus * 1000)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {LABEL_GPU_MODEL: "T4"}},
        "status": {"allocatable": alloc},
    }


def _group(name: str, members: int) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": members, "queue": "default"},
    }


def _pod(name: str, group: str, milli: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {
                "scheduling.k8s.io/group-name": group,
                ANNOTATION_GPU_COUNT: "1",
                ANNOTATION_GPU_MILLI: str(milli),
            },
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "kubesched.io/gpu-milli": str(milli)}}}
            ],
        },
    }


def _run(policy: str, objs: list[dict[str, Any]]) -> dict[str, str | None]:
    conf = batch_conf_from_dict(yaml.safe_load(CONF.format(policy=policy)), "test.conf")
    sim = Simulation(seed=0, batch_conf=conf)
    queue = {"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}
    sim.store.create(queue)
    for obj in objs:
        sim.store.create(obj)
    result = sim.run()
    return {o.name: o.node for o in result.outcomes}


def test_a_gang_of_shares_gets_one_card_each_when_they_cannot_share() -> None:
    # Two 0.6 shares in one gang on a 2-card node: each takes its own card; a third 0.6 share does
    # not fit, although 0.8 GPU is left on the node in all.
    placed = _run("BestFit", [_node("n1", 2), _group("g", 2), _pod("a", "g", 600), _pod("b", "g", 600)])
    assert placed == {"a": "n1", "b": "n1"}
    placed = _run(
        "FGD",
        [_node("n1", 2), _group("g", 3), *(_pod(n, "g", 600) for n in ("a", "b", "c"))],
    )
    assert placed == {"a": None, "b": None, "c": None}


def test_unknown_policy_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"gpushare\.policy"):
        _run("Nope", [_node("n1", 1), _group("g", 1), _pod("a", "g", 500)])
