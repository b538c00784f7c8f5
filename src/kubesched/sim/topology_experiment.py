"""The Philly replay on a two-tier fabric, with and without Volcano's network-topology-aware
scheduling (``kubesched experiment topology``).

The fabric is nodes under leaf switches (tier-1 HyperNodes) under spines (tier 2), by default the
shape of ``examples/fabric``: 64 servers of 8 GPUs, 8 per leaf, 4 leaves per spine. Every arm is
Volcano's batch pipeline on the same nodes and HyperNodes with the same jobs (the ``volcano`` arm of
:mod:`kubesched.sim.gang_experiment`, whose recorder follows binds and starts a job when its last
pod is bound); they differ in the conf and in the PodGroups' ``spec.networkTopology``:

* ``none``: Volcano's default conf, no job has a network topology (the HyperNodes are there but
  nothing reads them);
* ``plugin`` (not run by default): the default conf plus ``network-topology-aware``, no job has a
  network topology (the plugin's node order packs every task by HyperNode);
* ``soft``: the conf with ``network-topology-aware``, every job of several pods ``mode: soft``;
* ``hard``: the same, ``mode: hard``, ``highestTierAllowed`` the lowest tier with a HyperNode that
  could hold the whole job (tier 1, a leaf, for a job no larger than a leaf).

For each arm: how many leaves (and spines) each multi-pod job's pods landed on, read from the nodes
its pods were bound to when it started, and the queueing delay (arrival to start) of the jobs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from kubesched.api.manifests import load_manifests
from kubesched.api.topology import HyperNode
from kubesched.batch.conf import BatchConf
from kubesched.batch.conf_loader import DEFAULT_BATCH_CONF_YAML, batch_conf_from_dict
from kubesched.batch.hypernodes import CLUSTER_TOP_HYPER_NODE, build_tree
from kubesched.errors import InputError
from kubesched.sim.gang_experiment import GPU, RACK_LABEL, ZONE_LABEL, ArmResult, Job, JobResult, run_arm

__all__ = [
    "ARMS",
    "DEFAULT_ARMS",
    "TOPOLOGY_COLUMNS",
    "Fabric",
    "fabric_from_objects",
    "load_fabric",
    "markdown_table",
    "nearest_rank",
    "pooled_rows",
    "run_topology_arm",
    "seed_table",
    "topology_rows",
    "two_tier_fabric",
]

LEAF_LABEL: Final = "example.com/leaf"
SPINE_LABEL: Final = "example.com/spine"
HYPER_NODE_API: Final = "topology.volcano.sh/v1alpha1"
#: Arm name → what it is, for tables and plots.
ARMS: Final = {
    "none": "no topology (default conf)",
    "plugin": "network-topology-aware, no job topology",
    "soft": "network-topology-aware, soft",
    "hard": "network-topology-aware, hard",
}
DEFAULT_ARMS: Final = ("none", "soft", "hard")
TOPOLOGY_PLUGIN: Final = "network-topology-aware"


# -- the fabric ----------------------------------------------------------------------------------


def two_tier_fabric(
    *, leaves: int = 8, nodes_per_leaf: int = 8, leaves_per_spine: int = 4, gpus_per_node: int = 8
) -> list[dict[str, Any]]:
    """Nodes ``gpu-00`` … and their HyperNodes: ``leaf-i`` (tier 1, picking its nodes by the
    ``example.com/leaf`` label) and ``spine-j`` (tier 2, naming its leaves). The defaults are
    ``examples/fabric/fabric.yaml``."""
    total = leaves * nodes_per_leaf
    width = max(2, len(str(total - 1)))
    objs: list[dict[str, Any]] = []
    for i in range(total):
        name = f"gpu-{i:0{width}d}"
        leaf = i // nodes_per_leaf
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        LEAF_LABEL: f"leaf-{leaf}",
                        SPINE_LABEL: f"spine-{leaf // leaves_per_spine}",
                    },
                },
                "status": {
                    "allocatable": {
                        "cpu": str(10 * gpus_per_node),
                        "memory": f"{64 * gpus_per_node}Gi",
                        "pods": "110",
                        GPU: str(gpus_per_node),
                    }
                },
            }
        )
    for leaf in range(leaves):
        selector = {"labelMatch": {"matchLabels": {LEAF_LABEL: f"leaf-{leaf}"}}}
        objs.append(_hyper_node(f"leaf-{leaf}", 1, "leaf", [{"type": "Node", "selector": selector}]))
    for spine in range(math.ceil(leaves / leaves_per_spine)):
        members = [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": f"leaf-{leaf}"}}}
            for leaf in range(spine * leaves_per_spine, min(leaves, (spine + 1) * leaves_per_spine))
        ]
        objs.append(_hyper_node(f"spine-{spine}", 2, "spine", members))
    return objs


def _hyper_node(name: str, tier: int, tier_name: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": HYPER_NODE_API,
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "tierName": tier_name, "members": members},
    }


@dataclass(frozen=True)
class Fabric:
    """GPU nodes and the HyperNodes over them. Each node's *leaf* is the lowest HyperNode holding
    it, its *spine* that leaf's parent; the nodes handed to a run carry them as the rack and zone
    labels the gang experiment's recorder counts."""

    nodes: tuple[dict[str, Any], ...]
    hyper_nodes: tuple[dict[str, Any], ...]
    leaf_of: Mapping[str, str]
    spine_of: Mapping[str, str]
    #: Tier → GPUs of its largest HyperNode.
    tier_gpus: Mapping[int, int]
    gpus: int
    gpus_per_node: int

    def node_objects(self) -> list[dict[str, Any]]:
        out = []
        for node in self.nodes:
            name = node["metadata"]["name"]
            labels = {
                **node["metadata"].get("labels", {}),
                RACK_LABEL: self.leaf_of[name],
                ZONE_LABEL: self.spine_of[name],
            }
            out.append({**node, "metadata": {**node["metadata"], "labels": labels}})
        return out

    def lowest_tier_for(self, gpus: int) -> int | None:
        """The lowest tier with a HyperNode of at least ``gpus`` GPUs (None: no HyperNode has)."""
        return min((t for t, g in self.tier_gpus.items() if g >= gpus), default=None)

    @property
    def leaves(self) -> int:
        return len(set(self.leaf_of.values()))


