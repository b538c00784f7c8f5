"""Pods nominated to run on a node (upstream ``nominator``).

Preemption evicts victims on a node and *nominates* the preemptor there (``status.nominatedNodeName``)
instead of binding it at once: the victims must go first. Until the preemptor is bound, the nominator
remembers the reservation so that Filter counts the preemptor on that node for every pod of lower or
equal priority, and so that the preemptor tries that node first on its next attempt. A nomination
ends when the pod is assumed onto a node, deleted, or nominated elsewhere (or cleared) by a later
preemption.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubesched.api.objects import Pod
from kubesched.framework.nominated_pods import NominationListener


class Nominator:
    """Node name → nominated pods (in nomination order), and pod uid → its node."""

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, Pod]] = {}
        self._node_of: dict[str, str] = {}
        self._listeners: list[NominationListener] = []

    def subscribe(self, listener: NominationListener) -> None:
        """Tell ``listener`` about every nomination, the current ones first."""
        self._listeners.append(listener)
        for node, pods in self._pods.items():
            for pod in pods.values():
                listener.nominated(pod, node)

    def __len__(self) -> int:
        return len(self._node_of)

    def add(self, pod: Pod, node: str) -> None:
        """Nominate ``pod`` to ``node``; an empty node name only clears an earlier nomination."""
        self.delete(pod.uid)
        if not node:
            return
        self._node_of[pod.uid] = node
        self._pods.setdefault(node, {})[pod.uid] = pod
        for listener in self._listeners:
            listener.nominated(pod, node)

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._pods[node]
        del pods[uid]
        if not pods:
            del self._pods[node]
        for listener in self._listeners:
            listener.unnominated(uid)

    def update(self, pod: Pod) -> None:
        """A nominated pod's object changed: keep its node, refresh the pod it refers to."""
        node = self._node_of.get(pod.uid)
        if node is not None:
            self._pods[node][pod.uid] = pod
            for listener in self._listeners:
                listener.nominated(pod, node)

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def pods_for_node(self, node: str) -> list[Pod]:
        pods = self._pods.get(node)
        return list(pods.values()) if pods else []

    def items(self) -> Iterator[tuple[str, dict[str, Pod]]]:
        """(node, uid → pod) for every node with nominated pods; treat the dicts as read-only."""
        return iter(self._pods.items())

    def nodes(self) -> Iterator[str]:
        """Nodes that have at least one nominated pod."""
        return iter(self._pods)
