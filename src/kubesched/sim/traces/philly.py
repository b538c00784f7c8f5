"""Microsoft Philly per-job table (Pollux's ``philly.csv``): ``timestamp,duration,num_gpus,gpu_time,cluster``.

Each job becomes a Volcano PodGroup ``philly-<row>`` (``minMember`` = its workers) in the queue named
by its virtual cluster. A job of G GPUs has ceil(G/8) workers: full 8-GPU workers and, when G is not
a multiple of 8, one last worker with the rest (12 GPUs -> 8 + 4). ``timestamp`` (submission, no time
zone) becomes the arrival relative to the earliest submission read; ``duration`` (run seconds) the
lifetime. The rows are not sorted by time in the file; the pods are returned in arrival order.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Final

from kubesched.api.durations import MAX_DURATION
from kubesched.batch.conf import BATCH_SCHEDULER_NAME
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
from kubesched.sim.workload import GroupSpec, Workload, WorkloadPod

COLUMNS: Final = frozenset({"timestamp", "duration", "num_gpus", "cluster"})
GPUS_PER_WORKER: Final = 8
#: GPUs one job may ask for: each 8 become a pod, so a row cannot stand for millions of pods.
MAX_JOB_GPUS: Final = 100_000
LABEL_JOB: Final = "kubesched.io/job"
_TIME_FORMAT: Final = "%Y-%m-%d %H:%M:%S"


def worker_gpus(num_gpus: int, per_worker: int = GPUS_PER_WORKER) -> list[int]:
    """GPUs of each worker of a job: ``ceil(num_gpus / per_worker)`` workers, none above ``per_worker``."""
    workers = math.ceil(num_gpus / per_worker)
    return [min(per_worker, num_gpus - i * per_worker) for i in range(workers)]


def load_philly(path: Path, on_bad_row: OnBadRow = "skip", limit: int | None = None) -> Workload:
    source = str(path)
    workload = Workload()
    rows = Rows(source, workload, on_bad_row)
    jobs: list[tuple[datetime, float, int, str, int]] = []
    lines: list[int] = []  # the file line of each job
    with path.open(encoding="utf-8", newline="") as f:
        header, records = csv_rows(f, source)
        if not set(header) >= COLUMNS:
            raise InputError(
                f"not a Philly job table: need columns {sorted(COLUMNS)}, got {header}", file=source
            )
        for number, row in records:
            if limit is not None and len(jobs) >= limit:
                break
            try:
                rec = as_dict(header, row)
                try:
                    submitted = datetime.strptime(rec["timestamp"].strip(), _TIME_FORMAT)
                except ValueError:
                    raise RowError(
                        f"timestamp: expected YYYY-MM-DD HH:MM:SS, got {rec['timestamp']!r}"
                    ) from None
                duration = to_seconds(rec["duration"], "duration")
                num_gpus = to_int(rec["num_gpus"], "num_gpus", minimum=1, maximum=MAX_JOB_GPUS)
                cluster = rec["cluster"].strip()
                if not cluster:
                    raise RowError("cluster: empty virtual cluster")
            except RowError as exc:
                rows.bad(number, str(exc))
                continue
            jobs.append((submitted, duration, num_gpus, cluster, len(jobs)))
            lines.append(number)
    if not jobs:
        return workload
    origin = min(job[0] for job in jobs)
    jobs.sort(key=lambda job: (job[0], job[4]))
    for submitted, duration, num_gpus, cluster, index in jobs:
        arrival = (submitted - origin).total_seconds()
        if arrival > MAX_DURATION:
            rows.bad(
                lines[index],
                f"timestamp: {submitted} is more than Go's maximum duration (about 292 years) after the "
                f"earliest submission {origin}",
            )
            continue
        name = f"philly-{index:06d}"
        gpus = worker_gpus(num_gpus)
        workload.add_queue(cluster)
        workload.groups[name] = GroupSpec(name, len(gpus), cluster)
        for w, g in enumerate(gpus):
            workload.pods.append(
                WorkloadPod(
                    f"{name}-{w}",
                    arrival=arrival,
                    duration=duration,
                    requests={GPU_RESOURCE: g},
                    scheduler_name=BATCH_SCHEDULER_NAME,
                    group=name,
                    group_min_member=len(gpus),
                    queue=cluster,
                    labels={LABEL_JOB: name},
                )
            )
    return workload
