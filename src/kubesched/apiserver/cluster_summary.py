"""``GET /kubesched/v1/cluster``: what the web UI's Cluster view draws, summed on the server.

Drawing a cluster from the list of every pod means sending, decoding and walking every pod (about
72 MB of JSON at 50,000 pods); the view needs only each node's requested resources, its pod count
and a few pod names, and how many pods wait for a node. This answer holds just that, a few hundred
bytes per busy node, as of a resourceVersion.

Summing every pod costs the server time that a busy ``serve`` would rather spend on writes, so a
summary is reused until the store has changed *and* the last one is old enough that recomputing it
keeps the server's share of time spent on summaries under :data:`MAX_SHARE`, however often clients
ask. An unchanged summary is answered without a body when the client already has it
(``?resourceVersion=`` naming it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.api.resources import pod_requests
from kubesched.apiserver.handlers.responses import json_response
from kubesched.errors import InputError
from kubesched.registry.errors import method_not_allowed

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: At most this fraction of the server's time goes to computing summaries.
MAX_SHARE = 0.02
#: A summary is never recomputed more often than this (seconds).
MIN_INTERVAL = 1.0
#: Pod names listed per node (the rest are counted).
NAMES_PER_NODE = 8


@dataclass
class Summary:
    resource_version: int
    body: dict[str, Any]
    computed_at: float
    cost: float


def summarize(pods: Sequence[Mapping[str, Any]], resource_version: int) -> dict[str, Any]:
    """Per node: the requests of the pods bound to it that have not finished (CPU in cores, memory
    in bytes, other resources in their units, and ``pods``), how many there are, and the first
    names; plus the count of pods that wait for a node."""
    nodes: dict[str, dict[str, Any]] = {}
    pending = 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            pending += 1
            continue
        entry = nodes.get(node)
        if entry is None:
            entry = nodes[node] = {"requested": {}, "pods": 0, "names": []}
        try:
            requests, _ = pod_requests(spec)
        except InputError:
            requests = {}
        summed = entry["requested"]
        for resource, value in requests.items():
            summed[resource] = summed.get(resource, 0) + value
        entry["pods"] += 1
        if len(entry["names"]) < NAMES_PER_NODE:
            meta = pod.get("metadata") or {}
            entry["names"].append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    for entry in nodes.values():
        requested = entry["requested"]
        # The page shows CPU in cores; the store's sums are in milli-CPU.
        if "cpu" in requested:
            requested["cpu"] = requested["cpu"] / 1000
        requested["pods"] = entry["pods"]
    return {
        "kind": "ClusterSummary",
        "resourceVersion": str(resource_version),
        "pods": len(pods),
        "pending": pending,
        "nodes": nodes,
    }


def _current(server: ApiServer) -> Summary:
    now = time.monotonic()
    known: Summary | None = server.cluster_summary
    if known is not None:
        if server.store.resource_version == known.resource_version:
            return known
        if now - known.computed_at < max(MIN_INTERVAL, known.cost / MAX_SHARE):
            return known
    started = time.perf_counter()
    pods, rv = server.store.list_with_version("Pod")
    body = summarize(pods, rv)
    summary = Summary(rv, body, now, time.perf_counter() - started)
    server.cluster_summary = summary
    return summary


async def cluster_summary(server: ApiServer, request: web.Request) -> web.Response:
    if request.method != "GET":
        raise method_not_allowed()
    summary = _current(server)
    if request.query.get("resourceVersion") == str(summary.resource_version):
        return web.Response(status=304)
    return json_response(summary.body, headers={"Cache-Control": "no-store"})
