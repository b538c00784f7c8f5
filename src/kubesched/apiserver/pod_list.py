"""``GET /kubesched/v1/pods``: the web UI's Pods view, one page of rows at a time, made on the server.

The view shows pods that wait for a node first, with why, then the rest, a hundred at a time.
Drawing that from the list and watch of every pod means sending and decoding every pod (some 72 MB
of JSON at 50,000 pods) and sorting them in the browser, and, while it is open, sending every
change of every pod to it. Here the server keeps one short row per pod (its status, node and
reason, as the page words them), brought up to date from the store's recent changes as the
Cluster view's sums are (:func:`kubesched.apiserver.cluster_summary.catch_up`), and answers the
one page the client shows: waiting pods first, then the rest ordered by the field asked for,
optionally filtered. An unchanged page is answered without a body when the client already has it
(``?resourceVersion=`` naming it); the rows are brought up to date at most once a second, and less
often if doing so ever took more than 2 % of the time between two.

Query: ``offset`` and ``limit`` (at most :data:`MAX_LIMIT`) pick the page; ``filter`` keeps the
pods whose ``namespace/name``, status or node contains it; ``sort`` is ``name`` (the default),
``node``, ``status`` or ``created`` (oldest first), each after the waiting-first order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from aiohttp import web
from sortedcontainers import SortedList

from kubesched.apiserver.cluster_summary import VersionedFollower, catch_up, stands
from kubesched.apiserver.handlers.responses import json_response
from kubesched.registry.errors import bad_request, method_not_allowed

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: Rows answered when the client names no limit, and the most it may ask for.
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
#: Filtered lists kept for the next polls with the same filter (each as long as its matches).
FILTERS_KEPT = 8
#: The orders a page can be sorted by (after waiting pods first).
SORTS = ("name", "node", "status", "created")
#: An order no page has asked for in this many seconds is no longer kept up to date (it is made
#: again if asked for), so that a sort picked once costs nothing at every later change.
ORDER_IDLE = 60.0

#: Statuses of pods that wait for a node, in the order they are shown: refused by the scheduler,
#: held by scheduling gates, not tried yet. A pod bound to a node and not yet running comes next,
#: then everything else.
_RANK = {"Unschedulable": 0, "SchedulerError": 0, "SchedulingGated": 1, "Pending": 2}
_BOUND = 3
_LAST = 9


class Row(NamedTuple):
    rank: int
    key: str
    status: str
    node: str
    reason: str
    created: str


def pod_status(pod: Mapping[str, Any]) -> str:
    """What ``kubectl get pods`` would call the pod's state, with the scheduler's reason for one
    that it could not place (``Unschedulable``) and ``SchedulingGated`` for a gated one."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    phase = status.get("phase")
    if phase and phase != "Pending":
        return str(phase)
    if spec.get("nodeName"):
        return "Pending"
    if spec.get("schedulingGates"):
        return "SchedulingGated"
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason"):
            return str(cond["reason"])
    return "Pending"


def pod_reason(pod: Mapping[str, Any]) -> str:
    """Why the pod waits: the gates it waits for, or the message of its ``PodScheduled=False``."""
    spec = pod.get("spec") or {}
    gates = spec.get("schedulingGates") or []
    if gates and not spec.get("nodeName"):
        return "waiting for scheduling gates: [" + " ".join(str(g.get("name", "")) for g in gates) + "]"
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason") or "")
    return ""


def _row(pod: Mapping[str, Any], key: tuple[str, str] | None = None) -> Row:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    node = str(spec.get("nodeName") or "")
    if key is None:
        key = (meta.get("namespace") or "", meta.get("name") or "")
    status = pod_status(pod)
    rank = _RANK.get(status, _LAST)
    # Positional: a named tuple built from keywords costs twice as much, once per pod change.
    return Row(
        _BOUND if rank == _RANK["Pending"] and node else rank,
        f"{key[0]}/{key[1]}",
        status,
        node,
        pod_reason(pod),
        str(meta.get("creationTimestamp") or ""),
    )


def _place(row: Row, sort: str) -> tuple[int, str, str]:
    """Where a row goes in an order: waiting pods first, then by the field, then by name."""
    field = row.node if sort == "node" else row.status if sort == "status" else row.created
    return (row.rank, "" if sort == "name" else field, row.key)


