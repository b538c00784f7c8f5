"""Alibaba GPU cluster trace 2023 ("openb", the FGD paper's trace): node lists and pod lists.

Nodes: ``sn,cpu_milli,memory_mib,gpu,model``. Pods:
``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]``.

GPU mapping (see ``docs/traces.md``): a node with G GPUs offers ``nvidia.com/gpu: G`` and
``kubesched.io/gpu-milli: 1000*G``. A pod asking for N whole GPUs (``gpu_milli == 1000``) requests
``nvidia.com/gpu: N`` and ``kubesched.io/gpu-milli: 1000*N``; a GPU-sharing pod (``gpu_milli < 1000``)
requests only ``kubesched.io/gpu-milli: gpu_milli``. This keeps the aggregate GPU share honest per node
but does not model which device a share sits on (FGD-style per-device packing needs a device-aware
plugin; the per-GPU share and count are kept as annotations for it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from kubesched.errors import InputError
from kubesched.sim.traces.generic import (
    GPU_RESOURCE,
    OnBadRow,
    RowError,
    Rows,
    as_dict,
    csv_rows,
    to_int,
    to_seconds,
)
from kubesched.sim.workload import Workload, WorkloadNode, WorkloadPod

GPU_MILLI_RESOURCE: Final = "kubesched.io/gpu-milli"
LABEL_GPU_MODEL: Final = "kubesched.io/gpu-model"
LABEL_QOS: Final = "kubesched.io/qos"
ANNOTATION_GPU_SPEC: Final = "kubesched.io/gpu-spec"
ANNOTATION_GPU_MILLI: Final = "kubesched.io/gpu-milli-per-gpu"
ANNOTATION_GPU_COUNT: Final = "kubesched.io/gpu-count"
ANNOTATION_PHASE: Final = "kubesched.io/trace-phase"

NODE_COLUMNS: Final = frozenset({"sn", "cpu_milli", "memory_mib", "gpu"})
POD_COLUMNS: Final = frozenset({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
_MIB: Final = 1 << 20
# Bounds that keep the derived amounts (bytes, milli-GPUs) within int64.
_MAX_MIB: Final = (2**63 - 1) >> 20
_MAX_GPUS: Final = (2**63 - 1) // 1000


def _node(rec: dict[str, str]) -> WorkloadNode:
    name = rec["sn"].strip()
    if not name:
        raise RowError("sn: empty node name")
    gpus = to_int(rec["gpu"], "gpu", maximum=_MAX_GPUS)
    node = WorkloadNode(
        name,
        {
            "cpu": to_int(rec["cpu_milli"], "cpu_milli"),
            "memory": to_int(rec["memory_mib"], "memory_mib", maximum=_MAX_MIB) * _MIB,
            "pods": 110,
        },
    )
    if gpus:
        node.allocatable[GPU_RESOURCE] = gpus
        node.allocatable[GPU_MILLI_RESOURCE] = gpus * 1000
    model = rec.get("model", "").strip()
    if model:
        node.labels[LABEL_GPU_MODEL] = model
    return node


def _pod(rec: dict[str, str]) -> tuple[WorkloadPod, float | None, float | None]:
    """The pod, its creation time and its deletion time (absolute trace seconds)."""
    name = rec["name"].strip()
    if not name:
        raise RowError("name: empty pod name")
    num_gpu = to_int(rec["num_gpu"], "num_gpu", maximum=_MAX_GPUS)
    gpu_milli = to_int(rec["gpu_milli"], "gpu_milli")
    if gpu_milli > 1000:
        raise RowError(f"gpu_milli: must be at most 1000, got {gpu_milli}")
    if num_gpu > 1 and gpu_milli != 1000:
        raise RowError(f"gpu_milli: a pod with {num_gpu} GPUs must use whole GPUs (1000), got {gpu_milli}")
    if (num_gpu == 0) != (gpu_milli == 0):
        raise RowError(f"num_gpu {num_gpu} and gpu_milli {gpu_milli} disagree")
    pod = WorkloadPod(name)
    cpu = to_int(rec["cpu_milli"], "cpu_milli")
    memory = to_int(rec["memory_mib"], "memory_mib", maximum=_MAX_MIB) * _MIB
    if cpu:
        pod.requests["cpu"] = cpu
    if memory:
        pod.requests["memory"] = memory
    if num_gpu:
        if gpu_milli == 1000:
            pod.requests[GPU_RESOURCE] = num_gpu
        pod.requests[GPU_MILLI_RESOURCE] = num_gpu * gpu_milli
        pod.annotations[ANNOTATION_GPU_COUNT] = str(num_gpu)
        pod.annotations[ANNOTATION_GPU_MILLI] = str(gpu_milli)
    spec = rec.get("gpu_spec", "").strip()
    if spec:
        pod.annotations[ANNOTATION_GPU_SPEC] = spec
    qos = rec.get("qos", "").strip()
    if qos:
        pod.labels[LABEL_QOS] = qos
    phase = rec.get("pod_phase", "").strip()
    if phase:
        pod.annotations[ANNOTATION_PHASE] = phase
    created = rec.get("creation_time", "").strip()
    deleted = rec.get("deletion_time", "").strip()
    start = to_seconds(created, "creation_time") if created else None
    end = to_seconds(deleted, "deletion_time") if deleted else None
    if start is not None and end is not None and end < start:
        raise RowError(f"deletion_time {deleted} is before creation_time {created}")
    if start is None and end is not None:
        raise RowError("deletion_time without creation_time")
    return pod, start, end


def load_alibaba_gpu_2023(path: Path, on_bad_row: OnBadRow = "skip", limit: int | None = None) -> Workload:
    """A node list or a pod list, told apart by the header."""
    source = str(path)
    workload = Workload()
    rows = Rows(source, workload, on_bad_row)
    times: list[tuple[WorkloadPod, float | None, float | None]] = []
    names: set[str] = set()
    with path.open(encoding="utf-8", newline="") as f:
        header, records = csv_rows(f, source)
        columns = set(header)
        is_nodes = columns >= NODE_COLUMNS
        if not is_nodes and not columns >= POD_COLUMNS:
            raise InputError(
                f"not an Alibaba GPU 2023 node or pod list: need {sorted(NODE_COLUMNS)} or "
                f"{sorted(POD_COLUMNS)}, got {header}",
                file=source,
            )
        for number, row in records:
            if limit is not None and len(names) >= limit:
                break
            try:
                rec = as_dict(header, row)
                if is_nodes:
                    node = _node(rec)
                    if node.name in names:
                        raise RowError(f"duplicate node {node.name}")
                    names.add(node.name)
                    workload.nodes.append(node)
                else:
                    entry = _pod(rec)
                    if entry[0].name in names:
                        raise RowError(f"duplicate pod {entry[0].name}")
                    names.add(entry[0].name)
                    times.append(entry)
            except RowError as exc:
                rows.bad(number, str(exc))
    origin = min((start for _, start, _ in times if start is not None), default=0.0)
    for pod, start, end in times:
        pod.arrival = start - origin if start is not None else 0.0
        pod.duration = end - start if start is not None and end is not None else None
        workload.pods.append(pod)
    return workload
