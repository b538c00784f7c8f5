"""One device model under both: GPUs asked for through ResourceClaims of the class
``gpu.kubesched.io`` are read, held and scored as the same GPUs asked for by annotations."""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.cli import main
from kubesched.controllers.dradriver import DraDriverOptions, desired_slices
from kubesched.errors import InputError
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.gpu.cards import (
    ANNOTATION_GPU_CARDS,
    ANNOTATION_GPU_COUNT,
    ANNOTATION_GPU_MILLI,
    ANNOTATION_GPU_SPEC,
    LABEL_GPU_MODEL,
    GpuCards,
    GpuDemand,
)
from kubesched.gpu.dra import (
    allocated_cards,
    card_of_device,
    claim_spec,
    claims_demand,
    device_class,
    model_selector,
    models_of_selector,
)
from kubesched.gpu.policies import POLICIES
from kubesched.plugins import default_registry
from kubesched.sim.gpu_cells import CellResult, load_cluster, load_pod_list
from kubesched.sim.gpu_experiment import run_cell
from kubesched.sim.gpu_experiment_scheduler import POLICY_PLUGINS, run_cell_scheduled
from kubesched.sim.simulation import Simulation

Obj = dict[str, Any]
API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _claim(name: str, demand: GpuDemand, status: Obj | None = None) -> Obj:
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": claim_spec(demand),
    }
    if status is not None:
        obj["status"] = status
    return obj


def _allocation(node: str, *devices: tuple[str, int | None]) -> Obj:
    results = []
    for i, (device, milli) in enumerate(devices):
        result: Obj = {"request": "gpu", "driver": "gpu.kubesched.io", "pool": node, "device": device}
        if milli is not None:
            result["shareID"] = f"share-{node}-{device}-{i}"
            result["consumedCapacity"] = {"milli": str(milli)}
        results.append(result)
    return {"allocation": {"devices": {"results": results}}}


# -- reading claims -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "demand",
    [GpuDemand(1, 300), GpuDemand(1, 1000), GpuDemand(4, 1000), GpuDemand(1, 500, ("V100M16", "V100M32"))],
    ids=["share", "one card", "four cards", "share of two models"],
)
def test_a_claim_written_for_a_demand_reads_back_as_that_demand(demand: GpuDemand) -> None:
    claim = ResourceClaim.from_dict(_claim("c", demand))
    assert claims_demand([claim]) == demand


def test_model_selectors_read_back_and_other_expressions_are_left_to_the_allocator() -> None:
    assert models_of_selector(model_selector(["T4"])) == ("T4",)
    assert models_of_selector(model_selector(["A10", "T4"])) == ("A10", "T4")
    assert models_of_selector('device.attributes["gpu.kubesched.io"].index == 0') is None
    assert models_of_selector('device.attributes["other.example.com"].model == "T4"') is None


def test_allocated_claims_ask_for_nothing_more_and_two_shares_are_an_input_error() -> None:
    allocated = ResourceClaim.from_dict(_claim("c", GpuDemand(1, 300), _allocation("n1", ("gpu-0", 300))))
    assert not claims_demand([allocated]).wants_gpu
    whole = [ResourceClaim.from_dict(_claim(n, GpuDemand(2, 1000))) for n in ("a", "b")]
    assert claims_demand(whole) == GpuDemand(4, 1000)
    shares = [ResourceClaim.from_dict(_claim(n, GpuDemand(1, 300))) for n in ("a", "b")]
    with pytest.raises(InputError, match="share"):
        claims_demand(shares)


def test_devices_map_to_cards_and_an_allocation_to_the_milli_it_holds() -> None:
    assert card_of_device("gpu-3") == (3, 1000)
    assert card_of_device("gpu-3-half-1") == (3, 500)
    assert card_of_device("nic-0") is None
    claim = ResourceClaim.from_dict(
        _claim("c", GpuDemand(2, 1000), _allocation("n1", ("gpu-0", 1000), ("gpu-2", None)))
    )
    assert allocated_cards(claim) == ("n1", ((0, 1000), (2, 1000)))


def test_the_sharing_driver_publishes_one_shared_device_per_card() -> None:
    slices = desired_slices("n1", 2, "T4", partitions=False, sharing=True)
    (spec,) = slices.values()
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
    for device in spec["devices"]:
        assert device["allowMultipleAllocations"] is True
        assert device["capacity"]["milli"]["value"] == "1000"
        assert device["capacity"]["milli"]["requestPolicy"]["validRange"] == {
            "min": "1",
            "max": "1000",
            "step": "1",
        }


