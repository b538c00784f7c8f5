"""``kubesched experiment topology``: the Philly replay on a spine/leaf fabric with and without
Volcano's network-topology-aware placement. What a reader of its table relies on: the leaves a job
spans are those of the nodes its pods were bound to, the waits are arrival to the last bind, and a
hard-mode job never crosses the tier it is held to."""

from __future__ import annotations

import csv
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.sim.test_hypernode_simulation import _placed as placed_gang

from kubesched.api.manifests import ManifestObject, load_manifests
from kubesched.batch.conf_loader import DEFAULT_BATCH_CONF_YAML, batch_conf_from_dict
from kubesched.cli import EXIT_OK, main
from kubesched.errors import InputError
from kubesched.sim.gang_experiment import RACK_LABEL, ZONE_LABEL, ArmResult, JobResult, philly_jobs
from kubesched.sim.simulation import Simulation
from kubesched.sim.topology_experiment import (
    ARMS,
    DEFAULT_ARMS,
    LEAF_LABEL,
    SPINE_LABEL,
    Fabric,
    fabric_from_objects,
    load_fabric,
    markdown_table,
    nearest_rank,
    pooled_rows,
    run_topology_arm,
    seed_table,
    topology_rows,
    two_tier_fabric,
)

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).parents[2] / "examples" / "fabric" / "fabric.yaml"


def small_objects() -> list[dict[str, Any]]:
    """Four leaves of two 8-GPU nodes (16 GPUs a leaf), two leaves to a spine (32 GPUs a spine)."""
    return two_tier_fabric(leaves=4, nodes_per_leaf=2, leaves_per_spine=2)


def small_fabric() -> Fabric:
    return fabric_from_objects(small_objects())


def test_the_default_fabric_is_the_example_fabric() -> None:
    loaded = [mo.obj for mo in load_manifests([str(EXAMPLE)]).objects]
    assert loaded == two_tier_fabric()
    fabric = load_fabric(None)
    assert load_fabric(EXAMPLE) == fabric
    assert (len(fabric.nodes), fabric.gpus, fabric.leaves) == (64, 512, 8)
    assert dict(fabric.tier_gpus) == {1: 64, 2: 256}


def test_a_node_s_leaf_and_spine_come_from_the_hyper_node_tree() -> None:
    fabric = small_fabric()
    assert (fabric.gpus, fabric.leaves) == (64, 4)
    assert [fabric.leaf_of[f"gpu-{i:02d}"] for i in range(8)] == [f"leaf-{i // 2}" for i in range(8)]
    assert [fabric.spine_of[f"gpu-{i:02d}"] for i in range(8)] == [f"spine-{i // 4}" for i in range(8)]
    assert dict(fabric.tier_gpus) == {1: 16, 2: 32}
    assert (fabric.lowest_tier_for(16), fabric.lowest_tier_for(17), fabric.lowest_tier_for(33)) == (
        1,
        2,
        None,
    )
    # The run's nodes carry them as the rack and zone labels the recorder counts.
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in fabric.node_objects()}
    assert labels["gpu-05"][RACK_LABEL] == "leaf-2" and labels["gpu-05"][ZONE_LABEL] == "spine-1"
    assert labels["gpu-05"][LEAF_LABEL] == "leaf-2"


def test_leaves_follow_the_hyper_nodes_not_the_labels() -> None:
    # The same nodes under leaves that pick them by name: gpu-00 and gpu-07 share a leaf.
    objs = [o for o in small_objects() if o["kind"] == "Node"]
    pairs = [("gpu-00", "gpu-07"), ("gpu-01", "gpu-02"), ("gpu-03", "gpu-04"), ("gpu-05", "gpu-06")]
    for i, pair in enumerate(pairs):
        members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in pair]
        objs.append(_hyper_node(f"sw-{i}", 1, members))
    fabric = fabric_from_objects(objs)
    assert fabric.leaf_of["gpu-00"] == fabric.leaf_of["gpu-07"] == "sw-0"
    # No tier above: a leaf is its own spine.
    assert fabric.spine_of["gpu-00"] == "sw-0"


