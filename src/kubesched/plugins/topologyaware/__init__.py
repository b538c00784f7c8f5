"""TopologyPlacementGenerator (upstream ``plugins/topologyaware``, KEP-5732): one placement per
value of a PodGroup's topology key, so the pod group cycle tries the whole group inside one
domain (one rack, one block) at a time.

- A PodGroup without a topology constraint gets the parent placement as it is.
- Nodes without the label belong to no placement; a node labelled with the empty string is in the
  domain "".
- Pods of the group already assumed or bound pin the group to their domain; pods in two domains,
  on a node the snapshot lacks, or on a node without the label are an error.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.scheduling_groups import SchedulingPodGroup
from kubesched.framework.handle import Handle
from kubesched.framework.placement import Placement
from kubesched.framework.status import Status

NAME = "TopologyPlacementGenerator"


class TopologyPlacementGenerator:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError("TopologyPlacementGenerator needs a framework handle")
        self.handle = handle

    def generate_placements(
        self, pod_group: SchedulingPodGroup, parent: Placement
    ) -> tuple[list[Placement], Status | None]:
        if not pod_group.topology_keys:
            return [parent], None
        # The API allows one constraint today: the first is the one that counts.
        key = pod_group.topology_keys[0]
        snapshot = self.handle.snapshot
        required: str | None = None
        st = self.handle.pod_groups.state(pod_group.namespace, pod_group.name)
        for uid in sorted(st.assigned | st.assumed):
            pod = st.pods.get(uid)
            node_name = pod.node_name if pod is not None and pod.node_name else None
            info = snapshot.node_infos.get(node_name) if node_name else None
            if info is None or info.node is None:
                return [], Status.error(
                    f"cannot determine domain for already scheduled pods: getting node for pod "
                    f"{pod_group.namespace}/{pod.name if pod else uid}: node {node_name!r} not found"
                )
            domain = info.node.labels.get(key)
            if domain is None:
                return [], Status.error(
                    "cannot determine domain for already scheduled pods: no topology domain found for pod "
                    f"{pod_group.namespace}/{pod.name if pod else uid}"
                )
            if required is not None and required != domain:
                return [], Status.error(
                    "cannot determine domain for already scheduled pods: more than 1 domain found for "
                    f"pod group: {required}, {domain}"
                )
            required = domain
        column = snapshot.table.labels.get(key)
        if column is None:
            return [], None
        codes = column.codes[parent.slots]
        placements = []
        for code in np.unique(codes[codes >= 0]).tolist():
            domain = column.values[code]
            if required is not None and domain != required:
                continue
            placements.append(Placement(domain, parent.slots[codes == code]))
        return placements, None