def fabric_from_objects(objs: Sequence[Mapping[str, Any]], source: str = "<fabric>") -> Fabric:
    """The fabric of these Nodes and HyperNodes (other kinds are refused)."""
    nodes: list[dict[str, Any]] = []
    hyper_objs: list[dict[str, Any]] = []
    hyper: list[HyperNode] = []
    for obj in objs:
        kind = obj.get("kind")
        if kind == "Node":
            nodes.append(dict(obj))
        elif kind == "HyperNode":
            hyper.append(HyperNode.from_dict(obj))
            hyper_objs.append(dict(obj))
        else:
            name = (obj.get("metadata") or {}).get("name")
            raise InputError(f"a fabric holds Nodes and HyperNodes only, got a {kind} ({name})", file=source)
    gpus_of = {str(n["metadata"]["name"]): _gpus(n, source) for n in nodes}
    if not any(gpus_of.values()):
        raise InputError(f"no node with {GPU} allocatable", file=source)
    if not hyper:
        raise InputError("no HyperNode: the fabric needs leaves (tier 1) and spines above them", file=source)
    labels = {str(n["metadata"]["name"]): dict(n["metadata"].get("labels") or {}) for n in nodes}
    tree = build_tree(hyper, labels)
    if not tree.ready:
        raise InputError(f"the HyperNodes do not form a tree: {tree.error}", file=source)
    leaf_of: dict[str, str] = {}
    spine_of: dict[str, str] = {}
    for name in labels:
        leaf = tree.leaf_of(name)
        if not leaf or leaf == CLUSTER_TOP_HYPER_NODE:
            raise InputError(f"node {name} is in no HyperNode", file=source)
        leaf_of[name] = leaf
        parent = tree.infos[leaf].parent
        spine_of[name] = parent if parent and parent != CLUSTER_TOP_HYPER_NODE else leaf
    tier_gpus: dict[int, int] = {}
    for info in tree.infos.values():
        if info.hyper_node is None:
            continue
        total = sum(gpus_of.get(n, 0) for n in info.real_nodes)
        tier_gpus[info.tier] = max(tier_gpus.get(info.tier, 0), total)
    return Fabric(
        tuple(nodes),
        tuple(hyper_objs),
        leaf_of,
        spine_of,
        tier_gpus,
        sum(gpus_of.values()),
        max(gpus_of.values()),
    )