def _row(cards: GpuCards, node: str) -> list[int]:
    left = cards.left(node)
    assert left is not None
    return [int(x) for x in left[: cards.count(node)]]


def test_the_card_state_holds_claims_once_and_keeps_a_written_allocation_over_a_dropped_reserve() -> None:
    cards = GpuCards()
    cards.node_added("n1", {"nvidia.com/gpu": 2}, {})
    cards.claim_allocated("c1", "n1", ((0, 600),), pending=True)
    assert _row(cards, "n1") == [400, 1000]
    # The informer delivers the written allocation: it replaces the in-flight one, not adds to it.
    cards.claim_allocated("c1", "n1", ((0, 600),))
    assert _row(cards, "n1") == [400, 1000]
    cards.claim_released("c1", only_pending=True)  # Unreserve after the write: still held
    assert cards.tags("n1") == {"share": 1}
    cards.claim_allocated("c2", "n1", ((0, 1000), (1, 1000)))  # over-committed by someone else
    assert _row(cards, "n1") == [0, 0]
    cards.claim_released("c2")
    cards.claim_released("c1")
    assert _row(cards, "n1") == [1000, 1000]
    # A node that comes (back) later finds the claims holding its cards.
    cards.claim_allocated("c3", "n2", ((1, 250),))
    cards.node_added("n2", {"nvidia.com/gpu": 2}, {})
    assert _row(cards, "n2") == [1000, 750]


# -- scheduling -----------------------------------------------------------------------------------


def _node(name: str, gpus: int, model: str = "T4") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, LABEL_GPU_MODEL: model}},
        "status": {
            "allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
        },
    }


def _annotated_pod(name: str, demand: GpuDemand, cpu: str = "1") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {
                ANNOTATION_GPU_COUNT: str(demand.count),
                ANNOTATION_GPU_MILLI: str(demand.milli),
                ANNOTATION_GPU_SPEC: "|".join(demand.models),
            },
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
    }


def _claim_pod(name: str, demand: GpuDemand, cpu: str = "1") -> list[Obj]:
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
        },
    }
    claim = _claim(name, demand)
    del claim["metadata"]["uid"]
    return [claim, pod]