class PodRows(VersionedFollower):
    """One row per pod, kept up to date from the store's changes. Each order asked for is kept as
    a sorted list of places (``SortedList``: a removal and an insertion in logarithmic time per
    change), so that a page costs its own rows and a change a few microseconds per order, not a
    sort of every pod, nor moving every place after it in one long list."""

    def __init__(self, pods: Sequence[Mapping[str, Any]], resource_version: int) -> None:
        # ``version``: what a page is as of, so that changes to other kinds (a node's status) do
        # not resend an unchanged page.
        super().__init__(resource_version)
        #: Per ``namespace/name`` its row (names hold no ``/``, so the key is unambiguous).
        self.rows: dict[str, Row] = {}
        self._orders: dict[str, SortedList] = {}
        #: When each kept order was last asked for (by ``clock``), to drop those no page shows.
        self._asked: dict[str, float] = {}
        self.clock = time.monotonic
        self._filtered: dict[tuple[str, str], list[Row]] = {}
        for pod in pods:
            self.put(pod)

    def put(self, pod: Mapping[str, Any], key: tuple[str, str] | None = None) -> None:
        row = _row(pod, key)
        old = self.rows.get(row.key)
        if old == row:
            return
        self.rows[row.key] = row
        for sort, order in self._orders.items():
            if old is not None:
                order.remove(_place(old, sort))
            order.add(_place(row, sort))
        self._touched()

    def remove(self, key: tuple[str, str]) -> None:
        old = self.rows.pop(f"{key[0]}/{key[1]}", None)
        if old is None:
            return
        for sort, order in self._orders.items():
            order.remove(_place(old, sort))
        self._touched()

    def _touched(self) -> None:
        self._filtered.clear()
        self.altered()

    def _order(self, sort: str) -> SortedList:
        now = self.clock()
        self._asked[sort] = now
        for idle in [o for o, asked in self._asked.items() if now - asked > ORDER_IDLE]:
            del self._asked[idle]
            self._orders.pop(idle, None)
        order = self._orders.get(sort)
        if order is None:
            order = self._orders[sort] = SortedList(_place(r, sort) for r in self.rows.values())
        return order

    def ordered(self, sort: str, text: str = "") -> list[Row]:
        """Every row in the order ``sort`` (waiting pods first), those matching ``text`` only when
        it is given; the filtered list is kept until the rows change."""
        order = self._order(sort)
        if not text:
            return [self.rows[place[2]] for place in order]
        known = self._filtered.get((sort, text))
        if known is None:
            rows = (self.rows[place[2]] for place in order)
            known = [r for r in rows if text in r.key or text in r.status or text in r.node]
            if len(self._filtered) >= FILTERS_KEPT:
                self._filtered.clear()  # a filter being typed leaves one list per keystroke
            self._filtered[(sort, text)] = known
        return known

    def page(self, offset: int, limit: int, sort: str, text: str = "") -> tuple[list[Row], int, int]:
        """The rows of one page, how many match and how many of those wait for a node."""
        if text:
            matched = self.ordered(sort, text)
            rows, count = matched[offset : offset + limit], len(matched)
            waiting = sum(1 for r in matched if r.rank < _BOUND)
            return rows, count, waiting
        order = self._order(sort)
        rows = [self.rows[place[2]] for place in order.islice(offset, offset + limit)]
        # Waiting pods come first: their count is where the first place ranked after them is.
        waiting = int(order.bisect_left((_BOUND, "", "")))
        return rows, len(order), waiting


def page(rows: PodRows, offset: int, limit: int, text: str, sort: str) -> dict[str, Any]:
    """The answer for one page: its rows, how many pods there are, match and wait for a node."""
    shown, matched, waiting = rows.page(offset, limit, sort, text)
    items = [
        {
            "namespace": r.key.partition("/")[0],
            "name": r.key.partition("/")[2],
            "status": r.status,
            "node": r.node,
            "reason": r.reason,
        }
        for r in shown
    ]
    return {
        "kind": "PodPage",
        "resourceVersion": str(rows.version),
        "total": len(rows.rows),
        "matched": matched,
        "waiting": waiting,
        "offset": offset,
        "items": items,
    }


@dataclass
class Freshness:
    """When the rows were last brought up to date and what that cost (for the share of time)."""

    checked_at: float
    cost: float


def current_rows(server: ApiServer) -> PodRows:
    """The server's rows, brought up to date when the store has changed and the last update is old
    enough that another keeps the time spent on them under
    :data:`~kubesched.apiserver.cluster_summary.MAX_SHARE`."""
    rows: PodRows | None = server.pod_rows
    fresh: Freshness | None = server.pod_rows_freshness
    now = time.monotonic()
    if (
        rows is not None
        and fresh is not None
        and stands(server.store, rows, fresh.checked_at, fresh.cost, now)
    ):
        return rows
    started = time.perf_counter()
    known = rows
    rows = server.pod_rows = catch_up(server.store, rows, PodRows)
    rows.settle()
    # A walk over every pod is made once (or when the changes since were dropped); what bounds
    # the share of time is the steady cost, bringing the rows up to date from changes.
    cost = time.perf_counter() - started if rows is known else 0.0
    server.pod_rows_freshness = Freshness(now, cost)
    return rows


def _number(request: web.Request, name: str, default: int, top: int) -> int:
    text = request.query.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f"{name} must be a whole number, not {text!r}") from None
    if value < 0 or value > top:
        raise bad_request(f"{name} must be between 0 and {top}, not {value}")
    return value


async def pod_list(server: ApiServer, request: web.Request) -> web.Response:
    if request.method != "GET":
        raise method_not_allowed()
    offset = _number(request, "offset", 0, 1 << 31)
    limit = _number(request, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    sort = request.query.get("sort") or "name"
    if sort not in SORTS:
        raise bad_request(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    started = time.thread_time()
    try:
        rows = current_rows(server)
        if request.query.get("resourceVersion") == str(rows.version):
            return web.Response(status=304)
        body = page(rows, offset, limit, request.query.get("filter", ""), sort)
        return json_response(body, headers={"Cache-Control": "no-store"})
    finally:
        server.ui_cpu_seconds["pods"] += time.thread_time() - started
