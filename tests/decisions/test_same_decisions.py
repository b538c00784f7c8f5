"""Random clusters whose scheduling decisions are recorded, so a restructuring of the scheduler can
be checked to change no placement, message or eviction.

``cluster(seed)`` builds one cluster from a seed alone (Python's ``random.Random``, so the same seed
gives the same cluster on every machine): nodes in zones with taints, cordons and GPUs, pods of both
pipelines with priorities, PDBs, node selectors and affinities, inter-pod anti-affinity, topology
spread, arrivals and durations, and Volcano queues and gangs under one of several batch confs (with
preempt and reclaim in some). ``decide(seed)`` runs it through the embedded simulation and returns
everything a user sees: each pod's node, status and message, the evictions, the queue and PodGroup
tables, and a digest of the ``--explain`` detail (every filter reason and score per node).

``python tests/decisions/test_same_decisions.py record`` rewrites ``recorded.json`` from the current code.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.batch.conf import BatchConf
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.cli.simulate import result_document
from kubesched.sim.simulation import Simulation

RECORDED = Path(__file__).with_name("recorded.json")
SEEDS = range(300)

VOLCANO = "scheduling.volcano.sh/v1beta1"
GPU = "example.com/gpu"

BATCH_CONFS: list[dict[str, Any] | None] = [
    None,
    {
        "actions": "enqueue, allocate, preempt, reclaim, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {
                "plugins": [
                    {"name": "drf"},
                    {"name": "predicates"},
                    {"name": "proportion"},
                    {"name": "nodeorder"},
                ]
            },
        ],
    },
    {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}]},
            {
                "plugins": [
                    {"name": "overcommit"},
                    {"name": "drf"},
                    {"name": "predicates"},
                    {"name": "proportion"},
                    {"name": "nodeorder"},
                    {"name": "binpack"},
                ]
            },
        ],
    },
    {
        "actions": "allocate, reclaim, preempt",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "binpack"}]},
        ],
    },
]


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    zone = f"zone-{rng.randrange(3)}"
    name = f"node-{i}"
    alloc: dict[str, str] = {
        "cpu": str(rng.choice([2, 4, 8, 16])),
        "memory": f"{rng.choice([4, 8, 16, 32, 64])}Gi",
        "pods": str(rng.choice([4, 8, 110])),
    }
    if rng.random() < 0.3:
        alloc[GPU] = str(rng.choice([1, 2, 4, 8]))
    spec: dict[str, Any] = {}
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "dedicated", "value": rng.choice(["ml", "db"]), "effect": "NoSchedule"}]
    if rng.random() < 0.08:
        spec["unschedulable"] = True
    labels = {
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": zone,
        "disk": rng.choice(["ssd", "hdd"]),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _resources(rng: random.Random, gpus: bool) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if rng.random() < 0.9:
        requests["cpu"] = f"{rng.choice([100, 250, 500, 1000, 2000, 3000])}m"
    if rng.random() < 0.8:
        requests["memory"] = f"{rng.choice([128, 512, 1024, 4096, 8192])}Mi"
    out: dict[str, Any] = {"requests": requests}
    if gpus and rng.random() < 0.25:
        n = str(rng.choice([1, 2, 4]))
        requests[GPU] = n
        out["limits"] = {GPU: n}
    return out


def _default_pod(rng: random.Random, i: int, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    app = rng.choice(["web", "api", "cache", "batch"])
    meta: dict[str, Any] = {"name": f"pod-{i}", "namespace": rng.choice(["default", "team"])}
    meta["labels"] = {"app": app}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": f"img-{app}", "resources": _resources(rng, True)}],
        "priorityClassName": rng.choice(["low", "low", "mid", "high"]),
    }
    annotations: dict[str, str] = {}
    r = rng.random()
    if r < 0.15:
        spec["nodeSelector"] = {"disk": "ssd"}
    elif r < 0.25:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": rng.randint(1, 100),
                        "preference": {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-1"]}
                            ]
                        },
                    }
                ]
            }
        }
    elif r < 0.35:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    elif r < 0.42:
        spec["affinity"] = {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "cache"}},
                            "topologyKey": "topology.kubernetes.io/zone",
                        },
                    }
                ]
            }
        }
    elif r < 0.52:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": rng.choice([1, 2]),
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if rng.random() < 0.12:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    if rng.random() < 0.15 and nodes:
        spec["nodeName"] = rng.choice(nodes)["metadata"]["name"]
        spec["priorityClassName"] = "low"
    else:
        if rng.random() < 0.25:
            annotations["kubesched.io/arrival"] = f"{rng.randint(1, 120)}s"
        if rng.random() < 0.3:
            annotations["kubesched.io/duration"] = f"{rng.randint(5, 300)}s"
        if rng.random() < 0.05:
            spec["schedulingGates"] = [{"name": "example.com/hold"}]
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _batch_objects(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    queues = [f"q{i}" for i in range(rng.randint(1, 3))]
    for i, q in enumerate(queues):
        spec: dict[str, Any] = {"weight": rng.randint(1, 4), "reclaimable": rng.random() < 0.7}
        if rng.random() < 0.3:
            spec["capability"] = {"cpu": str(rng.choice([4, 8, 16])), "memory": "64Gi"}
        if i == 0 and rng.random() < 0.2:
            spec["capability"] = {"cpu": "2"}
        out.append({"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": q}, "spec": spec})
    for g in range(rng.randint(1, 4)):
        size = rng.randint(1, 5)
        pg_spec: dict[str, Any] = {
            "minMember": rng.randint(1, size),
            "queue": rng.choice(queues),
            "priorityClassName": rng.choice(["low", "mid", "high"]),
        }
        out.append(
            {
                "apiVersion": VOLCANO,
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "ml"},
                "spec": pg_spec,
            }
        )
        arrival = f"{rng.randint(1, 60)}s" if rng.random() < 0.3 else None
        for k in range(size):
            annotations = {"scheduling.k8s.io/group-name": f"g{g}"}
            if arrival is not None:
                annotations["kubesched.io/arrival"] = arrival
            if rng.random() < 0.3:
                annotations["kubesched.io/duration"] = f"{rng.randint(10, 200)}s"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"g{g}-{k}", "namespace": "ml", "annotations": annotations},
                    "spec": {
                        "schedulerName": "volcano",
                        "priorityClassName": pg_spec["priorityClassName"],
                        "containers": [{"name": "w", "image": "trainer", "resources": _resources(rng, True)}],
                    },
                }
            )
    return out


def cluster(seed: int) -> tuple[list[dict[str, Any]], BatchConf | None]:
    """The manifests of one random cluster, and the batch conf to run it with."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in ("team", "ml")
    ]
    for name, value in (("low", 0), ("mid", 100), ("high", 1000)):
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    nodes = [_node(rng, i) for i in range(rng.randint(3, 12))]
    objs.extend(nodes)
    objs.extend(_default_pod(rng, i, nodes) for i in range(rng.randint(4, 30)))
    if rng.random() < 0.4:
        objs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web-pdb", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    conf: BatchConf | None = None
    if rng.random() < 0.6:
        objs.extend(_batch_objects(rng))
        choice = BATCH_CONFS[rng.randrange(len(BATCH_CONFS))]
        conf = batch_conf_from_dict(choice) if choice is not None else None
    return objs, conf


