"""ImageLocality: favour nodes that already hold the pod's container images (upstream
``imagelocality``).

For every init container and container whose image (normalized: ``:latest`` added when the name has
no tag or digest) the node holds, the image adds ``int64(float64(size) * numNodes / totalNodes)``:
its size scaled by how widely it has spread, to avoid piling pods onto the few nodes with an image.
The sum is clamped to ``[23 MiB, 1000 MiB * number of containers]`` and mapped linearly, with
integer division, onto 0..100. No NormalizeScore. The NodeTable keeps one size column per image name
and how many nodes hold it, so a node's score is a gather per container image.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, IntArray
from kubesched.plugins.helper.sign import frozen

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: add ``:latest`` when the last ``:`` is not after the last
    ``/`` (no tag; a digest's ``sha256:`` counts as one)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: IntArray, num_containers: int) -> IntArray:
    """Upstream ``calculatePriority``, over an array of per-node sums."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.clip(sum_scores, MIN_THRESHOLD, max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name: ClassVar[str] = "ImageLocality"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        return (("ImageLocality.images", frozen(pod.images)),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        total_nodes = len(table.order)
        sums: IntArray | None = None
        for image in pod.images:
            name = normalized_image_name(image)
            num_nodes = table.image_nodes.get(name, 0)
            if num_nodes == 0:
                continue
            # Float arithmetic, truncated, exactly like upstream ``scaledImageScore``.
            spread = num_nodes / total_nodes
            scaled = (table.image_sizes[name][slots].astype(np.float64) * spread).astype(np.int64)
            sums = scaled if sums is None else sums + scaled
        if sums is None:
            # No node holds any of the images: every sum is under the minimum threshold.
            return np.zeros(len(slots), dtype=np.int64)
        return calculate_priority(sums, len(pod.images))
