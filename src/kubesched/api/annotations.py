"""The annotations kubesched reads on pods, as keys: lifetimes for replays, and the gang and queue
keys upstream coscheduling and Volcano read."""

from __future__ import annotations

from typing import Final

#: Offset of the pod's arrival from the start of the workload (a duration string).
ANNOTATION_ARRIVAL: Final = "kubesched.io/arrival"
#: How long the pod runs once bound; absent means it never finishes.
ANNOTATION_DURATION: Final = "kubesched.io/duration"
#: The PodGroup a pod belongs to (upstream coscheduling / Volcano both read this key).
ANNOTATION_GROUP: Final = "scheduling.k8s.io/group-name"
#: The Volcano queue of a pod that has no PodGroup of its own.
ANNOTATION_QUEUE: Final = "scheduling.volcano.sh/queue-name"

VOLCANO_API: Final = "scheduling.volcano.sh/v1beta1"
