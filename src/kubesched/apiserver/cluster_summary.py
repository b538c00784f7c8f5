"""``GET /kubesched/v1/cluster``: what the web UI's Cluster view draws, summed on the server.

Drawing a cluster from the list of every pod means sending, decoding and walking every pod (about
72 MB of JSON at 50,000 pods); the view needs only each node's requested resources, its pod count
and a few pod names, and how many pods wait for a node. This answer holds just that, a few hundred
bytes per busy node, as of a resourceVersion.

The sums are kept per node and brought up to date from the store's recent changes when a summary
is asked for (a walk over every pod only at the first, or when the changes since were dropped).
One summary is shared by every client and reused until the store has changed *and* the last one is
old enough that making another keeps the server's share of time spent on summaries under
:data:`MAX_SHARE`, however often clients ask. An unchanged summary is answered without a body
when the client already has it (``?resourceVersion=`` naming it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from aiohttp import web

from kubesched.api.resources import pod_requests
from kubesched.apiserver.handlers.responses import json_response
from kubesched.errors import InputError
from kubesched.registry.errors import method_not_allowed
from kubesched.store.base import EventType, Obj, WatchEvent
from kubesched.store.sqlite import SqliteStore, TooOld

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: At most this fraction of the server's time goes to computing summaries.
MAX_SHARE = 0.02
#: A summary is never recomputed more often than this (seconds).
MIN_INTERVAL = 1.0
#: Pod names listed per node (the rest are counted).
NAMES_PER_NODE = 8
#: Changes read from the store at a time.
CHANGES_PAGE = 10_000


@dataclass
class Summary:
    resource_version: int
    body: dict[str, Any]
    computed_at: float
    cost: float


def _contribution(pod: Mapping[str, Any]) -> tuple[str | None, dict[str, int]]:
    """Where a pod counts: its node, ``""`` while it waits for one, None once it has finished;
    and its requests (empty unless on a node)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return None, {}
    spec = pod.get("spec") or {}
    node = spec.get("nodeName") or ""
    if not node:
        return "", {}
    try:
        # Pods of one shape share one dict of requests, which the sums only read.
        requests, _ = pod_requests(spec, shared=True)
    except InputError:
        requests = {}
    return node, requests


class VersionedFollower:
    """Something kept up to date from the store's changes that answers as of a version of its own.

    ``resource_version`` is the store's change it is brought up to; ``version`` the change that
    last altered what it shows. Most of a busy store's changes (Leases, Events, a pod's status that
    moves nothing shown) alter nothing: a client holding ``version`` is answered 304, and does not
    fetch and draw the same thing again. A change that alters it calls :meth:`altered`; a
    catch-up ends with :meth:`settle`."""

    def __init__(self, resource_version: int) -> None:
        self.resource_version = resource_version
        self.version = resource_version
        self._altered = False

    def altered(self) -> None:
        self._altered = True

    def settle(self) -> None:
        """Mark the changes read so far: when one of them altered what is shown, that is the
        version it is answered as of."""
        if self._altered:
            self.version = self.resource_version
            self._altered = False


def stands(
    store: SqliteStore, follower: VersionedFollower, checked_at: float, cost: float, now: float
) -> bool:
    """Whether an answer made from ``follower`` at ``checked_at`` still stands at ``now``
    (monotonic): the store has not changed since, or bringing it up to date again (``cost``
    seconds last time) so soon would take more than :data:`MAX_SHARE` of the server's time."""
    if store.resource_version == follower.resource_version:
        return True
    return now - checked_at < max(MIN_INTERVAL, cost / MAX_SHARE)


