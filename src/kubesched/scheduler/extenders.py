"""HTTP extenders: upstream's ``k8s.io/kube-scheduler/extender/v1`` protocol, and where the
scheduling cycle calls them (``findNodesThatPassExtenders``, the extender part of
``prioritizeNodes``, ``extendersBinding`` and preemption's ``callExtenders``).

Wire format: every verb is a ``POST {urlPrefix}/{verb}`` with a JSON body whose keys are capitalised
like upstream's Go structs (``Pod``, ``Nodes`` or ``NodeNames``, ``FailedNodes``, ...). Connections are
pooled per extender and the client is safe to call from several threads at once (prioritize calls
every interested extender concurrently, as upstream does with goroutines).

Failures: an ignorable extender that fails (transport error, timeout, non-200, unparseable or
malformed reply, or an ``Error`` it returns) is skipped with a log line; a non-ignorable one fails the
pod's cycle with an :class:`~kubesched.framework.extender.ExtenderError` naming it. That holds for
filter, bind and preempt; a failed prioritize is ignored for every extender, ignorable or not, as
upstream's prioritizeNodes does: the extender gives no score and the other plugins and extenders
rank the nodes.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.config import ExtenderConfig, ExtenderTLSConfig
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    Extender,
    ExtenderError,
    FilterReply,
    NodeInfoLookup,
    Victims,
)
from kubesched.framework.types import BoolArray, FilterResult, IntArray, NodeFailure

log = logging.getLogger(__name__)

#: Idle connections kept per extender; more concurrent calls open (and then drop) extra ones.
POOL_SIZE = 16
#: Replies larger than this are refused (a misbehaving extender must not exhaust memory).
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: Node score range the extender scores are scaled to (upstream framework.MaxNodeScore).
MAX_NODE_SCORE = 100
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _wrap64(value: int) -> int:
    """``value`` as Go's int64 arithmetic leaves it (two's complement wrap-around)."""
    return (value + 2**63) % 2**64 - 2**63


# --------------------------------------------------------------------------------------------------
# Transport


class _NoDelayHTTP(http.client.HTTPConnection):
    """Small request/reply exchanges: Nagle's algorithm would only add delayed-ACK waits."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _NoDelayHTTPS(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Pool:
    """Keep-alive HTTP(S) connections to one host, shared by threads (one connection per call)."""

    def __init__(self, url_prefix: str, timeout: float, context: ssl.SSLContext | None) -> None:
        parts = urlsplit(url_prefix)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"urlPrefix {url_prefix!r} is not an http(s) URL")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port
        self.base_path = parts.path.rstrip("/")
        self.timeout = timeout
        self.context = context
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue(POOL_SIZE)

    def _new(self) -> http.client.HTTPConnection:
        if self.https:
            return _NoDelayHTTPS(self.host, self.port, timeout=self.timeout, context=self.context)
        return _NoDelayHTTP(self.host, self.port, timeout=self.timeout)

    def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        path = f"{self.base_path}/{verb}"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for attempt in range(2):
            try:
                conn = self._idle.get_nowait()
                reused = True
            except queue.Empty:
                conn = self._new()
                reused = False
            try:
                conn.request("POST", path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read(MAX_REPLY_BYTES + 1)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                if reused and attempt == 0:
                    continue  # the server closed an idle keep-alive connection: one fresh try
                raise
            except BaseException:
                conn.close()
                raise
            if resp.will_close or len(data) > MAX_REPLY_BYTES:
                conn.close()
            else:
                try:
                    self._idle.put_nowait(conn)
                except queue.Full:
                    conn.close()
            if len(data) > MAX_REPLY_BYTES:
                raise OSError(f"reply larger than {MAX_REPLY_BYTES} bytes")
            return resp.status, data
        raise OSError("connection closed")  # not reached: the second attempt returns or raises

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def _ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext:
    """Upstream makeTransport: with enableHTTPS and no CA the server certificate is not verified."""
    tls = cfg.tls_config or ExtenderTLSConfig()
    ctx = ssl.create_default_context()
    has_ca = bool(tls.ca_file or tls.ca_data)
    if tls.ca_file:
        ctx.load_verify_locations(cafile=tls.ca_file)
    if tls.ca_data:
        ctx.load_verify_locations(cadata=tls.ca_data.decode())
    if tls.insecure or (cfg.enable_https and not has_ca):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert, key = tls.cert_file, tls.key_file
    if tls.cert_data or tls.key_data:
        # The ssl module loads client certificates from files only.
        cert = _temp_pem(tls.cert_data) if tls.cert_data else cert
        key = _temp_pem(tls.key_data) if tls.key_data else key
    if cert:
        ctx.load_cert_chain(cert, key or None)
    return ctx


def _temp_pem(data: bytes) -> str:
    fd, path = tempfile.mkstemp(suffix=".pem")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


# --------------------------------------------------------------------------------------------------
# The HTTP extender


class HTTPExtender:
    """One configured extender (upstream ``HTTPExtender``). Its name is its urlPrefix."""

    def __init__(self, cfg: ExtenderConfig) -> None:
        self.cfg = cfg
        self._name = cfg.url_prefix
        self.managed = frozenset(r.name for r in cfg.managed_resources)
        context = _ssl_context(cfg) if cfg.enable_https or cfg.tls_config is not None else None
        self._pool: _Pool | None = None
        self._bad_url = ""
        try:
            self._pool = _Pool(cfg.url_prefix, cfg.http_timeout, context)
        except ValueError as exc:
            self._bad_url = str(exc)

    # -- what it does ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def ignorable(self) -> bool:
        return self.cfg.ignorable

    @property
    def weight(self) -> int:
        return self.cfg.weight

    def is_filter(self) -> bool:
        return bool(self.cfg.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.cfg.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """True when the extender manages no resources, or the pod requests or limits one of them in
        a container or an init container (upstream IsInterested)."""
        if not self.managed:
            return True
        spec = pod.raw.get("spec") or {}
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                resources = (container or {}).get("resources") or {}
                for part in ("requests", "limits"):
                    if self.managed.intersection((resources.get(part) or {}).keys()):
                        return True
        return False

    # -- verbs ----------------------------------------------------------------------------------
    def _args(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if self.cfg.node_cache_capable:
            names = [str((n.get("metadata") or {}).get("name", "")) for n in nodes]
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": names}
        return {"Pod": pod.raw, "Nodes": {"items": list(nodes)}, "NodeNames": None}

    def filter(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> FilterReply:
        verb = self.cfg.filter_verb
        names = [str((n.get("metadata") or {}).get("name", "")) for n in nodes]
        if not verb:
            return FilterReply(names)
        reply = _mapping(self, verb, self.send(verb, self._args(pod, nodes)))
        error = reply.get("Error")
        if error:
            raise ExtenderError(self.name, verb, str(error))
        given = set(names)
        kept: list[str]
        if self.cfg.node_cache_capable and reply.get("NodeNames") is not None:
            kept = _str_list(self, verb, reply["NodeNames"], "NodeNames")
        elif reply.get("Nodes") is not None:
            items = _mapping(self, verb, reply["Nodes"], "Nodes").get("items") or []
            if not isinstance(items, list):
                raise ExtenderError(self.name, verb, "Nodes.items is not a list")
            kept = []
            for item in items:
                meta = item.get("metadata") if isinstance(item, Mapping) else None
                name = meta.get("name") if isinstance(meta, Mapping) else None
                if not isinstance(name, str):
                    raise ExtenderError(self.name, verb, "a node in Nodes.items has no metadata.name")
                kept.append(name)
        else:
            kept = []
        for name in kept:
            if name not in given:
                raise ExtenderError(
                    self.name,
                    verb,
                    f"extender {self.name!r} claims a filtered node {name!r} which is not found in the "
                    "input node list",
                )
        return FilterReply(
            kept,
            _str_map(self, verb, reply.get("FailedNodes"), "FailedNodes"),
            _str_map(self, verb, reply.get("FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"),
        )

    def prioritize(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """Host → score; hosts the extender did not score are absent. Scores are meant to be in
        [0, 10] but, as upstream, any int64 is taken as given."""
        verb = self.cfg.prioritize_verb
        if not verb:
            return {}
        reply = self.send(verb, self._args(pod, nodes))
        if not isinstance(reply, list):
            raise ExtenderError(self.name, verb, f"expected a HostPriorityList (a list), got {_kind(reply)}")
        out: dict[str, int] = {}
        for entry in reply:
            host = entry.get("Host") if isinstance(entry, Mapping) else None
            score = entry.get("Score") if isinstance(entry, Mapping) else None
            if not isinstance(host, str) or not isinstance(score, int) or isinstance(score, bool):
                raise ExtenderError(self.name, verb, f"malformed HostPriority {entry!r}")
            if not _INT64_MIN <= score <= _INT64_MAX:
                # Upstream's decoder refuses what does not fit HostPriority.Score (int64).
                raise ExtenderError(self.name, verb, f"score {score} for host {host!r} overflows int64")
            # A host listed twice counts twice, as upstream's sum over the list does.
            out[host] = out.get(host, 0) + score
        return out

    def bind(self, pod: Pod, node: str) -> None:
        verb = self.cfg.bind_verb
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}
        reply = _mapping(self, verb, self.send(verb, args))
        if reply.get("Error"):
            raise ExtenderError(self.name, verb, str(reply["Error"]))

    def process_preemption(
        self, pod: Pod, victims: dict[str, Victims], lookup: NodeInfoLookup
    ) -> dict[str, Victims]:
        verb = self.cfg.preempt_verb
        args: dict[str, Any] = {"Pod": pod.raw, "NodeNameToVictims": None, "NodeNameToMetaVictims": None}
        if self.cfg.node_cache_capable:
            args["NodeNameToMetaVictims"] = {
                node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                node: {"Pods": [p.raw for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        reply = _mapping(self, verb, self.send(verb, args))
        meta = _mapping(self, verb, reply.get("NodeNameToMetaVictims") or {}, "NodeNameToMetaVictims")
        out: dict[str, Victims] = {}
        for node, mv in meta.items():
            pods_on = lookup.pods_on(str(node))
            if pods_on is None:
                raise ExtenderError(self.name, verb, f'nodeinfo not found for node name "{node}"')
            if mv is None:
                out[str(node)] = Victims([], 0)
                continue
            mv = _mapping(self, verb, mv, f"NodeNameToMetaVictims[{node}]")
            n_pdb = mv.get("NumPDBViolations") or 0
            if not isinstance(n_pdb, int) or isinstance(n_pdb, bool):
                raise ExtenderError(self.name, verb, f"NumPDBViolations of node {node!r} is not an integer")
            pods: list[Pod] = []
            by_uid = {p.uid: p for p in pods_on.values()}
            for mp in mv.get("Pods") or []:
                uid = mp.get("UID") if isinstance(mp, Mapping) else None
                found = by_uid.get(uid) if isinstance(uid, str) else None
                if found is None:
                    raise ExtenderError(
                        self.name,
                        verb,
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: {node}, but "
                        "the pod is not found on that node",
                    )
                pods.append(found)
            out[str(node)] = Victims(pods, n_pdb)
        return out

    # -- transport ------------------------------------------------------------------------------
    def send(self, verb: str, args: Any) -> Any:
        """POST ``args`` to ``{urlPrefix}/{verb}``; the decoded JSON reply, or ExtenderError."""
        if self._pool is None:
            raise ExtenderError(self.name, verb, self._bad_url)
        body = json.dumps(args, separators=(",", ":"), default=str).encode()
        url = f"{self.name.rstrip('/')}/{verb}"
        try:
            status, data = self._pool.post(verb, body)
        except TimeoutError:
            detail = f"no reply from {url} within {self.cfg.http_timeout:g}s"
            raise ExtenderError(self.name, verb, detail) from None
        except (OSError, http.client.HTTPException) as exc:
            raise ExtenderError(self.name, verb, f"calling {url}: {exc or type(exc).__name__}") from None
        if status != 200:
            raise ExtenderError(self.name, verb, f"failed {verb} with extender at URL {url}, code {status}")
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ExtenderError(self.name, verb, f"reply is not valid JSON: {exc}") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _mapping(ext: HTTPExtender, verb: str, value: Any, what: str = "reply") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ExtenderError(ext.name, verb, f"{what} is not a JSON object, got {_kind(value)}")
    return value


def _str_list(ext: HTTPExtender, verb: str, value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExtenderError(ext.name, verb, f"{what} is not a list of strings")
    return value


def _str_map(ext: HTTPExtender, verb: str, value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ExtenderError(ext.name, verb, f"{what} is not a map of node name to message")
    return dict(value)


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[Extender]:
    """One HTTPExtender per configuration entry, in configuration order (ignorable ones are already
    last: the loader orders them like upstream buildExtenders)."""
    return [HTTPExtender(cfg) for cfg in configs]


# --------------------------------------------------------------------------------------------------
# Where the scheduling cycle calls extenders


@dataclass(slots=True)
class ExtenderFailures:
    """Why extenders dropped nodes. ``by_node``: node → (extender, reason, unresolvable) for the nodes
    an extender named in FailedNodes / FailedAndUnresolvableNodes; ``dropped``: node → the extender
    that left it out of its reply (named or not)."""

    by_node: dict[str, tuple[str, str, bool]]
    dropped: dict[str, str]


def add_extender_failures(diag: Diagnosis, table: NodeTable, failures: ExtenderFailures) -> None:
    """Put the extenders' verdicts into a filter diagnosis, one entry per extender after the Filter
    plugins: named failures count in the ``0/N nodes are available`` message (as upstream's node
    statuses do); a node dropped without a reason counts nowhere and, like upstream's node without a
    status, is not one preemption would try."""
    if failures.dropped:
        diag.unschedulable_plugins.add(EXTENDER_NAME)
    assert diag.failed_by is not None
    if not diag.failed_by.flags.writeable:
        diag.failed_by = diag.failed_by.copy()
    if diag.unresolvable is None:
        diag.unresolvable = np.zeros(table.capacity, dtype=np.bool_)
    index: dict[str, int] = {}
    masks: dict[tuple[str, str, bool], BoolArray] = {}
    for node, ext in failures.dropped.items():
        slot = table.slot_of.get(node)
        if slot is None:
            continue
        if ext not in index:
            index[ext] = len(diag.plugins)
            diag.plugins.append(ext)
            diag.results.append(FilterResult(np.ones(table.capacity, dtype=np.bool_)))
        result = diag.results[index[ext]]
        assert result is not None
        result.passed[slot] = False
        diag.failed_by[slot] = index[ext]
        named = failures.by_node.get(node)
        if named is None or named[0] != ext:
            diag.unresolvable[slot] = True
            continue
        _, reason, unresolvable = named
        diag.reason_counts[reason] += 1
        diag.unresolvable[slot] = unresolvable
        mask = masks.get((ext, reason, unresolvable))
        if mask is None:
            mask = masks[(ext, reason, unresolvable)] = np.zeros(table.capacity, dtype=np.bool_)
            result.failures.append(NodeFailure(reason, mask, unresolvable))
        mask[slot] = True


def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender],
    pod: Pod,
    feasible: list[str],
    node_obj: Callable[[str], Mapping[str, Any]],
) -> tuple[list[str], ExtenderFailures]:
    """Upstream findNodesThatPassExtenders: each interested filter extender in turn narrows the
    feasible nodes; its failed nodes get a status (unresolvable ones win over plain failures)."""
    failures = ExtenderFailures({}, {})
    for ext in extenders:
        if not feasible:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            reply = ext.filter(pod, [node_obj(n) for n in feasible])
        except ExtenderError as exc:
            if ext.ignorable:
                log.info(_IGNORED, ext.name, "filter", exc)
                continue
            raise
        for node, msg in reply.failed_and_unresolvable.items():
            failures.by_node[node] = (ext.name, msg, True)
        for node, msg in reply.failed.items():
            if node not in reply.failed_and_unresolvable:
                failures.by_node[node] = (ext.name, msg, False)
        kept = set(reply.nodes)
        for n in feasible:
            if n not in kept:
                failures.dropped[n] = ext.name
        feasible = list(reply.nodes)
    return feasible, failures


_IGNORED = "Skipping extender %s in %s as it returned error and has ignorable flag set: %s"
_NO_SCORE = "Failed to run extender's priority function. No score given by this extender."

_executor_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def _pool_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="extender-prioritize")
        return _executor


def extender_scores(
    extenders: Sequence[Extender],
    pod: Pod,
    names: list[str],
    node_obj: Callable[[str], Mapping[str, Any]],
) -> dict[str, IntArray]:
    """Extender name → its score per node of ``names``, scaled like upstream prioritizeNodes:
    ``score * weight * (MaxNodeScore / MaxExtenderPriority)``. Interested prioritizers are called
    concurrently; one that fails gives no score, whether or not it is ignorable (upstream: the other
    plugins and extenders determine the priorities)."""
    active = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if not active:
        return {}
    nodes = [node_obj(n) for n in names]

    def call(ext: Extender) -> dict[str, int] | ExtenderError:
        try:
            return ext.prioritize(pod, nodes)
        except ExtenderError as exc:
            return exc

    replies = [call(active[0])] if len(active) == 1 else list(_pool_executor().map(call, active))
    out: dict[str, IntArray] = {}
    index = {n: i for i, n in enumerate(names)}
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    for ext, reply in zip(active, replies, strict=True):
        if isinstance(reply, ExtenderError):
            log.info(
                "%s error=%r pod=%s/%s extender=%s", _NO_SCORE, str(reply), pod.namespace, pod.name, ext.name
            )
            continue
        scores = np.zeros(len(names), dtype=np.int64)
        for host, score in reply.items():
            i = index.get(host)
            if i is not None:
                # int64 arithmetic wraps as Go's does.
                scores[i] = _wrap64(score * ext.weight * scale)
        out[ext.name] = scores
    return out


def extenders_binding(
    extenders: Sequence[Extender], pod: Pod, node: str
) -> tuple[bool, ExtenderError | None]:
    """Upstream extendersBinding: the first interested binder binds; (bound, its error)."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            ext.bind(pod, node)
        except ExtenderError as exc:
            if ext.ignorable:
                log.info(_IGNORED, ext.name, "bind", exc)
                continue
            return True, exc
        return True, None
    return False, None
