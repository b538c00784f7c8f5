"""The FGD experiment through the scheduler: each trace pod is a Pod the kube-scheduler pipeline
places, asking for its GPUs by annotations or (``claims``) through a ResourceClaim.

:mod:`kubesched.sim.gpu_experiment` runs the policies' kernels on the per-card state directly.
Here the same cluster and the same tuned pod order go through an embedded cluster instead: nodes
with the trace's CPU, memory, cards and model; one profile with ``NodeResourcesFit``, ``GpuShare``,
``DynamicResources`` (filters in that order) and the policy's score plugin alone; every node
scored (``percentageOfNodesToScore: 100``). With claims, the simulated DRA driver publishes each
node's cards as shared devices (consumable capacity ``milli``, the ``DRAConsumableCapacity`` gate
on), and every GPU pod owns one ResourceClaim of the class ``gpu.kubesched.io`` asking for its cards
(``count``) and share (``capacity.requests.milli``), restricted to its models by a CEL selector.
DynamicResources allocates the claim and the allocated milli is what counts as allocated GPU.

Each pod is created, scheduled once and bound (its claim written) before the next is created; a
pod that fits nowhere is deleted (with its claim), so it is tried once, as in the authors'
procedure. The FGD plugin scores against the typical pods of the whole list, as the kernel does,
and ties go to the smallest node name unless ``tie_break`` is ``random``.

What differs from the kernel by design: a pod asking through a claim gets the cards the DRA
allocator finds first (the lowest-numbered device with enough ``milli`` left), not the card the
policy prefers, since the allocator does not score devices (docs/experiments.md measures the
effect). Random draws from the scheduler's generator, not the kernel's.
"""

from __future__ import annotations

import time
from typing import Any, Final

import numpy as np

from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.framework.config import config_from_dict
from kubesched.gpu.cards import (
    ANNOTATION_GPU_COUNT,
    ANNOTATION_GPU_MILLI,
    ANNOTATION_GPU_SPEC,
    GPU_RESOURCE,
    LABEL_GPU_MODEL,
    GpuDemand,
)
from kubesched.gpu.dra import allocated_cards, claim_spec, device_class
from kubesched.gpu.frag import PodShape, TypicalPods, frag_of, typical_pods
from kubesched.gpu.policies import POLICIES
from kubesched.plugins import default_registry
from kubesched.plugins.gpushare import FGD
from kubesched.sim.gpu_cells import CellResult, Cluster, PodList, tune_order
from kubesched.sim.simulation import Simulation

__all__ = ["POLICY_PLUGINS", "run_cell_scheduled"]

#: The score plugin of each policy.
POLICY_PLUGINS: Final = {
    "Random": "GpuRandom",
    "DotProd": "GpuDotProd",
    "GpuClustering": "GpuClustering",
    "GpuPacking": "GpuPacking",
    "BestFit": "GpuBestFit",
    "FGD": "FGD",
}
_NAMESPACE: Final = "default"
_CLAIM: Final = "gpu"
#: Nodes take as many pods as fit by CPU, memory and cards, as in the authors' simulator.
_MAX_PODS: Final = 100_000


def _config(policy: str, claims: bool) -> Any:
    plugin = POLICY_PLUGINS[policy]
    enabled = ["PrioritySort", "NodeResourcesFit", "GpuShare", "DynamicResources", plugin, "DefaultBinder"]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "featureGates": {"DRAConsumableCapacity": claims},
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": name} for name in enabled],
                    },
                    "score": {"disabled": [{"name": "*"}], "enabled": [{"name": plugin}]},
                },
            }
        ],
    }
    return config_from_dict(doc, default_registry())


def _node(cluster: Cluster, i: int) -> dict[str, Any]:
    name = cluster.names[i]
    labels = {"kubernetes.io/hostname": name}
    model = cluster.models[int(cluster.model[i])]
    if model:
        labels[LABEL_GPU_MODEL] = model
    allocatable = {
        "cpu": f"{int(cluster.cpu[i])}m",
        "memory": f"{int(cluster.memory[i])}Mi",
        "pods": str(_MAX_PODS),
    }
    if int(cluster.count[i]):
        allocatable[GPU_RESOURCE] = str(int(cluster.count[i]))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def _pod(name: str, shape: PodShape, memory: int, claims: bool) -> list[dict[str, Any]]:
    """The pod (and its claim) for one trace pod."""
    requests = {"cpu": f"{shape.cpu}m", "memory": f"{memory}Mi"}
    container: dict[str, Any] = {"name": "main", "image": "trace", "resources": {"requests": requests}}
    meta: dict[str, Any] = {"name": name, "namespace": _NAMESPACE}
    spec: dict[str, Any] = {"containers": [container]}
    out: list[dict[str, Any]] = []
    if shape.count and shape.milli:
        if claims:
            demand = GpuDemand(shape.count, shape.milli, shape.models)
            out.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": _NAMESPACE},
                    "spec": claim_spec(demand),
                }
            )
            container["resources"]["claims"] = [{"name": _CLAIM}]
            spec["resourceClaims"] = [{"name": _CLAIM, "resourceClaimName": name}]
        else:
            meta["annotations"] = {
                ANNOTATION_GPU_COUNT: str(shape.count),
                ANNOTATION_GPU_MILLI: str(shape.milli),
                ANNOTATION_GPU_SPEC: shape.spec,
            }
    out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return out


