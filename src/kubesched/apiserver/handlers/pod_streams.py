"""The pod subresources that reach a pod's kubelet: ``log``, ``exec``, ``attach`` and
``portforward`` (upstream's ``pkg/registry/core/pod/rest/log.go`` and ``subresources.go``).

The API server's own checks are upstream's: the options decode and validate, the pod exists, the
container is one of the pod's, the pod has a node. Then, where kube-apiserver would proxy to the
node's kubelet, the simulated kubelet answers: a container's log is its simulated lifecycle
(``controllers/kubelet_logs.py``); exec, attach and port-forward, which need a running process, are
refused with a Status saying that the pod is simulated.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web
from multidict import MultiMapping

from kubesched.apiserver.handlers.responses import get_or_404
from kubesched.controllers.kubelet_logs import (
    LogOptions,
    LogUnavailable,
    container_log,
    is_finished,
    parse_time,
    render,
    render_line,
)
from kubesched.registry.errors import bad_request, invalid, method_not_allowed
from kubesched.registry.strategy import Strategy
from kubesched.store.base import Obj

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: The subresources served here, and the methods each takes (upstream's connect methods).
STREAMS: dict[str, tuple[str, ...]] = {
    "log": ("GET",),
    "exec": ("GET", "POST"),
    "attach": ("GET", "POST"),
    "portforward": ("GET", "POST"),
}

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
#: How often a followed log checks that its client is still there while nothing changes.
_FOLLOW_CHECK_SECONDS = 5.0
_SIMULATED = "is simulated by kubesched"


async def pod_stream(
    server: ApiServer, request: web.Request, strategy: Strategy, namespace: str, name: str, sub: str
) -> web.StreamResponse:
    if request.method not in STREAMS[sub]:
        raise method_not_allowed()
    if sub == "log":
        return await _log(server, request, strategy, namespace, name)
    query = request.query
    if sub == "portforward":
        _ports(query)
    pod = get_or_404(server.store, strategy.resource, namespace, name)
    await server.read_committed()
    container = "" if sub == "portforward" else container_of(pod, query.get("container", ""))
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {name} does not have a host assigned")
    if "upgrade" not in request.headers.get("Connection", "").lower():
        # Upstream's proxy wants a streaming protocol before it reaches the kubelet.
        raise bad_request("Upgrade request required")
    if sub == "exec":
        why = f'container "{container}" runs no process, so there is nothing to exec into'
    elif sub == "attach":
        why = f'container "{container}" runs no process, so there is nothing to attach to'
    else:
        why = "no process listens on its ports, so there is nothing to forward to"
    raise bad_request(f'pod "{name}" {_SIMULATED}: {why}')


def container_of(pod: Obj, container: str) -> str:
    """The container a request names, or the pod's only one (upstream's ``validateContainer``)."""
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    regular = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, dict)]
    # Init containers first, then the pod's containers, then ephemeral ones (upstream's visit order).
    every = [
        str(c.get("name"))
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
        if isinstance(c, dict)
    ]
    if container:
        if container not in every:
            raise bad_request(f"container {container} is not valid for pod {name}")
        return container
    if len(regular) == 1:
        return regular[0]
    if not regular:
        raise bad_request(f"a container name must be specified for pod {name}")
    names = " ".join(every)
    raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{names}]")


@dataclass(frozen=True, slots=True)
class _LogRequest:
    container: str
    follow: bool
    previous: bool
    options: LogOptions


async def _log(
    server: ApiServer, request: web.Request, strategy: Strategy, namespace: str, name: str
) -> web.StreamResponse:
    asked = _log_request(request.query, name)
    store = server.store
    pod = get_or_404(store, strategy.resource, namespace, name)
    await server.read_committed()
    container = container_of(pod, asked.container)
    if not (pod.get("spec") or {}).get("nodeName"):
        # No node, no kubelet to ask: upstream answers with nothing.
        return web.Response(status=204)
    try:
        lines = container_log(pod, container, previous=asked.previous)
    except LogUnavailable as exc:
        raise bad_request(str(exc)) from None
    body = render(lines, asked.options)
    if not asked.follow or is_finished(pod, container):
        return web.Response(body=body, headers={"Content-Type": "text/plain"})
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    left = asked.options.limit_bytes
    with contextlib.suppress(ConnectionError):
        left = await _send(resp, body, left)
        await _follow(server, request, resp, strategy, pod, container, len(lines), asked, left)
        await resp.write_eof()
    return resp


async def _follow(
    server: ApiServer,
    request: web.Request,
    resp: web.StreamResponse,
    strategy: Strategy,
    pod: Obj,
    container: str,
    sent: int,
    asked: _LogRequest,
    left: int | None,
) -> None:
    """Send the container's new lines as its pod changes, until it ends, the pod goes, the byte
    limit is reached or the client leaves."""
    meta = pod["metadata"]
    namespace, name, uid = meta.get("namespace"), meta["name"], meta.get("uid")
    while left is None or left > 0:
        changed = server.changed_event("Pod")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_FOLLOW_CHECK_SECONDS):
                await changed.wait()
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        current = server.store.get(strategy.resource.kind, namespace, name)
        await server.read_committed()
        if current is None or current["metadata"].get("uid") != uid:
            return
        try:
            lines = container_log(current, container)
        except LogUnavailable:
            return
        for line in lines[sent:]:
            left = await _send(resp, render_line(line, asked.options.timestamps), left)
        sent = max(sent, len(lines))
        if is_finished(current, container):
            return


async def _send(resp: web.StreamResponse, data: bytes, left: int | None) -> int | None:
    if left is not None:
        data = data[:left]
        left -= len(data)
    if data:
        await resp.write(data)
    return left


def _log_request(query: MultiMapping[str], name: str) -> _LogRequest:
    """``PodLogOptions`` from the query, decoded and validated as upstream does."""
    since_seconds = _int64(query, "sinceSeconds")
    tail_lines = _int64(query, "tailLines")
    limit_bytes = _int64(query, "limitBytes")
    since_time: float | None = None
    if query.get("sinceTime"):
        text = query["sinceTime"]
        since_time = parse_time(text) if _RFC3339.fullmatch(text) else None
        if since_time is None:
            raise bad_request(
                f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse "{text}" as "2006"'
            )
    causes: list[tuple[str, str, str]] = []
    if tail_lines is not None and tail_lines < 0:
        why = f"Invalid value: {tail_lines}: must be greater than or equal to 0"
        causes.append(("FieldValueInvalid", "tailLines", why))
    if limit_bytes is not None and limit_bytes < 1:
        why = f"Invalid value: {limit_bytes}: must be greater than 0"
        causes.append(("FieldValueInvalid", "limitBytes", why))
    if since_seconds is not None and since_time is not None:
        causes.append(
            (
                "FieldValueForbidden",
                "[]",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            )
        )
    elif since_seconds is not None and since_seconds < 1:
        causes.append(
            ("FieldValueInvalid", "sinceSeconds", f"Invalid value: {since_seconds}: must be greater than 0")
        )
    if causes:
        raise invalid("PodLogOptions", "", name, causes)
    since = since_time
    if since_seconds is not None:
        since = time.time() - since_seconds
    return _LogRequest(
        container=query.get("container", ""),
        follow=_bool(query, "follow"),
        previous=_bool(query, "previous"),
        options=LogOptions(
            timestamps=_bool(query, "timestamps"), tail_lines=tail_lines, since=since, limit_bytes=limit_bytes
        ),
    )


def _bool(query: Mapping[str, str], key: str) -> bool:
    """Upstream's query conversion: anything but ``0`` or ``false`` (or nothing) is true."""
    value = query.get(key)
    return value is not None and value != "0" and value.lower() != "false"


def _int64(query: Mapping[str, str], key: str) -> int | None:
    value = query.get(key)
    if value is None:
        return None
    if not re.fullmatch(r"[+-]?\d+", value):
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(1 << 63) <= number < 1 << 63:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def _ports(query: MultiMapping[str]) -> list[int]:
    """``PodPortForwardOptions.ports``: comma-separated 16-bit numbers, as upstream converts them."""
    ports: list[int] = []
    for value in query.getall("ports", []):
        for part in value.split(","):
            why = "invalid syntax" if not re.fullmatch(r"\d+", part) else ""
            if not why and int(part) > 0xFFFF:
                why = "value out of range"
            if why:
                raise bad_request(f'cannot convert to []int32: strconv.ParseUint: parsing "{part}": {why}')
            ports.append(int(part))
    return ports
