"""How many feasible nodes a cycle looks for (upstream ``numFeasibleNodesToFind``)."""

from __future__ import annotations

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Small clusters are searched whole; large ones until ``max(5, 50 - N/125)`` percent of nodes
    (or the configured percentage) have been found feasible, but never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        pct = max(pct, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)