def _sim(score: str, *, sharing: bool = True) -> Simulation:
    registry = default_registry()
    config = config_from_dict(
        {
            **API,
            "featureGates": {"DRAConsumableCapacity": True},
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
    sim = Simulation(config, registry, dra_driver=DraDriverOptions(sharing=sharing))
    sim.store.create(device_class())
    return sim


def _outcome(sim: Simulation, name: str) -> tuple[str, str | None]:
    o = next(o for o in sim.outcomes() if o.name == name)
    return o.status, o.node


def _left(sim: Simulation, node: str) -> list[int]:
    left = sim.cluster.feed.cache.gpu_cards.left(node)
    assert left is not None
    return [int(x) for x in left[: sim.cluster.feed.cache.gpu_cards.count(node)]]


def test_claim_shares_get_distinct_cards_the_card_state_holds_and_free_them_when_their_pods_go() -> None:
    sim = _sim("GpuBestFit")
    sim.store.create(_node("n1", 2))
    for name in ("a", "b"):
        for obj in _claim_pod(name, GpuDemand(1, 600)):
            sim.store.create(obj)
    sim.run()
    assert _outcome(sim, "a") == _outcome(sim, "b") == ("Scheduled", "n1")
    devices = set()
    for name in ("a", "b"):
        claim = sim.informers.informer("ResourceClaim").get("default", name)
        held = allocated_cards(claim)
        assert held is not None and held[0] == "n1" and held[1][0][1] == 600
        devices.add(held[1][0][0])
        pod = sim.store.get("Pod", "default", name)
        assert pod is not None and ANNOTATION_GPU_CARDS not in (pod["metadata"].get("annotations") or {})
    assert devices == {0, 1}
    assert _left(sim, "n1") == [400, 400]
    # 0.8 GPU is left on the node, but no card has 0.5: a share never spans cards.
    for obj in _claim_pod("half", GpuDemand(1, 500)):
        sim.store.create(obj)
    sim.run()
    assert _outcome(sim, "half")[0] == "Unschedulable"
    # Deleting a pod frees its claim's share: the waiting half takes it.
    sim.store.delete("Pod", "default", "a")
    sim.run()
    assert _outcome(sim, "half") == ("Scheduled", "n1")
    assert sorted(_left(sim, "n1")) == [400, 500]


def test_cards_taken_through_dra_are_taken_for_annotated_pods() -> None:
    sim = _sim("GpuBestFit")
    sim.store.create(_node("n1", 2))
    sim.store.create(_node("n2", 2))
    # Claims allocated by someone else: both cards of n1 whole, 600 milli of n2's card 0.
    sim.store.create(_claim("whole", GpuDemand(2, 1000), _allocation("n1", ("gpu-0", 1000), ("gpu-1", 1000))))
    sim.store.create(_claim("share", GpuDemand(1, 600), _allocation("n2", ("gpu-0", 600))))
    sim.store.create(_annotated_pod("one", GpuDemand(1, 1000)))
    sim.store.create(_annotated_pod("half", GpuDemand(1, 500)))
    sim.run()
    assert _outcome(sim, "one") == ("Scheduled", "n2")
    assert _outcome(sim, "half") == ("Unschedulable", None)
    explain = next(o for o in sim.outcomes() if o.name == "half").message
    assert "node(s) had no GPU card with enough left" in explain
    one = sim.store.get("Pod", "default", "one")
    assert one is not None and one["metadata"]["annotations"][ANNOTATION_GPU_CARDS] == "1"


def _scores(sim: Simulation, plugin_name: str, pod_obj: Obj) -> np.ndarray[Any, np.dtype[np.int64]]:
    sim.informers.pump()
    sched = sim.scheduler
    sched.cache.update_snapshot(sched.snapshot)
    (fwk,) = sched.profiles.values()
    plugin = next(p for p, _ in fwk.score if p.name == plugin_name)
    table = sched.snapshot.table
    stored = sim.store.get("Pod", "default", pod_obj["metadata"]["name"])
    assert stored is not None
    pod = Pod.from_dict(stored)
    slots = np.array(sorted(table.slot_of.values()), dtype=np.int64)
    scores: np.ndarray[Any, np.dtype[np.int64]] = plugin.score_nodes(CycleState(), pod, table, slots)
    return scores


HISTORY = [
    GpuDemand(1, 600),
    GpuDemand(2, 1000),
    GpuDemand(1, 250, ("T4",)),
    GpuDemand(1, 1000),
    GpuDemand(1, 400),
]


@pytest.mark.parametrize("policy", [p for p in POLICIES if p != "Random"])
def test_a_claim_pod_scores_as_the_annotated_pod_on_the_same_cards(policy: str) -> None:
    plugin = POLICY_PLUGINS[policy]
    sims = {"annotations": _sim(plugin), "claims": _sim(plugin)}
    for sim in sims.values():
        sim.store.create(_node("n1", 4))
        sim.store.create(_node("n2", 2))
        sim.store.create(_node("n3", 8, "V100M16"))
    # The same pods, one way and the other, placed on the same nodes and cards. (GpuShare gives an
    # annotated share the tightest card, DRA the first that fits: shares go to fresh cards here.)
    for i, demand in enumerate(HISTORY):
        sims["annotations"].store.create(_annotated_pod(f"p{i}", demand))
        for obj in _claim_pod(f"p{i}", demand):
            sims["claims"].store.create(obj)
        for sim in sims.values():
            sim.run()
    placed = {way: [_outcome(sim, f"p{i}") for i in range(len(HISTORY))] for way, sim in sims.items()}
    assert placed["annotations"] == placed["claims"]
    for node in ("n1", "n2", "n3"):
        assert _left(sims["annotations"], node) == _left(sims["claims"], node)
    # The next pod, not scheduled yet: the same scores on every node.
    for demand in (GpuDemand(1, 300), GpuDemand(2, 1000), GpuDemand(1, 500, ("V100M16",))):
        name = f"next-{demand.count}-{demand.milli}"
        pods = {
            "annotations": [_annotated_pod(name, demand, cpu="2")],
            "claims": _claim_pod(name, demand, cpu="2"),
        }
        scores = {}
        for way, sim in sims.items():
            for obj in pods[way]:
                created = copy.deepcopy(obj)
                created["spec"]["schedulerName"] = "nobody"  # scored here, never scheduled
                sim.store.create(created)
            scores[way] = _scores(sim, plugin, pods[way][-1])
        assert scores["annotations"].tolist() == scores["claims"].tolist(), demand


# -- the experiment through claims -----------------------------------------------------------------

NODES = """sn,cpu_milli,memory_mib,gpu,model
node-0,32000,65536,2,T4
node-1,32000,65536,2,T4
node-2,64000,131072,4,V100M16
"""
WHOLE_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
pod-0,4000,8192,1,1000,
pod-1,8000,8192,2,1000,
pod-2,2000,4096,0,0,
pod-3,4000,8192,1,1000,V100M16
pod-4,4000,8192,4,1000,
"""
SHARED_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
pod-0,4000,8192,1,500,
pod-1,4000,8192,1,600,
pod-2,8000,8192,2,1000,
pod-3,2000,4096,0,0,
pod-4,4000,8192,1,1000,V100M16
pod-5,4000,8192,1,250,T4
"""


def _files(tmp_path: Path, pods: str) -> tuple[Path, Path]:
    nodes_csv, pods_csv = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes_csv.write_text(NODES)
    pods_csv.write_text(pods)
    return nodes_csv, pods_csv


def _same(a: CellResult, b: CellResult) -> bool:
    """The same pods tried and failed, and the same allocation and fragmentation curves."""
    return (
        a.pods == b.pods
        and a.failed == b.failed
        and np.array_equal(a.alloc_at, b.alloc_at, equal_nan=True)
        and np.allclose(a.frag_at, b.frag_at, equal_nan=True)
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_whole_cards_through_claims_give_the_kernels_table(policy: str, tmp_path: Path) -> None:
    nodes, pods = _files(tmp_path, WHOLE_PODS)
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    kernel = run_cell(cluster, plist, policy, seed=7)
    annotated = run_cell_scheduled(cluster, plist, policy, seed=7, claims=False)
    claims = run_cell_scheduled(cluster, plist, policy, seed=7, claims=True)
    if policy != "Random":  # Random draws from the scheduler's generator, not the kernel's
        assert _same(annotated, kernel)
    assert _same(claims, annotated)


@pytest.mark.parametrize("policy", ["DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"])
def test_shares_through_claims_allocate_as_by_annotation(policy: str, tmp_path: Path) -> None:
    nodes, pods = _files(tmp_path, SHARED_PODS)
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    for seed in (1, 2, 3):
        kernel = run_cell(cluster, plist, policy, seed=seed)
        annotated = run_cell_scheduled(cluster, plist, policy, seed=seed, claims=False)
        claims = run_cell_scheduled(cluster, plist, policy, seed=seed, claims=True)
        assert _same(annotated, kernel)
        # Through claims every pod lands or fails as by annotation; only a share's card may
        # differ (the allocator's first fit against the policy's card), which moves the
        # fragmentation curve but, on this cluster, not the allocation.
        assert (claims.pods, claims.failed) == (annotated.pods, annotated.failed)
        assert np.array_equal(claims.alloc_at, annotated.alloc_at, equal_nan=True)


def test_the_allocators_first_fit_card_can_fragment_otherwise_than_the_tightest_card(tmp_path: Path) -> None:
    # Seed 1 puts a share where GpuShare would take the tightest card and the allocator takes the
    # first card that fits (docs/experiments.md, "GPUs through DRA").
    nodes, pods = _files(tmp_path, SHARED_PODS)
    cluster, plist = load_cluster(nodes), load_pod_list(pods)
    annotated = run_cell_scheduled(cluster, plist, "BestFit", seed=1, claims=False)
    claims = run_cell_scheduled(cluster, plist, "BestFit", seed=1, claims=True)
    assert np.array_equal(claims.alloc_at, annotated.alloc_at, equal_nan=True)
    assert not np.allclose(claims.frag_at, annotated.frag_at, equal_nan=True)


def test_cli_experiment_fgd_through_claims(tmp_path: Path) -> None:
    nodes, pods = _files(tmp_path, SHARED_PODS)
    out = tmp_path / "exp"
    args = ["experiment", "fgd", "--nodes", str(nodes), "--pod-list", str(pods), "--policies", "BestFit"]
    assert main([*args, "--seeds", "1", "--workers", "1", "--dra", "--out", str(out)]) == 0
    with (out / "unallocated.csv").open() as f:
        assert [row["policy"] for row in csv.DictReader(f)] == ["BestFit"]
    assert main([*args, "--node-sample", "0", "--out", str(out)]) == 2
    with pytest.raises(SystemExit):
        main([*args, "--dra", "--scheduler", "--out", str(out)])


def test_the_dra_example_places_every_pod_through_its_claim(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    example = Path(__file__).resolve().parents[2] / "examples" / "gpu-sharing" / "dra"
    code = main(
        [
            "simulate", str(example / "cluster.yaml"), "--config", str(example / "config.yaml"),
            "--dra-sharing", "-o", "json",
        ]
    )  # fmt: skip
    assert code == 0
    placed = {p["name"]: (p["status"], p["node"]) for p in json.loads(capsys.readouterr().out)["pods"]}
    assert placed["v100-job"] == ("Scheduled", "gpu-v100")
    assert all(status == "Scheduled" for status, _ in placed.values())
