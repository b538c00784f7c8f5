"""The simulated kubelets' node heartbeats (upstream kubelet's ``nodelease`` controller): each
node's kubelet keeps a Lease named after the node in ``kube-node-lease``, holder the node,
``leaseDurationSeconds`` 40, renewed every 10 seconds (a quarter of the duration), owned by the
Node so that it goes with it. ``kubectl describe node`` shows it."""

from __future__ import annotations

import contextlib
import heapq
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

NAMESPACE = "kube-node-lease"
#: kubelet's ``nodeLeaseDurationSeconds``.
LEASE_DURATION = 40
#: kubelet renews at a quarter of the duration.
RENEW_INTERVAL = LEASE_DURATION / 4


def spread(name: str) -> float:
    """A fraction in [0, 1) that is the same for a node name in every run."""
    return zlib.crc32(name.encode()) % 1000 / 1000


def micro_time(seconds: float) -> str:
    """A ``MicroTime`` stamp, as Leases carry their times."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NodeLeaseController:
    """Renews each node's Lease when due; a tick's renewals share one commit."""

    def __init__(
        self, store: SqliteStore, informers: InformerFactory, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.clock = clock
        #: (due, node name, node uid): when each node's lease is next renewed.
        self._due: list[tuple[float, str, str]] = []
        #: Node name → uid, of the nodes that exist.
        self._nodes: dict[str, str] = {}
        informers.informer("Node").add_handler(self._on_node)

    def _on_node(self, change: Change[Any]) -> None:
        meta = change.obj.get("metadata") or {}
        name, uid = str(meta.get("name")), str(meta.get("uid"))
        if change.type == EventType.DELETED:
            self._nodes.pop(name, None)
        elif self._nodes.get(name) != uid:
            self._nodes[name] = uid
            heapq.heappush(self._due, (0.0, name, uid))

    @property
    def next_due(self) -> float | None:
        return self._due[0][0] if self._due else None

    def sync(self) -> None:
        now = self.clock()
        if not self._due or self._due[0][0] > now:
            return
        with self.store.transaction():
            while self._due and self._due[0][0] <= now:
                _, name, uid = heapq.heappop(self._due)
                if self._nodes.get(name) != uid:
                    continue  # deleted, or made again (its own entry renews it)
                first = self._renew(name, uid, now)
                # The first renewal comes sooner by a part of the interval that is the node's own,
                # so that the nodes of a cluster that started at once do not renew together.
                wait = RENEW_INTERVAL * (0.5 + 0.5 * spread(name)) if first else RENEW_INTERVAL
                heapq.heappush(self._due, (now + wait, name, uid))

    def _renew(self, name: str, uid: str, now: float) -> bool:
        """Create or renew the node's lease; True when it was created."""
        stamp = micro_time(now)
        lease = self.store.get("Lease", NAMESPACE, name)
        spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION, "renewTime": stamp}
        owner = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]
        if lease is None:
            # A create that fails is tried again at the next renewal.
            with contextlib.suppress(AlreadyExists, Conflict):
                self.store.create(
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": owner},
                        "spec": spec,
                    }
                )
            return True
        meta = dict(lease.get("metadata") or {})
        meta["ownerReferences"] = owner
        with contextlib.suppress(Conflict, NotFound):
            # A lease another writer changed in between is renewed at the next interval.
            self.store.update({**lease, "metadata": meta, "spec": {**(lease.get("spec") or {}), **spec}})
        return False
