"""The framework's extension points and the names KubeSchedulerConfiguration uses for them."""

from __future__ import annotations

from enum import StrEnum


class ExtensionPoint(StrEnum):
    """Extension points in the order a pod meets them. Values are the config field names."""

    PRE_ENQUEUE = "preEnqueue"
    QUEUE_SORT = "queueSort"
    PRE_FILTER = "preFilter"
    FILTER = "filter"
    POST_FILTER = "postFilter"
    PRE_SCORE = "preScore"
    SCORE = "score"
    RESERVE = "reserve"
    PERMIT = "permit"
    PRE_BIND = "preBind"
    BIND = "bind"
    POST_BIND = "postBind"
    # A pod group's placements (KEP-5732, v1.36): generated, then the feasible ones scored.
    PLACEMENT_GENERATE = "placementGenerate"
    PLACEMENT_SCORE = "placementScore"


#: Config field for "every extension point the plugin implements".
MULTI_POINT = "multiPoint"