def _hyper_node(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no-hyper-nodes", "no HyperNode"),
        ("a-pod", "a fabric holds Nodes and HyperNodes only, got a Pod (p)"),
        ("a-node-outside", "node stray is in no HyperNode"),
        ("no-gpus", "no node with nvidia.com/gpu allocatable"),
    ],
)
def test_a_bad_fabric_is_refused_with_a_located_error(tmp_path: Path, change: str, message: str) -> None:
    objs = small_objects()
    if change == "no-hyper-nodes":
        objs = [o for o in objs if o["kind"] == "Node"]
    elif change == "a-pod":
        objs.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
        )
    elif change == "a-node-outside":
        stray = dict(objs[0], metadata={"name": "stray", "labels": {}})
        objs.append(stray)
    else:
        for o in objs:
            if o["kind"] == "Node":
                del o["status"]["allocatable"]["nvidia.com/gpu"]
    with pytest.raises(InputError, match=re.escape(message)) as err:
        fabric_from_objects(objs, "fabric.yaml")
    assert "fabric.yaml" in str(err.value)


def test_the_cli_names_a_bad_fabric_file_without_a_traceback(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "fabric.yaml"
    bad.write_text(yaml.safe_dump_all([o for o in small_objects() if o["kind"] == "Node"]))
    code = main(["experiment", "topology", "--philly", str(DATA / "philly_fabric.csv"), "--fabric", str(bad)])
    assert code != EXIT_OK
    err = capsys.readouterr().err
    assert str(bad) in err and "no HyperNode" in err and "Traceback" not in err


def test_rows_count_leaves_from_placements_and_waits_by_nearest_rank() -> None:
    fabric = small_fabric()
    jobs = [
        JobResult("one-leaf", 0.0, 60.0, 2, 16, start=10.0, end=70.0, placement=("gpu-00", "gpu-01")),
        JobResult("two-leaves", 5.0, 60.0, 2, 16, start=5.0, end=65.0, placement=("gpu-01", "gpu-02")),
        JobResult(
            "two-spines", 0.0, 60.0, 3, 24, start=40.0, end=100.0, placement=("gpu-00", "gpu-04", "gpu-06")
        ),
        JobResult("single", 20.0, 60.0, 1, 8, start=20.0, end=80.0, placement=("gpu-07",)),
        JobResult("never", 30.0, 60.0, 2, 16),
    ]
    row = topology_rows([ArmResult("hard", "philly", fabric.gpus, jobs)], fabric)[0]
    assert (row.jobs, row.done, row.pending, row.multi_pod_jobs) == (5, 4, 1, 3)
    assert row.leaves_hist == {1: 1, 2: 1, 3: 1}
    assert row.leaves_mean == 2.0
    assert row.one_leaf_pct == pytest.approx(100 / 3)
    assert row.one_spine_pct == pytest.approx(200 / 3)
    # Waits of the started jobs: 10, 0, 40, 0.
    assert row.wait_mean_s == 12.5
    assert (row.wait_p50_s, row.wait_p95_s) == (0.0, 40.0)
    assert row.multi_wait_mean_s == pytest.approx(50 / 3) and row.multi_wait_p95_s == 40.0
    assert row.makespan_s == 100.0
    line = markdown_table([row]).splitlines()[2]
    assert line.startswith(
        "| hard | 4/5 | 3 | 1/1/1 | 2.00 | 33.3 | 66.7 | 0.2 | 0.0 | 0.7 | 0.3 | 0.7 | 1.7 |"
    )


def test_several_seeds_are_pooled_per_arm() -> None:
    fabric = small_fabric()
    one = [JobResult("x", 0.0, 60.0, 2, 16, start=0.0, end=60.0, placement=("gpu-00", "gpu-01"))]
    two = [JobResult("x", 0.0, 60.0, 2, 16, start=30.0, end=90.0, placement=("gpu-01", "gpu-02"))]
    results = [ArmResult("soft", "philly", 64, one, seed=1), ArmResult("soft", "philly", 64, two, seed=2)]
    rows = topology_rows(results, fabric)
    assert [r.seeds for r in rows] == [(1,), (2,)]
    (pooled,) = pooled_rows(rows)
    assert (pooled.seeds, pooled.jobs, pooled.done, pooled.multi_pod_jobs) == ((1, 2), 2, 2, 2)
    assert pooled.leaves_hist == {1: 1, 2: 1}
    assert (pooled.leaves_mean, pooled.one_leaf_pct) == (1.5, 50.0)
    assert (pooled.wait_mean_s, pooled.wait_p95_s, pooled.makespan_s) == (15.0, 15.0, 75.0)
    lines = seed_table(rows).splitlines()
    assert lines[2].startswith("| soft | 1 | 1.00 | 100.0 | 0.0 | 0.0 |")
    assert lines[3].startswith("| soft | 2 | 2.00 | 0.0 | 0.5 | 0.5 |")


def test_nearest_rank() -> None:
    assert math.isnan(nearest_rank([], 0.5))
    assert nearest_rank([3.0], 0.95) == 3.0
    values = [float(v) for v in range(1, 21)]
    assert (nearest_rank(values, 0.5), nearest_rank(values, 0.95), nearest_rank(values, 1.0)) == (
        10.0,
        19.0,
        20.0,
    )


def _from_events(result: ArmResult) -> dict[str, list[tuple[str, float]]]:
    """Pod binds from the event log: job → [(node, seconds after the run began)]."""
    sim = result.simulation
    assert sim is not None
    out: dict[str, list[tuple[str, float]]] = {}
    for event in sim.store.list("Event"):
        if event.get("reason") != "Scheduled" or event["regarding"]["kind"] != "Pod":
            continue
        pod = event["regarding"]["name"]
        node = event["note"].rsplit(" to ", 1)[1]
        when = datetime.fromisoformat(event["eventTime"]).timestamp() - result.origin
        out.setdefault(pod.rsplit("-", 1)[0], []).append((node, when))
    return out


@pytest.mark.parametrize("arm", list(ARMS))
def test_on_a_trace_slice_leaves_come_from_the_binds_and_waits_from_the_event_log(arm: str) -> None:
    fabric = small_fabric()
    leaf_label = {
        o["metadata"]["name"]: o["metadata"]["labels"][LEAF_LABEL]
        for o in small_objects()
        if o["kind"] == "Node"
    }
    spine_label = {
        o["metadata"]["name"]: o["metadata"]["labels"][SPINE_LABEL]
        for o in small_objects()
        if o["kind"] == "Node"
    }
    jobs = philly_jobs(DATA / "philly_fabric.csv", jobs=20, time_scale=60.0)
    # Ten multi-GPU jobs, five of several 8-GPU pods (16, 24, 32 GPUs).
    assert len(jobs) == 10 and sorted(j.gpus for j in jobs if len(j.workers) > 1) == [16, 16, 16, 24, 32]
    result = run_topology_arm(arm, jobs, fabric, keep_simulation=True)
    binds = _from_events(result)
    waits = []
    for job in result.jobs:
        assert job.state == "done", job.name
        nodes = [node for node, _ in binds[job.name]]
        assert sorted(nodes) == sorted(job.placement)
        # The job started at its last bind (event times are whole seconds).
        last = max(when for _, when in binds[job.name])
        assert job.start is not None and job.start - 1.0 < last <= job.start
        waits.append(last - job.arrival)
        if job.pods > 1 and arm == "hard":
            # Held to the lowest tier that can hold it: a leaf for 16 GPUs, a spine for 24 or 32.
            assert len({(leaf_label if job.gpus <= 16 else spine_label)[n] for n in nodes}) == 1, job.name
    row = topology_rows([result], fabric)[0]
    multi = [j for j in result.jobs if j.pods > 1]
    leaves = [len({leaf_label[n] for n, _ in binds[j.name]}) for j in multi]
    assert row.leaves_hist == {k: leaves.count(k) for k in sorted(set(leaves))}
    assert row.one_leaf_pct == pytest.approx(100.0 * leaves.count(1) / len(leaves))
    assert row.wait_mean_s == pytest.approx(sum(waits) / len(waits), abs=1.0)
    assert row.wait_p95_s == pytest.approx(nearest_rank(waits, 0.95), abs=1.0)
    if arm == "hard":
        assert row.one_spine_pct == 100.0
    if arm == "none":
        # Without topology the default node order spreads a gang over leaves.
        assert row.one_leaf_pct < 100.0


def test_cli_experiment_topology_prints_the_table_and_writes_the_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": small_objects()}))
    out = tmp_path / "topology"
    code = main(
        [
            "experiment", "topology", "--philly", str(DATA / "philly_fabric.csv"), "--philly-skip", "0",
            "--fabric", str(fabric), "--report", str(out),
        ]
    )  # fmt: skip
    assert code == EXIT_OK
    text = capsys.readouterr().out
    assert "10 multi-GPU jobs (5 of several pods) on 8 nodes, 64 GPUs, 4 leaves" in text
    assert "| hard | 10/10 | 5 |" in text
    with (out / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["arm"] for r in rows] == list(DEFAULT_ARMS)
    assert rows[-1]["one_leaf_pct"] != "" and all(r["done"] == "10" for r in rows)
    assert (out / "table.md").read_text().startswith("| arm | done/jobs |")
    with (out / "jobs.csv").open() as f:
        jobs = list(csv.DictReader(f))
    assert len(jobs) == 30 and all(j["leaves"] for j in jobs)
    for plot in ("leaves", "delays", "timeline"):
        assert (out / f"topology_{plot}.png").stat().st_size > 0


def test_cli_experiment_topology_runs_each_arm_once_per_seed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "topology"
    code = main(
        [
            "experiment", "topology", "--philly", str(DATA / "philly_fabric.csv"), "--philly-skip", "0",
            "--arms", "none,hard", "--seeds", "1-2", "--report", str(out),
        ]
    )  # fmt: skip
    assert code == EXIT_OK
    text = capsys.readouterr().out
    assert "averaged over seeds 1-2" in text and "| hard | 20/20 | 10 |" in text
    assert "| none | 2 |" in text and "4 runs (2 arms x 2 seeds)" in text
    with (out / "summary.csv").open() as f:
        rows = [(r["arm"], r["seeds"]) for r in csv.DictReader(f)]
    per_seed = [("none", "1"), ("hard", "1"), ("none", "2"), ("hard", "2")]
    assert rows == [*per_seed, ("none", "1 2"), ("hard", "1 2")]
    assert "| arm | seed |" in (out / "table.md").read_text()


def test_cli_experiment_topology_refuses_an_unknown_arm(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(
        ["experiment", "topology", "--philly", str(DATA / "philly_fabric.csv"), "--arms", "none,tight"]
    )
    assert code != EXIT_OK
    assert "--arms: unknown arm 'tight'" in capsys.readouterr().err


def _example_fabric_with_a_gang(free_leaf: int | None) -> Simulation:
    """The example fabric with one server of every leaf taken by a pod that runs for ever (60 s for
    ``free_leaf``'s), and a hard-mode gang of 16 pods of 4 GPUs held to one leaf (a leaf is 8
    servers: 64 GPUs, 16 such pods exactly)."""
    loaded = load_manifests([str(EXAMPLE)])
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"}},
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": 16, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
        },
    ]

    def pod(name: str, gpus: int, **spec: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": {}}
        if spec.pop("group", False):
            meta["annotations"]["scheduling.k8s.io/group-name"] = "train"
            spec["schedulerName"] = "volcano"
        if "duration" in spec:
            meta["annotations"]["kubesched.io/duration"] = spec.pop("duration")
        resources = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
        spec["containers"] = [{"name": "c", "image": "trainer:1", "resources": resources}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    for leaf in range(8):
        blocker = pod(f"blocker-{leaf}", 8, nodeName=f"gpu-{8 * leaf:02d}")
        if leaf == free_leaf:
            blocker["metadata"]["annotations"]["kubesched.io/duration"] = "60s"
        objs.append(blocker)
    objs += [pod(f"train-{k:02d}", 4, group=True) for k in range(16)]
    loaded.objects += [ManifestObject(o["kind"], o, "gang.yaml", i) for i, o in enumerate(objs)]
    data = yaml.safe_load(DEFAULT_BATCH_CONF_YAML)
    data["tiers"][-1]["plugins"].append({"name": "network-topology-aware"})
    sim = Simulation(seed=1, batch_conf=batch_conf_from_dict(data))
    sim.load(loaded)
    sim.run(200)
    return sim


def test_on_the_example_fabric_a_hard_gang_waits_for_a_whole_leaf_then_goes_there_whole() -> None:
    # Every leaf has 7 free servers (14 such pods): the gang binds nothing and says why.
    held = _example_fabric_with_a_gang(None)
    assert placed_gang(held) == {}
    group = held.store.get("PodGroup", "default", "train")
    conditions = {c["type"]: c for c in group["status"].get("conditions", [])}
    assert conditions["Unschedulable"]["reason"] == "NotEnoughResources"
    message = conditions["Unschedulable"]["message"]
    assert message.startswith(
        "2/16 tasks in gang unschedulable: pod group is not ready, 16 Pending, 16 minAvailable"
    )
    assert re.search(
        r": In hyperNode leaf-\d: 0/8 nodes are unavailable: .*Insufficient nvidia.com/gpu", message
    )

    # leaf-5's blocker ends after a minute: the gang goes there, whole.
    freed = placed_gang(_example_fabric_with_a_gang(5))
    assert len(freed) == 16
    assert {node for node in freed.values()} == {f"gpu-{i}" for i in range(40, 48)}
