"""overcommit: admit a job (Pending → Inqueue) only while the minResources of admitted jobs fit in
the cluster times ``overcommit-factor`` (Volcano ``plugins/overcommit``, default factor 1.2).

The factor comes from the plugin's ``overcommit-factor`` argument or, as older Volcano confs give
it, from the ``enqueue`` action's ``configurations`` entry.
"""

from __future__ import annotations

import numpy as np

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import PERMIT, REJECT, JobInfo
from kubesched.batch.plugins.args import get_float
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import Session
from kubesched.batch.shares import MIN_RESOURCE, Vector

OVERCOMMIT_FACTOR = "overcommit-factor"
DEFAULT_OVERCOMMIT_FACTOR = 1.2


class OvercommitPlugin:
    name = "overcommit"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.factor = DEFAULT_OVERCOMMIT_FACTOR
        # The plugin's own argument wins over the enqueue action's; read here, it is checked when
        # the conf is loaded.
        self._own_factor: float | None = None
        if option.arguments.get(OVERCOMMIT_FACTOR) is not None:
            self._own_factor = get_float(
                option.arguments, OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR, plugin=self.name
            )

    def on_session_open(self, ssn: Session) -> None:
        factor = self._own_factor
        if factor is None:
            args = ssn.conf.action_arguments("enqueue")
            factor = get_float(args, OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR, plugin=self.name)
        if factor < 1.0:
            ssn.warnings.append(
                f"overcommit: {OVERCOMMIT_FACTOR} {factor} is below 1.0; using {DEFAULT_OVERCOMMIT_FACTOR}"
            )
            factor = DEFAULT_OVERCOMMIT_FACTOR
        self.factor = factor
        names = ssn.space.names
        used = ssn.used_array()[ssn.node_slots].sum(axis=0)
        idle: Vector = ssn.total_resource * factor - used
        # What admitted jobs reserve: all of minResources while Inqueue, the part not held yet
        # while Running with minMember tasks holding resources (kept per queue by the scheduler).
        totals = ssn.queue_totals if ssn.queue_totals is not None else QueueTotals.of(ssn.space, ssn.jobs)
        inqueue: Vector = totals.reserved()

        def enqueueable(job: JobInfo) -> int:
            if not job.pod_group.min_resources:
                return PERMIT
            dims = np.array([n in job.pod_group.min_resources for n in names], dtype=np.bool_)
            want = inqueue + job.min_resources
            ok = (want < idle) | (np.abs(want - idle) < MIN_RESOURCE)
            bad = [names[i] for i in np.flatnonzero(dims & ~ok)]
            if not bad:
                return PERMIT
            msg = "resource in cluster is overused: " + ", ".join(f"overused {n}" for n in bad)
            ssn.record_pod_group_event(job, "Normal", "Unschedulable", msg)
            job.job_fit_errors = msg
            return REJECT

        def enqueued(job: JobInfo) -> None:
            nonlocal inqueue
            if job.pod_group.min_resources:
                inqueue = inqueue + job.min_resources

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        return None