def run_cell_scheduled(
    cluster: Cluster,
    pods: PodList,
    policy: str,
    seed: int,
    tp: TypicalPods | None = None,
    tie_break: str = "name",
    *,
    claims: bool = True,
) -> CellResult:
    """One policy on one shuffled, tuned pod list through the scheduler (module doc)."""
    if tie_break not in ("name", "random"):
        raise ValueError(f"tie_break must be name or random, not {tie_break!r}")
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    started = time.perf_counter()
    if tp is None:
        tp = typical_pods(pods.shapes, cluster.models)
    order = tune_order(pods, cluster.gpu_milli, seed)
    sim = Simulation(
        _config(policy, claims),
        default_registry(),
        seed=seed,
        volume_controllers=False,
        dra_driver=DraDriverOptions(sharing=True) if claims else None,
    )
    sched = sim.scheduler
    sched.tie_break_by_name = tie_break == "name"
    for fwk in sched.profiles.values():
        for plugin in fwk.score:
            if isinstance(plugin[0], FGD):
                plugin[0].use_typical(tp, cluster.models)
    store = sim.store
    if claims:
        store.create(device_class())
    for i in sorted(range(len(cluster.names)), key=lambda i: cluster.names[i]):
        store.create(_node(cluster, i))
    sim.driver.run(0.0)

    index = {name: i for i, name in enumerate(cluster.names)}
    cards_state = sim.cluster.feed.cache.gpu_cards
    width = max(1, int(cluster.count.max()))
    cpu_left = cluster.cpu.copy()
    cards_now = np.zeros((len(cluster.names), width), dtype=np.int64)
    cards_now[np.arange(width)[None, :] < cluster.count[:, None]] = 1000
    frag_now = frag_of(cpu_left, cards_now, cluster.model, tp)
    frag_sum = float(frag_now.sum())
    arrived = np.zeros(len(order), dtype=np.int64)
    used = np.zeros(len(order), dtype=np.int64)
    frag = np.zeros(len(order), dtype=np.float64)
    arrived_milli = used_milli = failed = 0
    for k, p in enumerate(order.tolist()):
        shape = pods.shapes[p]
        name = f"pod-{k:06d}"
        arrived_milli += shape.count * shape.milli
        for obj in _pod(name, shape, int(pods.memory[p]), claims):
            store.create(obj)
        sim.driver.run(0.0)
        placed = store.get("Pod", _NAMESPACE, name)
        node = str(((placed or {}).get("spec") or {}).get("nodeName") or "")
        if not node:
            failed += 1
            store.delete("Pod", _NAMESPACE, name)
            if claims and shape.count:
                store.delete("ResourceClaim", _NAMESPACE, name)
            sim.driver.run(0.0)
        else:
            used_milli += _allocated_milli(sim, name, shape, claims)
            j = index[node]
            cpu_left[j] -= shape.cpu
            left = cards_state.left(node)
            if left is not None:
                cards_now[j] = left[:width]
            one = np.array([j])
            new = float(frag_of(cpu_left[one], cards_now[one], cluster.model[one], tp)[0])
            frag_sum += new - float(frag_now[j])
            frag_now[j] = new
        arrived[k] = arrived_milli
        used[k] = used_milli
        frag[k] = frag_sum
    sim.cluster.close()

    return CellResult.from_steps(
        cluster,
        pods,
        policy,
        seed,
        len(order),
        failed,
        time.perf_counter() - started,
        (arrived, used, frag),
        {"path": "claims" if claims else "annotations"},
    )


def _allocated_milli(sim: Simulation, name: str, shape: PodShape, claims: bool) -> int:
    """The milli-GPU the bound pod was given: through claims, what its claim's allocation holds."""
    if not (claims and shape.count):
        return shape.count * shape.milli
    claim = sim.informers.informer("ResourceClaim").get(_NAMESPACE, name)
    held = allocated_cards(claim) if claim is not None else None
    if held is None:
        raise RuntimeError(f"pod {name} is bound but its claim holds no GPU")
    return sum(milli for _, milli in held[1])
