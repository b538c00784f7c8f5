"""Placements of a pod group (upstream ``fwk.Placement``, KEP-5732): the node subsets a pod group
cycle tries the group on, and what a placement's trial proposed, for the PlacementScore plugins.

PlacementGenerate plugins (``generate_placements``) split the nodes into placements, e.g. one per
rack; the pod group cycle tries the group on each alone, and PlacementScore plugins
(``score_placement``, optionally ``normalize_placement_scores``) rank the feasible ones. The
framework finds such plugins among a profile's plugins by these methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.api.objects import Pod
from kubesched.framework.types import IntArray


@dataclass(slots=True)
class Placement:
    #: Diagnostics only (a topology domain's value, for TopologyPlacementGenerator).
    name: str
    #: Node slots of the snapshot's table the group may use.
    slots: IntArray


@dataclass(slots=True)
class ProposedAssignment:
    pod: Pod
    node: str


@dataclass(slots=True)
class PodGroupAssignments:
    """A feasible placement and the node each pod of the group got on it."""

    placement: Placement
    assignments: list[ProposedAssignment]


#: Upstream fwk.MinScore / fwk.MaxScore.
MIN_SCORE = 0
MAX_SCORE = 100
