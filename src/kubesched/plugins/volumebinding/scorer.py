"""The storage capacity score (upstream ``volumebinding/scorer.go``, StorageCapacityScoring).

Per storage class the utilization ``requested * 100 / capacity`` (integer division; 100 when the
class has no capacity or is asked for more than it has) is mapped through the configured shape
(scores 0..10 scaled to 0..100); the node score is the mean over the classes, rounded half away
from zero like Go's ``math.Round``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kubesched.framework.plugin_args import UtilizationShapePoint
from kubesched.plugins.noderesources.requested_to_capacity_ratio import (
    Shape,
    broken_linear_function,
    scaled_shape,
)
from kubesched.plugins.volumebinding.binder import StorageResource

MAX_UTILIZATION = 100

#: ``score(class → resource)``.
VolumeCapacityScorer = Callable[[Mapping[str, StorageResource]], int]

#: The shape StorageCapacityScoring defaults to: the emptier the class on the node, the higher the
#: score (0% used: 10, 100% used: 0), so volumes spread over the nodes with the most free storage.
DEFAULT_SHAPE: tuple[UtilizationShapePoint, ...] = (
    UtilizationShapePoint(utilization=0, score=10),
    UtilizationShapePoint(utilization=100, score=0),
)


def build_scorer_function(shape: Shape) -> VolumeCapacityScorer:
    raw = broken_linear_function(shape)

    def utilization_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(class_resources: Mapping[str, StorageResource]) -> int:
        if not class_resources:
            return 0
        total = sum(utilization_score(r.requested, r.capacity) for r in class_resources.values())
        # Go's math.Round of a non-negative mean: halves go up.
        return (2 * total + len(class_resources)) // (2 * len(class_resources))

    return score


def scorer_from_args(points: Sequence[UtilizationShapePoint]) -> VolumeCapacityScorer:
    """The scorer of a configured shape (scores 0..10 as the args give them)."""
    return build_scorer_function(scaled_shape(points))
