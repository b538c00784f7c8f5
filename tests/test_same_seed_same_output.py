"""Same seed, same result: the batch examples and a cluster of many extended resources print the
same bytes whatever PYTHONHASHSEED the process runs with (nothing in the output may follow the
iteration order of a set of strings)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
HASH_SEEDS = ("0", "1", "2")
EXTENDED = (
    "nvidia.com/gpu",
    "example.com/fpga",
    "hugepages-2Mi",
    "example.com/a",
    "example.com/b",
    "amd.com/gpu",
)
VOLCANO = "scheduling.volcano.sh/v1beta1"


def _amount(name: str, n: int) -> str:
    return f"{n}Gi" if name.startswith("hugepages") else str(n)


def extended_resources_cluster() -> list[dict[str, Any]]:
    """Nodes, queues and gangs that each name a different few of several extended resources: the
    resource columns of a session then come in the order nodes and pods bring them."""
    rng = random.Random(1)
    objs: list[dict[str, Any]] = []
    for i in range(3):
        alloc = {"cpu": "16", "memory": "64Gi", "pods": "110"}
        alloc.update({r: _amount(r, 8) for r in rng.sample(EXTENDED, 4)})
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": alloc},
            }
        )
    for q in range(2):
        cap = {"cpu": "20", **{r: _amount(r, 6) for r in rng.sample(EXTENDED, 3)}}
        objs.append(
            {
                "apiVersion": VOLCANO,
                "kind": "Queue",
                "metadata": {"name": f"q{q}"},
                "spec": {"capability": cap},
            }
        )
    for g in range(4):
        objs.append(
            {
                "apiVersion": VOLCANO,
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "default"},
                "spec": {"minMember": 2, "queue": f"q{g % 2}"},
            }
        )
        for p in range(2):
            req = {"cpu": "1", **{r: _amount(r, 1) for r in rng.sample(EXTENDED, 2)}}
            objs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"g{g}-{p}",
                        "namespace": "default",
                        "annotations": {"scheduling.k8s.io/group-name": f"g{g}"},
                    },
                    "spec": {
                        "schedulerName": "volcano",
                        "containers": [{"name": "c", "resources": {"requests": req, "limits": req}}],
                    },
                }
            )
    return objs


def _outputs(args: list[str]) -> set[bytes]:
    outs: set[bytes] = set()
    for hash_seed in HASH_SEEDS:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "COLUMNS": "200"}
        proc = subprocess.run(
            [sys.executable, "-m", "kubesched.cli", "simulate", *args, "--seed", "3", "-q"],
            env=env,
            capture_output=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        outs.add(proc.stdout)
    return outs


@pytest.mark.parametrize(
    "args",
    [
        [str(EXAMPLES / "batch"), "--batch-conf", str(EXAMPLES / "batch" / "volcano-scheduler.conf")],
        [
            str(EXAMPLES / "batch-hierarchy"),
            "--batch-conf",
            str(EXAMPLES / "batch" / "capacity-hierarchy.conf"),
        ],
    ],
    ids=["batch", "batch-hierarchy"],
)
def test_batch_examples_print_the_same_bytes_under_any_hash_seed(args: list[str]) -> None:
    assert len(_outputs([*args, "-o", "json"])) == 1


def test_queue_resources_keep_their_order_under_any_hash_seed(tmp_path: Path) -> None:
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(yaml.safe_dump_all(extended_resources_cluster()))
    outs = _outputs([str(manifest), "-o", "json"])
    assert len(outs) == 1
    doc = yaml.safe_load(next(iter(outs)))
    assert any(len(q["allocated"]) > 3 for q in doc["queues"])
    for q in doc["queues"]:  # cpu and memory first, then by name
        for resources in (q["allocated"], q.get("deserved") or {}):
            names = list(resources)
            assert names == sorted(names, key=lambda k: (k not in ("cpu", "memory"), k)), q