def _gpus(node: Mapping[str, Any], source: str) -> int:
    value = ((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        name = (node.get("metadata") or {}).get("name")
        raise InputError(
            f"{GPU}: expected a whole number, got {value!r}",
            file=source,
            obj=f"Node/{name}",
            field=f"status.allocatable[{GPU}]",
        ) from None


def load_fabric(path: Path | None) -> Fabric:
    """The fabric of a manifest file or folder; None: :func:`two_tier_fabric`'s default."""
    if path is None:
        return fabric_from_objects(two_tier_fabric(), "<two-tier fabric>")
    if not path.exists():
        raise InputError("no such file", file=str(path))
    loaded = load_manifests([str(path)])
    return fabric_from_objects([mo.obj for mo in loaded.objects], str(path))


# -- arms ----------------------------------------------------------------------------------------


def topology_conf() -> BatchConf:
    """Volcano's default conf with ``network-topology-aware`` added to its second tier."""
    data = yaml.safe_load(DEFAULT_BATCH_CONF_YAML)
    data["tiers"][-1]["plugins"].append({"name": TOPOLOGY_PLUGIN})
    return batch_conf_from_dict(data, "<default conf + network-topology-aware>")


def run_topology_arm(
    arm: str,
    jobs: Sequence[Job],
    fabric: Fabric,
    *,
    workload: str = "philly",
    seed: int = 0,
    keep_simulation: bool = False,
) -> ArmResult:
    """Run ``jobs`` on ``fabric`` through one arm (:data:`ARMS`)."""
    if arm not in ARMS:
        raise InputError(f"unknown arm {arm!r}; known: {', '.join(ARMS)}")

    def network_topology(job: Job) -> dict[str, Any] | None:
        if arm in ("none", "plugin") or len(job.workers) < 2:
            return None
        tier = fabric.lowest_tier_for(job.gpus)
        if tier is None:  # wider than every HyperNode: only the whole cluster holds it
            return None
        return {"mode": arm, "highestTierAllowed": tier}

    return run_arm(
        "volcano",
        jobs,
        fabric,
        workload=workload,
        seed=seed,
        label=arm,
        batch_conf=None if arm == "none" else topology_conf(),
        extra=fabric.hyper_nodes,
        network_topology=network_topology,
        keep_simulation=keep_simulation,
    )


# -- summary -------------------------------------------------------------------------------------


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 < q ≤ 1) by nearest rank: the smallest value with at least ``q`` of
    the values at or below it (NaN for none)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def domains(job: JobResult, of: Mapping[str, str]) -> int:
    """How many domains (leaves, spines) a started job's pods were bound in."""
    return len({of[node] for node in job.placement})


@dataclass(frozen=True)
class TopologyRow:
    """One arm's numbers, for one seed or pooled over several (:func:`pooled_rows`)."""

    arm: str
    seeds: tuple[int, ...]
    jobs: int
    done: int
    pending: int
    multi_pod_jobs: int
    #: Multi-pod jobs by the number of leaves they spanned.
    leaves_hist: dict[int, int] = field(default_factory=dict)
    leaves_mean: float = math.nan
    one_leaf_pct: float = math.nan
    one_spine_pct: float = math.nan
    wait_mean_s: float = math.nan
    wait_p50_s: float = math.nan
    wait_p95_s: float = math.nan
    multi_wait_mean_s: float = math.nan
    multi_wait_p95_s: float = math.nan
    makespan_s: float = 0.0
    gpu_busy_pct: float = math.nan
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        out = {c: getattr(self, c) for c in TOPOLOGY_COLUMNS if c not in ("seeds", "leaves_hist")}
        out["seeds"] = " ".join(map(str, self.seeds))
        out["leaves_hist"] = " ".join(f"{k}:{v}" for k, v in sorted(self.leaves_hist.items()))
        return out


TOPOLOGY_COLUMNS: Final = (
    "arm",
    "seeds",
    "jobs",
    "done",
    "pending",
    "multi_pod_jobs",
    "leaves_hist",
    "leaves_mean",
    "one_leaf_pct",
    "one_spine_pct",
    "wait_mean_s",
    "wait_p50_s",
    "wait_p95_s",
    "multi_wait_mean_s",
    "multi_wait_p95_s",
    "makespan_s",
    "gpu_busy_pct",
    "wall_s",
)


def topology_rows(results: Sequence[ArmResult], fabric: Fabric) -> list[TopologyRow]:
    """One row per arm: leaves per multi-pod job (from where its pods were bound) and waits."""
    rows = []
    for r in results:
        started = [j for j in r.jobs if j.start is not None]
        multi = [j for j in started if j.pods > 1]
        leaves = [domains(j, fabric.leaf_of) for j in multi]
        spines = [domains(j, fabric.spine_of) for j in multi]
        waits = [j.queueing_delay for j in started if j.queueing_delay is not None]
        multi_waits = [j.queueing_delay for j in multi if j.queueing_delay is not None]
        window = max((j.arrival for j in r.jobs), default=0.0)
        rows.append(
            TopologyRow(
                arm=r.arm,
                seeds=(r.seed,),
                jobs=len(r.jobs),
                done=sum(1 for j in r.jobs if j.end is not None),
                pending=len(r.jobs) - len(started),
                multi_pod_jobs=len(multi),
                leaves_hist=dict(sorted(Counter(leaves).items())),
                leaves_mean=_mean([float(x) for x in leaves]),
                one_leaf_pct=100.0 * leaves.count(1) / len(leaves) if leaves else math.nan,
                one_spine_pct=100.0 * spines.count(1) / len(spines) if spines else math.nan,
                wait_mean_s=_mean(waits),
                wait_p50_s=nearest_rank(waits, 0.5),
                wait_p95_s=nearest_rank(waits, 0.95),
                multi_wait_mean_s=_mean(multi_waits),
                multi_wait_p95_s=nearest_rank(multi_waits, 0.95),
                makespan_s=r.makespan,
                gpu_busy_pct=(100.0 * r.time_average(r.busy, window) / r.total_gpus if window else math.nan),
                wall_s=r.wall_seconds,
            )
        )
    return rows


#: Pooled over seeds as sums: counts. Every other number is the mean of the seeds' values.
_SUMMED: Final = ("jobs", "done", "pending", "multi_pod_jobs")


def pooled_rows(rows: Sequence[TopologyRow]) -> list[TopologyRow]:
    """One row per arm (in the order first seen) over all its seeds: counts and the leaves
    histogram summed, every other number the mean of the seeds' (a percentile: the mean of the
    seeds' percentiles)."""
    by_arm: dict[str, list[TopologyRow]] = {}
    for row in rows:
        by_arm.setdefault(row.arm, []).append(row)
    out = []
    for arm, group in by_arm.items():
        hist: Counter[int] = Counter()
        for row in group:
            hist.update(row.leaves_hist)
        values: dict[str, Any] = {}
        for name in TOPOLOGY_COLUMNS:
            if name in ("arm", "seeds", "leaves_hist"):
                continue
            seen = [getattr(row, name) for row in group]
            if name in _SUMMED:
                values[name] = sum(seen)
            else:
                values[name] = _mean([v for v in seen if not math.isnan(v)])
        seeds = tuple(s for row in group for s in row.seeds)
        out.append(TopologyRow(arm=arm, seeds=seeds, leaves_hist=dict(sorted(hist.items())), **values))
    return out


def seed_table(rows: Sequence[TopologyRow]) -> str:
    """The spread over seeds: one line per arm and seed, the leaves and the waits (minutes)."""

    def num(value: float, digits: int = 1) -> str:
        return "" if math.isnan(value) else f"{value:.{digits}f}"

    lines = [
        "| arm | seed | leaves mean | on one leaf % | wait mean | wait p95 | multi-pod wait mean "
        "| multi-pod wait p95 | GPU busy % |",
        "| --- |" + " ---: |" * 8,
    ]
    for row in sorted(rows, key=lambda r: (list(ARMS).index(r.arm) if r.arm in ARMS else 99, r.seeds)):
        lines.append(
            f"| {row.arm} | {' '.join(map(str, row.seeds))} | {num(row.leaves_mean, 2)} "
            f"| {num(row.one_leaf_pct)} | {num(row.wait_mean_s / 60)} | {num(row.wait_p95_s / 60)} "
            f"| {num(row.multi_wait_mean_s / 60)} | {num(row.multi_wait_p95_s / 60)} "
            f"| {num(row.gpu_busy_pct)} |"
        )
    return "\n".join(lines) + "\n"


def markdown_table(rows: Sequence[TopologyRow]) -> str:
    """The side-by-side table (times in minutes of virtual time)."""

    def num(value: float, digits: int = 1) -> str:
        return "" if math.isnan(value) else f"{value:.{digits}f}"

    head = (
        "| arm | done/jobs | multi-pod jobs | leaves per job (1/2/3/…) | leaves mean | on one leaf % "
        "| in one spine % | wait mean | wait p50 | wait p95 | multi-pod wait mean | multi-pod wait p95 "
        "| makespan | GPU busy % | wall s |"
    )
    lines = [head, "| --- |" + " ---: |" * 14]
    for row in rows:
        most = max(row.leaves_hist, default=0)
        hist = "/".join(str(row.leaves_hist.get(k, 0)) for k in range(1, most + 1))
        lines.append(
            f"| {row.arm} | {row.done}/{row.jobs} | {row.multi_pod_jobs} | {hist} "
            f"| {num(row.leaves_mean, 2)} "
            f"| {num(row.one_leaf_pct)} | {num(row.one_spine_pct)} | {num(row.wait_mean_s / 60)} "
            f"| {num(row.wait_p50_s / 60)} | {num(row.wait_p95_s / 60)} | {num(row.multi_wait_mean_s / 60)} "
            f"| {num(row.multi_wait_p95_s / 60)} | {num(row.makespan_s / 60)} | {num(row.gpu_busy_pct)} "
            f"| {num(row.wall_s)} |"
        )
    return "\n".join(lines) + "\n"
