"""The FGD experiment on a tiny cluster: procedure, outputs and the CLI."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from kubesched.cli import main
from kubesched.gpu.policies import POLICIES
from kubesched.sim.gpu_cells import load_cluster, load_pod_list, tune_order
from kubesched.sim.gpu_experiment import run_cell, run_grid, write_csv

NODES = """sn,cpu_milli,memory_mib,gpu,model
node-0,32000,65536,2,T4
node-1,32000,65536,2,T4
node-2,64000,131072,4,V100M16
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
pod-0,4000,8192,1,500,
pod-1,4000,8192,1,600,
pod-2,8000,8192,2,1000,
pod-3,2000,4096,0,0,
pod-4,4000,8192,1,1000,V100M16
pod-5,4000,8192,1,250,T4
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def test_tuning_inflates_to_130_percent_with_copies_after_the_originals(files: tuple[Path, Path]) -> None:
    nodes, pods = files
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    assert cluster.gpu_milli == 8000 and cluster.models == ("T4", "V100M16")
    order = tune_order(plist, cluster.gpu_milli, seed=42)
    assert sorted(order[:6].tolist()) == list(range(6))
    total = sum(plist.shapes[i].milli * plist.shapes[i].count for i in order.tolist())
    assert total <= 1.3 * 8000 and total > 1.3 * 8000 - 2000
    assert np.array_equal(order, tune_order(plist, cluster.gpu_milli, seed=42))


def test_every_policy_runs_and_nothing_is_over_committed(files: tuple[Path, Path]) -> None:
    nodes, pods = files
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    for policy in POLICIES:
        r = run_cell(cluster, plist, policy, seed=1)
        assert r.pods >= 6 and 0 <= r.failed < r.pods
        finite = r.alloc_at[~np.isnan(r.alloc_at)]
        assert len(finite) and finite.max() <= 100.0 and finite.min() >= 0.0


def test_grid_writes_the_table(files: tuple[Path, Path], tmp_path: Path) -> None:
    nodes, pods = files
    results = run_grid(nodes, [pods], ["BestFit", "FGD"], [1, 2], workers=1, progress=lambda d, t, s: None)
    assert [(r.policy, r.seed) for r in results] == [("BestFit", 1), ("BestFit", 2), ("FGD", 1), ("FGD", 2)]
    write_csv(results, tmp_path / "out")
    with (tmp_path / "out" / "unallocated.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["pod_list", "policy", "seed", "unallocated_gpu_pct_at_100"]
    assert len(rows) == 4 and rows[0]["pod_list"] == "pods"


def test_cli_experiment_fgd(files: tuple[Path, Path], tmp_path: Path) -> None:
    nodes, pods = files
    out = tmp_path / "exp"
    code = main(
        [
            "experiment", "fgd", "--nodes", str(nodes), "--pod-list", str(pods),
            "--policies", "Random,FGD", "--seeds", "1-2", "--workers", "1", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    assert (out / "unallocated.csv").is_file() and (out / "curves.csv").is_file()
    assert (out / "alloc_pods.png").is_file() and "FGD" in (out / "report.html").read_text()
    assert (
        main(
            [
                "experiment",
                "fgd",
                "--nodes",
                str(nodes),
                "--pod-list",
                str(pods),
                "--policies",
                "Nope",
                "--out",
                str(out),
            ]
        )
        == 2
    )


def test_ties_can_be_broken_at_random(files: tuple[Path, Path]) -> None:
    nodes, pods = files
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    r = run_cell(cluster, plist, "GpuPacking", seed=3, tie_break="random")
    assert r.pods >= 6
    with pytest.raises(ValueError, match="tie_break"):
        run_cell(cluster, plist, "GpuPacking", seed=3, tie_break="first")
