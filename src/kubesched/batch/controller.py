"""The PodGroup controller (Volcano's ``pg_controller``): a batch pod that names no PodGroup gets one
of its own, ``podgroup-<pod uid>`` with ``minMember: 1`` in the pod's queue (annotation
``scheduling.volcano.sh/queue-name``, else ``default``)."""

from __future__ import annotations

import logging
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.volcano import DEFAULT_QUEUE, VOLCANO_API_VERSION, PodGroup
from kubesched.batch.jobs import JobCache
from kubesched.store.base import StoreError
from kubesched.store.ports import PodGroupStatusWriter

log = logging.getLogger(__name__)

#: Pod annotation naming the queue of the PodGroup created for a pod without one.
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"


class PodGroupController:
    def __init__(self, writer: PodGroupStatusWriter, jobs: JobCache) -> None:
        self.writer = writer
        self.jobs = jobs
        #: Pods whose PodGroup could not be created, so that each is reported once.
        self.refused: set[str] = set()

    def ensure_own_group(self, pod: Pod) -> None:
        """Volcano's controller gives a batch pod without a PodGroup one of its own."""
        name = f"podgroup-{pod.uid}"
        key = f"{pod.namespace}/{name}"
        if key in self.jobs.pod_groups:
            return
        queue = pod.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
        obj: dict[str, Any] = {
            "apiVersion": VOLCANO_API_VERSION,
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": pod.namespace,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}],
            },
            "spec": {"minMember": 1, "queue": queue, "priorityClassName": pod.priority_class_name or None},
        }
        try:
            created = self.writer.create_pod_group(obj)
        except StoreError as exc:
            # A cluster without Volcano's CRDs, or credentials that may not create PodGroups: the
            # pod waits (as it would for Volcano's controller) and the log says why.
            if pod.uid not in self.refused:
                self.refused.add(pod.uid)
                log.warning(
                    "pod %s/%s is for the batch scheduler but its PodGroup %s cannot be created: %s",
                    pod.namespace,
                    pod.name,
                    name,
                    exc,
                )
            return
        self.refused.discard(pod.uid)
        self.jobs.set_pod_group(key, PodGroup.from_dict(created))


__all__ = ["QUEUE_NAME_ANNOTATION", "PodGroupController"]