class Tally(VersionedFollower):
    """Every pod's contribution and each node's sums, kept up to date from the store's changes, so
    that a summary costs the changes since the last one rather than a walk over every pod."""

    def __init__(self, pods: Sequence[Mapping[str, Any]], resource_version: int) -> None:
        super().__init__(resource_version)
        self.pods: dict[tuple[str, str], tuple[str | None, dict[str, int]]] = {}
        self.requested: dict[str, dict[str, int]] = {}
        #: Per node its pods' names in arrival order (a dict as an ordered set).
        self.names: dict[str, dict[str, None]] = {}
        #: Per node its entry in the summary, kept until one of its pods changes, so that a summary
        #: rebuilds only the entries of the nodes that changed since the last.
        self._entries: dict[str, dict[str, Any]] = {}
        self.pending = 0
        for pod in pods:
            self.put(pod)

    @staticmethod
    def _key(pod: Mapping[str, Any]) -> tuple[str, str]:
        meta = pod.get("metadata") or {}
        return (meta.get("namespace") or "", meta.get("name") or "")

    def put(self, pod: Mapping[str, Any], key: tuple[str, str] | None = None) -> None:
        if key is None:
            key = self._key(pod)
        node, requests = contribution = _contribution(pod)
        if self.pods.get(key) == contribution:
            return
        self.remove(key)
        self.altered()
        self.pods[key] = (node, requests)
        if node == "":
            self.pending += 1
        elif node is not None:
            self._entries.pop(node, None)
            summed = self.requested.setdefault(node, {})
            for resource, value in requests.items():
                summed[resource] = summed.get(resource, 0) + value
            self.names.setdefault(node, {})[f"{key[0]}/{key[1]}"] = None

    def remove(self, key: tuple[str, str]) -> None:
        known = self.pods.pop(key, None)
        if known is None:
            return
        self.altered()
        node, requests = known
        if node == "":
            self.pending -= 1
        elif node is not None:
            self._entries.pop(node, None)
            summed = self.requested[node]
            for resource, value in requests.items():
                summed[resource] -= value
            names = self.names[node]
            del names[f"{key[0]}/{key[1]}"]
            if not names:
                del self.names[node]
                del self.requested[node]

    def body(self) -> dict[str, Any]:
        nodes: dict[str, Any] = {}
        for node, names in self.names.items():
            entry = self._entries.get(node)
            if entry is None:
                requested: dict[str, Any] = dict(self.requested[node])
                # The page shows CPU in cores; the sums are in milli-CPU.
                if "cpu" in requested:
                    requested["cpu"] = requested["cpu"] / 1000
                requested["pods"] = len(names)
                first = [name for name, _ in zip(names, range(NAMES_PER_NODE), strict=False)]
                entry = self._entries[node] = {"requested": requested, "pods": len(names), "names": first}
            nodes[node] = entry
        return {
            "kind": "ClusterSummary",
            "resourceVersion": str(self.version),
            "pods": len(self.pods),
            "pending": self.pending,
            "nodes": nodes,
        }


def summarize(pods: Sequence[Mapping[str, Any]], resource_version: int) -> dict[str, Any]:
    """Per node: the requests of the pods bound to it that have not finished (CPU in cores, memory
    in bytes, other resources in their units, and ``pods``), how many there are, and the first
    names; plus the count of pods that wait for a node."""
    return Tally(pods, resource_version).body()


class Follower(Protocol):
    """Something kept up to date from the store's changes to pods."""

    resource_version: int

    def put(self, pod: Mapping[str, Any], key: tuple[str, str] | None = None) -> None:
        """Take the pod's latest state; ``key``: its ``(namespace, name)`` when already known."""

    def remove(self, key: tuple[str, str]) -> None: ...


F = TypeVar("F", bound=Follower)


def catch_up(store: SqliteStore, follower: F | None, fresh: Callable[[list[Obj], int], F]) -> F:
    """``follower`` brought up to the store's latest published change; a fresh one from a listing
    when there is none yet or the changes since it are no longer kept."""
    if follower is not None:
        try:
            while True:
                changes = store.changes_since(follower.resource_version)
                # Only each pod's last change counts (a follower keeps a pod's latest state): a pod
                # created, bound and started within one catch-up is read once, not three times. The
                # pods are taken in any order: what a follower keeps does not depend on it.
                last: dict[tuple[str, str], WatchEvent] = {}
                for event in changes:
                    if event.kind == "Pod":
                        meta = event.obj["metadata"]
                        last[(meta.get("namespace") or "", meta.get("name") or "")] = event
                for key, event in last.items():
                    if event.type == EventType.DELETED:
                        follower.remove(key)
                    else:
                        follower.put(event.obj, key)
                if changes:
                    follower.resource_version = int(changes[-1].obj["metadata"]["resourceVersion"])
                if len(changes) < CHANGES_PAGE:
                    return follower
        except TooOld:
            pass
    pods, rv = store.list_with_version("Pod")
    return fresh(pods, rv)


def _catch_up(server: ApiServer) -> Tally:
    tally = server.pod_tally = catch_up(server.store, server.pod_tally, Tally)
    return tally


def _current(server: ApiServer) -> Summary:
    now = time.monotonic()
    known: Summary | None = server.cluster_summary
    before = server.pod_tally
    if (
        known is not None
        and before is not None
        and stands(server.store, before, known.computed_at, known.cost, now)
    ):
        return known
    started = time.perf_counter()
    tally = _catch_up(server)
    tally.settle()
    # The walk over every pod is made once (or when the changes since were dropped): what bounds
    # the share of time is the steady cost, a summary brought up to date from changes.
    cost = time.perf_counter() - started if tally is before else 0.0
    if known is not None and tally.version == known.resource_version:
        # Nothing the summary shows has changed: the same one, checked again no sooner than a
        # fresh one would have been made.
        summary = Summary(known.resource_version, known.body, now, cost)
    else:
        summary = Summary(tally.version, tally.body(), now, cost)
    server.cluster_summary = summary
    return summary


async def cluster_summary(server: ApiServer, request: web.Request) -> web.Response:
    if request.method != "GET":
        raise method_not_allowed()
    started = time.thread_time()
    try:
        summary = _current(server)
        if request.query.get("resourceVersion") == str(summary.resource_version):
            return web.Response(status=304)
        return json_response(summary.body, headers={"Cache-Control": "no-store"})
    finally:
        server.ui_cpu_seconds["cluster"] += time.thread_time() - started