def decide(seed: int) -> dict[str, Any]:
    """Run one corpus cluster; what a user sees of its decisions, as plain JSON data."""
    objs, conf = cluster(seed)
    loaded = LoadResult()
    for i, obj in enumerate(objs):
        loaded.objects.append(ManifestObject(obj["kind"], obj, f"corpus-{seed}", i))
    sim = Simulation(seed=seed, explain=True, batch_conf=conf)
    sim.load(loaded)
    result = sim.run()
    doc = result_document(result, explain=True)
    detail = {
        f"{p['namespace']}/{p['name']}": {k: v for k, v in p.items() if k not in _PLAIN_KEYS}
        for p in doc["pods"]
    }
    pods = [{k: v for k, v in p.items() if k in _PLAIN_KEYS} for p in doc["pods"]]
    digest = hashlib.sha256(json.dumps(detail, sort_keys=True).encode()).hexdigest()
    return {
        "pods": pods,
        "evicted": doc.get("evicted", []),
        "queues": doc.get("queues", []),
        "podGroups": doc.get("podGroups", []),
        "summary": doc.get("summary", {}),
        "explainDigest": digest,
    }


_PLAIN_KEYS = frozenset({"namespace", "name", "node", "status", "message"})


def record() -> None:
    data = {str(seed): decide(seed) for seed in SEEDS}
    RECORDED.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED.read_text())
    return data


@pytest.mark.parametrize("seed", SEEDS)
def test_same_decisions_as_recorded(seed: int, recorded: dict[str, Any]) -> None:
    assert decide(seed) == recorded[str(seed)]


if __name__ == "__main__":
    if sys.argv[1:] == ["record"]:
        record()
    else:
        print(json.dumps(decide(int(sys.argv[1])), indent=2))
