"""The columnar node state every plugin filters and scores in one go.

Rows are node *slots*; a slot keeps its number for the node's lifetime and is reused after the node
is gone. Resource columns are fixed for cpu (milli), memory (bytes), ephemeral-storage (bytes) and
pods (count); extended resources get columns as they appear. The resource matrices are stored
column-major, so each resource's column over all nodes is contiguous (what every plugin reads).
Labels are dictionary-encoded per key (-1 = label absent) and taint lists are interned: nodes share
a *taint signature* id, so a toleration check costs one Python evaluation per distinct taint list,
then one gather.

Host ports in use get one boolean column per ``(ip, protocol, port)`` and one per ``(protocol, port)``
(used with any IP), so a NodePorts check costs a few mask operations per wanted port. Images get one
size column per image name (0 = the node does not have it) and a count of the nodes holding it.

Pods are counted on a row through one accounting API, :meth:`NodeTable.add_pod` /
:meth:`NodeTable.remove_pod` (one pod) and :meth:`NodeTable.add_usage` (summed rows), or copied from a
:class:`NodeInfo` by :meth:`NodeTable.set_usage`; nothing else writes the ``requested``,
``nonzero_requested`` or port columns. "What if" users — a batch session, a preemption dry run, a
nominated-pod check — work on a :meth:`NodeTable.fork`: a table of their own that shares everything
with the snapshot's table except what they change, so the snapshot's table is never written to
(and needs nothing put back) by anyone but the cache.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import HostPort, Node
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, INT64_MAX, MEMORY, PODS
from kubesched.api.taints import Taint
from kubesched.cache.accounting import PodUsage
from kubesched.cache.node_info import NodeInfo

FIXED_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
CPU_COL, MEMORY_COL, EPHEMERAL_COL, PODS_COL = range(4)

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Above this, a value ceiling grown by additions is recomputed from the columns
#: (:meth:`NodeTable.value_ceiling`); below it, every guard it serves is skipped anyway.
_RECHECK_ABOVE = INT64_MAX // 1024
#: Rows changed between two headroom queries beyond which the bounds are recomputed instead.
_FLOOR_LOG_LIMIT = 64
#: Rows named by the entries of :attr:`NodeTable.change_log` before it starts over (a reader further
#: behind starts over too): counted in rows, not entries, so that entries of many rows at once
#: cannot hold more than this many slots.
_CHANGE_LOG_LIMIT = 1 << 16
#: Tables up to this many resource columns write a row's usage from a list in one assignment.
_ROW_AS_LIST_WIDTH = 16


@dataclass(slots=True)
class LabelColumn:
    """One label key across all nodes: an int code per slot and the vocabulary behind the codes."""

    codes: NDArray[np.int32]
    vocab: dict[str, int] = field(default_factory=dict)
    values: list[str] = field(default_factory=list)

    def code(self, value: str) -> int:
        c = self.vocab.get(value)
        if c is None:
            c = len(self.values)
            self.vocab[value] = c
            self.values.append(value)
        return c


class NodeTable:
    """NumPy arrays indexed by node slot. Only the cache's snapshot writes rows (:meth:`write`);
    forks change pod usage only, through the accounting API."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.resource_names: list[str] = list(FIXED_RESOURCES)
        self.resource_col: dict[str, int] = {n: i for i, n in enumerate(self.resource_names)}
        r = len(self.resource_names)
        self.names: list[str] = [""] * capacity
        self.slot_of: dict[str, int] = {}
        self.valid = np.zeros(capacity, dtype=np.bool_)
        # Column-major: every plugin reads whole resource columns, and NumPy's loops over a
        # contiguous column take a fraction of the work of a strided one.
        self.allocatable = np.zeros((capacity, r), dtype=np.int64, order="F")
        self.requested = np.zeros((capacity, r), dtype=np.int64, order="F")
        self.nonzero_requested = np.zeros((capacity, 2), dtype=np.int64, order="F")
        self.unschedulable = np.zeros(capacity, dtype=np.bool_)
        #: How many rows of ``unschedulable`` are set: a cluster without cordoned nodes (the usual
        #: one) needs no look at the column.
        self.cordoned = 0
        self.taint_sig = np.zeros(capacity, dtype=np.int32)
        self.signatures: list[tuple[Taint, ...]] = [()]
        self._sig_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.labels: dict[str, LabelColumn] = {}
        self._label_keys_of: list[tuple[str, ...]] = [()] * capacity
        #: (ip, protocol, port) → slots where a pod binds exactly that host IP (0.0.0.0 included).
        self.host_ports: dict[HostPort, BoolArray] = {}
        #: (protocol, port) → slots where a pod binds that port on any host IP.
        self.host_ports_any: dict[tuple[str, int], BoolArray] = {}
        self._ports_of: list[frozenset[HostPort]] = [frozenset()] * capacity
        #: Image name → its size on each slot (0: absent), and how many nodes hold it.
        self.image_sizes: dict[str, IntArray] = {}
        self.image_nodes: dict[str, int] = {}
        self._images_of: list[dict[str, int]] = [{}] * capacity
        #: The Node object each row was last written from: the same object again (a pod came or
        #: went) changes only the row's usage.
        self._node_of: list[Node | None] = [None] * capacity
        #: Slots of schedulable-candidate nodes in NodeTree (zone-interleaved) order.
        self.order: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        #: In a fork: the array attributes still shared with the table it was forked from, and the
        #: port masks it has made its own (``None``: not a fork, everything is its own).
        self._shared: set[str] = set()
        self._own_masks: set[object] | None = None
        #: Per slot, when its usage last changed in this (base) table: a counter bumped on every
        #: row write, so a reused fork (:meth:`refork`) knows which rows to copy again.
        self.row_stamp: IntArray = np.zeros(capacity, dtype=np.int64)
        self._stamp = 0
        #: The rows changed in this (base) table, in order (a slot or an array of slots each), for
        #: readers that follow changes row by row; ``change_log_start``: how many entries were
        #: dropped before the first one. A reader keeps its position (start + entries read).
        self.change_log: list[int | IntArray] = []
        self.change_log_start = 0
        self._change_log_rows = 0
        #: In a fork made by :meth:`refork`: its base, the base's stamps it has copied, and the rows
        #: it has changed since (``None`` elsewhere).
        self._base: NodeTable | None = None
        self._synced: IntArray | None = None
        self._touched: list[int | IntArray] | None = None
        #: The fork the last :meth:`what_if` block used, kept for the next one.
        self._spare: NodeTable | None = None
        #: A bound on the magnitude of every value in ``allocatable``, ``requested`` and
        #: ``nonzero_requested`` (see :meth:`value_ceiling`); ``_ceiling_exact``: it is their
        #: actual largest magnitude, not a bound grown by additions since.
        self._ceiling = 0
        self._ceiling_exact = True
        #: Per resource column, a lower bound of ``allocatable - requested`` over node rows (see
        #: :meth:`headroom_floor`), and the rows changed since the bounds were last brought up to
        #: date (``None``: too many to replay, recompute).
        self._floors: dict[int, int] = {}
        self._floor_log: list[int | IntArray] | None = []

    # -- shape -----------------------------------------------------------------------------------
    @property
    def num_resources(self) -> int:
        return len(self.resource_names)

    def column(self, resource: str) -> int:
        """Column of a resource, adding one (all zeros) the first time a name is seen."""
        col = self.resource_col.get(resource)
        if col is None:
            self._own("resource_names")
            self._own("resource_col")
            col = len(self.resource_names)
            self.resource_names.append(resource)
            self.resource_col[resource] = col
            self._add_resource_column()
            self._shared.discard("allocatable")
        return col

    def _add_resource_column(self) -> None:
        """Append a zero column to ``allocatable`` and ``requested``.

        Outside forks both are views of buffers with spare columns, doubled when full: a cluster
        with a resource per node (extended resources) adds thousands of columns, and copying the
        whole matrix for each would cost rows x columns per column.
        """
        width = self.allocatable.shape[1]
        if self.is_fork:
            for attr in ("allocatable", "requested"):
                narrow: IntArray = getattr(self, attr)
                wider = np.zeros((narrow.shape[0], width + 1), dtype=np.int64, order="F")
                wider[:, :width] = narrow
                setattr(self, attr, wider)
            return
        bufs: dict[str, IntArray] = self.__dict__.setdefault("_column_buffers", {})
        for attr in ("allocatable", "requested"):
            current: IntArray = getattr(self, attr)
            buf = bufs.get(attr)
            fits = buf is not None and buf.shape[1] > width and buf.shape[0] == current.shape[0]
            if buf is None or not fits or current.base is not buf:
                buf = np.zeros((current.shape[0], max(2 * width, width + 8)), dtype=np.int64, order="F")
                buf[:, :width] = current
                bufs[attr] = buf
            assert buf is not None
            setattr(self, attr, buf[:, : width + 1])

    # -- forks -----------------------------------------------------------------------------------
    @property
    def is_fork(self) -> bool:
        return self._own_masks is not None

    def fork(self, resources: Iterable[str] = ()) -> NodeTable:
        """A table that starts equal to this one and that the accounting API may change without
        touching this one: the usage columns are copied, port masks and the rest are shared until
        the fork writes them. ``resources`` get columns in the fork (in the order given) if this
        table has none. Rows cannot be rewritten in a fork (:meth:`write`), only their usage.

        A fork lives for one cycle or session: what it shares still follows its base, so the base
        must not be rewritten (a snapshot refresh) while the fork is in use."""
        # Every user of a fork changes usage at once, and readers may hold these arrays: copy now.
        t = self._fork_with(self.requested.copy(order="F"), self.nonzero_requested.copy(order="F"))
        for name in resources:
            t.column(name)
        return t

    def refork(self, previous: NodeTable | None) -> NodeTable:
        """:meth:`fork`, reusing the usage arrays of ``previous`` — an earlier ``refork`` of this
        table that nobody uses any more — when it can: then only the rows ``previous`` changed and
        the rows this table rewrote since are copied, instead of every row. For what-if checks run
        once per cycle (nominated pods), where copying the whole usage would cost more than the
        check."""
        prev = previous
        if (
            prev is None
            or prev._base is not self
            or prev._synced is None
            or prev._touched is None
            or prev.requested.shape != self.requested.shape
            or prev.nonzero_requested.shape != self.nonzero_requested.shape
        ):
            t = self.fork()
            t._synced = self.row_stamp.copy()
        else:
            synced = prev._synced
            stale = np.flatnonzero(self.row_stamp != synced)
            rows = (
                np.concatenate([stale, *(np.atleast_1d(r) for r in prev._touched)])
                if prev._touched
                else stale
            )
            if len(rows):
                prev.requested[rows] = self.requested[rows]
                prev.nonzero_requested[rows] = self.nonzero_requested[rows]
                synced[stale] = self.row_stamp[stale]
            t = self._fork_with(prev.requested, prev.nonzero_requested)
            t._synced = synced
            prev._touched = prev._synced = None  # its arrays are the new fork's now
        t._base = self
        t._touched = []
        return t

    def _fork_with(self, requested: IntArray, nonzero: IntArray) -> NodeTable:
        t = NodeTable.__new__(NodeTable)
        t.__dict__.update(self.__dict__)
        t.requested = requested
        t.nonzero_requested = nonzero
        # Shared until the fork writes them (a new column, a port mask, a row's ports).
        t._shared = {
            "allocatable",
            "_ports_of",
            "resource_names",
            "resource_col",
            "host_ports",
            "host_ports_any",
        }
        t._own_masks = set()
        t._base = t._synced = t._touched = t._spare = None
        return t

    @contextmanager
    def what_if(self) -> Iterator[NodeTable]:
        """A fork for one what-if check (see :meth:`refork`); once the block ends its arrays serve
        the next check, so do not keep the fork or its arrays."""
        fork = self.refork(self._spare)
        self._spare = None  # a check nested in this one gets a fork of its own
        try:
            yield fork
        finally:
            self._spare = fork

    def _changed(self, slots: int | IntArray) -> None:
        """Note a change of usage on rows: stamped in a base table, remembered in a reused fork."""
        if self._own_masks is None:
            self._stamp += 1
            self.row_stamp[slots] = self._stamp
            changes = self.change_log
            if isinstance(slots, int):
                changes.append(slots)
                self._change_log_rows += 1
            else:
                # A caller's array may be reused after the call.
                copied = np.array(slots)
                changes.append(copied)
                self._change_log_rows += copied.size
            if self._change_log_rows > _CHANGE_LOG_LIMIT:
                self.change_log_start += len(changes)
                self.change_log = []
                self._change_log_rows = 0
            log = self._floor_log
            if log is not None:
                if len(log) < _FLOOR_LOG_LIMIT:
                    log.append(slots)
                else:
                    self._floor_log = None
        elif self._touched is not None:
            self._touched.append(slots)

    def __copy__(self) -> NodeTable:
        # A shallow copy written to like a private table must not write the shared port masks.
        return self.fork()

    def _own(self, attr: str) -> None:
        if attr in self._shared:
            self._shared.discard(attr)
            setattr(self, attr, copy.copy(getattr(self, attr)))

    def _mask(self, attr: str, key: Any) -> BoolArray:
        """The port mask of ``key`` in ``host_ports`` or ``host_ports_any`` (created if absent),
        safe for this table to write."""
        self._own(attr)
        masks: dict[Any, BoolArray] = getattr(self, attr)
        mask = masks.get(key)
        own = self._own_masks
        if mask is None:
            mask = np.zeros(self.capacity, dtype=np.bool_)
            masks[key] = mask
            if own is not None:
                own.add(key)
        elif own is not None and key not in own:
            mask = mask.copy()
            masks[key] = mask
            own.add(key)
        return mask

    # -- value range -----------------------------------------------------------------------------
    def value_ceiling(self) -> int:
        """An upper bound of ``abs(v)`` over every allocatable, requested and non-zero requested
        value, kept up to date by every write: arithmetic that stays within int64 for this bound
        (the scorers' sums and ``x * 100``) can skip its overflow guards.

        Row writes keep the running maximum; pod additions grow the bound by what they add, and
        once that bound reaches the range where it matters it is recomputed from the columns."""
        if not self._ceiling_exact and self._ceiling > _RECHECK_ABOVE:
            top = 0
            for a in (self.allocatable, self.requested, self.nonzero_requested):
                if a.size:
                    top = max(top, int(a.max()), -int(a.min()))
            self._ceiling = top
            self._ceiling_exact = True
        return self._ceiling

    def headroom_floor(self, col: int) -> int | None:
        """A lower bound of ``allocatable - requested`` in column ``col`` over every node row
        (``INT64_MAX`` without nodes), or ``None`` in a fork and for extended resources. A request
        no larger than the bound fits on every node, which is the usual answer: the filter then
        need not look at the rows.

        The bound only ever falls between recomputations: a changed row lowers it to the row's
        new headroom, and a row whose headroom grew leaves it where it was (still a bound)."""
        if self._own_masks is not None:
            return None
        floors = self._floors
        log = self._floor_log
        if log is None:
            floors.clear()
            self._floor_log = []
        elif log:
            if floors:
                valid, alloc, req = self.valid, self.allocatable, self.requested
                for slots in log:
                    for slot in np.atleast_1d(slots).tolist():
                        if not valid[slot]:
                            continue
                        # Only fixed columns are kept, and every table has those.
                        for c, lowest in list(floors.items()):
                            room = int(alloc[slot, c]) - int(req[slot, c])
                            if room < lowest:
                                floors[c] = room
            log.clear()
        known = floors.get(col)
        if known is not None:
            return known
        if col >= len(FIXED_RESOURCES) or col >= self.allocatable.shape[1]:
            # Extended resources are on some nodes only (their bound is 0 and helps no one), and a
            # cluster may have thousands of them to replay on every row change: not kept.
            return None
        free = self.allocatable[:, col] - self.requested[:, col]
        exact = int(free[self.valid].min(initial=INT64_MAX))
        floors[col] = exact
        return exact

    def _raise_ceiling(self, value: int) -> None:
        """A value of magnitude ``value`` was written (not added) somewhere in the columns."""
        if value > self._ceiling:
            self._ceiling = value

    # -- accounting ------------------------------------------------------------------------------
    def add_pod(self, slot: int, pod: PodUsage) -> None:
        """Count a pod on a row: its requests, one pod, its non-zero cpu/memory, its host ports."""
        self._account(slot, pod, 1)

    def remove_pod(self, slot: int, pod: PodUsage) -> None:
        """Stop counting a pod on a row (the reverse of :meth:`add_pod`; its host ports are freed
        on the row, as no two pods of one node bind the same port)."""
        self._account(slot, pod, -1)

    def _account(self, slot: int, pod: PodUsage, sign: int) -> None:
        req = self.requested
        col_of = self.resource_col
        # Each changed value moves by at most the largest amount added or taken away.
        grow = 1
        for name, value in pod.requests.items():
            col = col_of.get(name)
            if col is None:
                col = self.column(name)
                req = self.requested
            req[slot, col] += sign * value
            if value > grow:
                grow = value
        req[slot, PODS_COL] += sign
        nonzero = self.nonzero_requested
        cpu, memory = pod.nonzero_cpu, pod.nonzero_memory
        nonzero[slot, 0] += sign * cpu
        nonzero[slot, 1] += sign * memory
        self._ceiling += max(grow, cpu, memory)
        self._ceiling_exact = False
        self._changed(slot)
        if pod.host_ports:
            on = sign > 0
            for hp in pod.host_ports:
                self._mask("host_ports", hp)[slot] = on
                self._mask("host_ports_any", (hp.protocol, hp.port))[slot] = on

    def add_usage(self, slots: IntArray, requests: IntArray, nonzero: IntArray) -> None:
        """Add summed pod vectors (see :meth:`pod_vector`, pod count included) and non-zero
        cpu/memory to the rows of ``slots`` (distinct): pods that bind no host port."""
        self.requested[slots] += requests
        self.nonzero_requested[slots] += nonzero
        if len(slots):
            self._ceiling += max(int(np.abs(requests).max(initial=0)), int(np.abs(nonzero).max(initial=0)))
            self._ceiling_exact = False
        self._changed(slots)

    def set_usage(self, slot: int, info: NodeInfo) -> None:
        """Make a row's pod usage that of ``info`` (its pods' requests, count and host ports)."""
        top = len(info.pods)
        cols = [(self.column(name), min(value, INT64_MAX)) for name, value in info.requested.items()]
        for _, value in cols:  # sums of bound pods saturate
            if abs(value) > top:
                top = abs(value)
        width = self.requested.shape[1]
        if width <= _ROW_AS_LIST_WIDTH:
            # One assignment of the whole row (strided in the column-major matrix) instead of one
            # per value; the columns are all known by now.
            row = [0] * width
            for col, value in cols:
                row[col] = value
            row[PODS_COL] = len(info.pods)
            self.requested[slot] = row
        else:
            req = self.requested[slot]
            req[:] = 0
            for col, value in cols:
                req[col] = value
            req[PODS_COL] = len(info.pods)
        cpu, memory = min(info.nonzero_cpu, INT64_MAX), min(info.nonzero_memory, INT64_MAX)
        self.nonzero_requested[slot] = (cpu, memory)
        self._raise_ceiling(max(top, abs(cpu), abs(memory)))
        self._changed(slot)
        if info.used_ports or self._ports_of[slot]:
            self._write_ports(slot, frozenset(info.used_ports))

    def _grow(self, need: int) -> None:
        new_cap = max(need, self.capacity * 2)
        extra = new_cap - self.capacity

        def grow(a: NDArray[np.generic]) -> NDArray[np.generic]:
            out = np.zeros((new_cap, *a.shape[1:]), dtype=a.dtype, order="F")  # columns stay contiguous
            out[: len(a)] = a
            return out

        self.valid = grow(self.valid)  # type: ignore[assignment]
        self.allocatable = grow(self.allocatable)  # type: ignore[assignment]
        self.requested = grow(self.requested)  # type: ignore[assignment]
        self.nonzero_requested = grow(self.nonzero_requested)  # type: ignore[assignment]
        self.unschedulable = grow(self.unschedulable)  # type: ignore[assignment]
        self.taint_sig = grow(self.taint_sig)  # type: ignore[assignment]
        self.row_stamp = grow(self.row_stamp)  # type: ignore[assignment]
        for col in self.labels.values():
            col.codes = np.concatenate([col.codes, np.full(extra, -1, dtype=np.int32)])
        for ports in (self.host_ports, self.host_ports_any):
            for key, mask in ports.items():
                ports[key] = grow(mask)  # type: ignore[index, assignment]
        for image, sizes in self.image_sizes.items():
            self.image_sizes[image] = grow(sizes)  # type: ignore[assignment]
        self.names.extend([""] * extra)
        self._label_keys_of.extend([()] * extra)
        self._ports_of.extend([frozenset()] * extra)
        self._images_of.extend([{}] * extra)
        self._node_of.extend([None] * extra)
        self.capacity = new_cap

    # -- rows ------------------------------------------------------------------------------------
    def signature_id(self, taints: tuple[Taint, ...]) -> int:
        sid = self._sig_ids.get(taints)
        if sid is None:
            sid = len(self.signatures)
            self.signatures.append(taints)
            self._sig_ids[taints] = sid
        return sid

    def label_column(self, key: str) -> LabelColumn:
        col = self.labels.get(key)
        if col is None:
            col = LabelColumn(np.full(self.capacity, -1, dtype=np.int32))
            self.labels[key] = col
        return col

    def write(self, slot: int, info: NodeInfo) -> None:
        """Copy one node's current state into its row."""
        if self.is_fork:
            raise ValueError("a fork's rows change only through the accounting API")
        if slot >= self.capacity:
            self._grow(slot + 1)
        node = info.node
        if node is None:
            self.clear(slot)
            return
        if self._node_of[slot] is node and self.valid[slot]:
            self.set_usage(slot, info)
            return
        self._node_of[slot] = node
        self.names[slot] = node.name
        self.slot_of[node.name] = slot
        self.valid[slot] = True
        alloc = self.allocatable[slot]
        alloc[:] = 0
        top = 0
        for name, value in node.allocatable.items():
            col = self.column(name)
            alloc = self.allocatable[slot]
            alloc[col] = value
            if abs(value) > top:
                top = abs(value)
        self._raise_ceiling(top)
        self.set_usage(slot, info)
        if node.unschedulable != self.unschedulable[slot]:
            self.cordoned += 1 if node.unschedulable else -1
            self.unschedulable[slot] = node.unschedulable
        self.taint_sig[slot] = self.signature_id(node.taints)
        old_keys = self._label_keys_of[slot]
        for key in old_keys:
            if key not in node.labels:
                self.labels[key].codes[slot] = -1
        for key, label_value in node.labels.items():
            label_col = self.label_column(key)
            label_col.codes[slot] = label_col.code(label_value)
        self._label_keys_of[slot] = tuple(node.labels)
        if node.images is not self._images_of[slot]:
            self._write_images(slot, node.images)

    def _write_ports(self, slot: int, ports: frozenset[HostPort]) -> None:
        old = self._ports_of[slot]
        if ports == old:
            return
        for hp in old - ports:
            self._mask("host_ports", hp)[slot] = False
        for hp in ports - old:
            self._mask("host_ports", hp)[slot] = True
        in_use = {(hp.protocol, hp.port) for hp in ports}
        for pp in {(hp.protocol, hp.port) for hp in old} - in_use:
            self._mask("host_ports_any", pp)[slot] = False
        for pp in in_use:
            self._mask("host_ports_any", pp)[slot] = True
        self._own("_ports_of")
        self._ports_of[slot] = ports

    def _write_images(self, slot: int, images: dict[str, int]) -> None:
        old = self._images_of[slot]
        if images != old:
            for name in old:
                if name not in images:
                    self.image_sizes[name][slot] = 0
                    self.image_nodes[name] -= 1
            for name, size in images.items():
                sizes = self.image_sizes.get(name)
                if sizes is None:
                    sizes = np.zeros(self.capacity, dtype=np.int64)
                    self.image_sizes[name] = sizes
                    self.image_nodes[name] = 0
                if name not in old:
                    self.image_nodes[name] += 1
                sizes[slot] = size
        # Keep the node's own dict: the next write of an unchanged Node is an identity check.
        self._images_of[slot] = images

    def clear(self, slot: int) -> None:
        if self.is_fork:
            raise ValueError("a fork's rows change only through the accounting API")
        if slot >= self.capacity:
            return
        name = self.names[slot]
        if name and self.slot_of.get(name) == slot:
            del self.slot_of[name]
        self.names[slot] = ""
        self._node_of[slot] = None
        self.valid[slot] = False
        self._ceiling_exact = False  # the largest values may have left with the node
        self.allocatable[slot] = 0
        self.requested[slot] = 0
        self.nonzero_requested[slot] = 0
        self._changed(slot)
        if self.unschedulable[slot]:
            self.cordoned -= 1
            self.unschedulable[slot] = False
        self.taint_sig[slot] = 0
        for key in self._label_keys_of[slot]:
            self.labels[key].codes[slot] = -1
        self._label_keys_of[slot] = ()
        if self._ports_of[slot]:
            self._write_ports(slot, frozenset())
        if self._images_of[slot]:
            self._write_images(slot, {})

    def fill_pod_vector(self, requests: Mapping[str, int], out: IntArray) -> None:
        """Write a pod's request over this table's existing columns into ``out`` (zeroed first; one in
        the pods column); resources without a column are left out. Never adds a column."""
        out[:] = 0
        col_of = self.resource_col
        for name, value in requests.items():
            col = col_of.get(name)
            if col is not None:
                out[col] = value
        out[PODS_COL] = 1

    def pod_vector(self, requests: dict[str, int]) -> IntArray:
        """A pod's request as a row vector over this table's resource columns."""
        vec = np.zeros(self.num_resources, dtype=np.int64)
        for name, value in requests.items():
            col = self.resource_col.get(name)
            if col is None:
                col = self.column(name)
                vec = np.concatenate([vec, np.zeros(self.num_resources - len(vec), dtype=np.int64)])
            vec[col] = min(value, INT64_MAX)  # a pod's sum may pass int64; Fit knows it exactly
        vec[PODS_COL] = 1
        return vec
