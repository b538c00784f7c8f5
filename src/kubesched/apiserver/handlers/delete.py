"""DELETE of one object (with preconditions, a pod's graceful termination, and the garbage
collector's cascade) and of a collection."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.apiserver.handlers.body import decode, raw_body
from kubesched.apiserver.handlers.get import select
from kubesched.apiserver.handlers.responses import get_or_404, json_response, view
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.registry.errors import STALE, bad_request, conflict, not_found
from kubesched.registry.strategy import Strategy
from kubesched.store.base import ClusterStore, Conflict, Obj

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer


async def delete_options(request: web.Request) -> dict[str, Any]:
    """The request's DeleteOptions: its body, completed by the query's gracePeriodSeconds and
    propagationPolicy."""
    raw = await raw_body(request)
    options = decode(raw, request.headers.get("Content-Type", "")) if raw.strip() else {}
    if not isinstance(options, dict):
        raise bad_request("DeleteOptions must be an object")
    query = request.query
    for key in ("gracePeriodSeconds", "propagationPolicy"):
        if key in query and key not in options:
            value = query[key]
            if key == "gracePeriodSeconds":
                try:
                    options[key] = int(value)
                except ValueError:
                    raise bad_request(f"gracePeriodSeconds: Invalid value: {value!r}") from None
            else:
                options[key] = value
    return options


def delete(
    server: ApiServer, strategy: Strategy, namespace: str | None, name: str, options: Mapping[str, Any]
) -> web.Response:
    res = strategy.resource
    store = server.store
    old = get_or_404(store, res, namespace, name)
    pre = options.get("preconditions") or {}
    if isinstance(pre, dict):
        if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
            raise conflict(
                res.plural,
                res.group,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, "
                f"UID in object meta: {old['metadata'].get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"].get("resourceVersion"):
            raise conflict(res.plural, res.group, name, STALE)
    if options.get("dryRun") == ["All"]:
        return json_response(view(res, old))
    if res.kind == "Pod":
        terminating = _terminate(store, old, options)
        if terminating is not None:
            return json_response(view(res, terminating))
    gone_obj = delete_cascading(
        store, res.store_kind, namespace, name, str(options.get("propagationPolicy") or "Background")
    )
    if gone_obj is None:
        raise not_found(res.plural, res.group, name)
    return json_response(view(res, gone_obj))


def _terminate(store: ClusterStore, pod: Obj, options: Mapping[str, Any]) -> Obj | None:
    """A pod on a node with a grace period is marked terminating (deletionTimestamp), as
    upstream; its kubelet removes it. Returns None when it goes at once: not bound, finished,
    or a grace period of 0."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    if not isinstance(grace, int) or isinstance(grace, bool):
        raise bad_request(f"gracePeriodSeconds: Invalid value: {grace!r}")
    if grace <= 0 or not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return None
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        return pod
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + grace))
    marked = {
        **pod,
        "metadata": {**meta, "deletionTimestamp": stamp, "deletionGracePeriodSeconds": grace},
    }
    try:
        return store.update(marked)
    except Conflict:
        raise conflict("pods", "", meta["name"], STALE) from None


def delete_collection(
    server: ApiServer, request: web.Request, strategy: Strategy, namespace: str | None
) -> web.Response:
    res = strategy.resource
    deleted = []
    for obj in select(server.store, request, strategy, namespace):
        meta = obj["metadata"]
        gone_obj = delete_cascading(
            server.store, res.store_kind, meta.get("namespace"), meta["name"], "Background"
        )
        if gone_obj is not None:
            deleted.append(view(res, gone_obj))
    return json_response(
        {"kind": f"{res.kind}List", "apiVersion": res.group_version, "metadata": {}, "items": deleted}
    )
