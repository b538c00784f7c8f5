"""The autoscaling/v1 Scale subresource: spec.replicas of a workload, read and written."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.apiserver import managed_fields
from kubesched.apiserver.handlers.body import decode, raw_body
from kubesched.apiserver.handlers.responses import field_manager, get_or_404, json_response
from kubesched.apiserver.openapi.schemas import builtin_schema
from kubesched.apiserver.patch import json_patch, merge_patch
from kubesched.registry.errors import (
    STALE,
    bad_request,
    conflict,
    invalid,
    method_not_allowed,
    unsupported_media_type,
)
from kubesched.registry.strategy import Strategy
from kubesched.store.base import Conflict
from kubesched.store.memory import format_timestamp

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer


async def scale(
    server: ApiServer,
    request: web.Request,
    strategy: Strategy,
    namespace: str | None,
    name: str,
    dry: bool = False,
) -> web.Response:
    res = strategy.resource
    method = request.method
    if method not in ("GET", "PUT", "PATCH"):
        raise method_not_allowed()
    for _ in range(10):
        obj = get_or_404(server.store, res, namespace, name)
        current = _scale_of(obj)
        if method == "GET":
            await server.read_committed()
            return json_response(current)
        replicas, given = await _wanted(request, current, name)
        if given and given != obj["metadata"]["resourceVersion"]:
            raise conflict(res.plural, res.group, name, STALE)
        spec = dict(obj.get("spec") or {})
        spec["replicas"] = replicas
        generation = int(obj["metadata"].get("generation") or 1)
        new = {**obj, "spec": spec, "metadata": {**obj["metadata"], "generation": generation + 1}}
        managed_fields.track_update(
            obj,
            new,
            manager=field_manager(request),
            api_version=res.group_version,
            now=format_timestamp(time.time()),
            subresource="scale",
            schema=builtin_schema(res.group, res.version, res.kind),
        )
        if dry:
            return json_response(_scale_of(new))
        try:
            updated = server.store.update(new)
        except Conflict:
            continue
        return json_response(_scale_of(updated))
    raise conflict(res.plural, res.group, name, STALE)


async def _wanted(request: web.Request, current: dict[str, Any], name: str) -> tuple[int, Any]:
    """The replicas a PUT or PATCH of the Scale asks for, and the resourceVersion it gives."""
    raw = await raw_body(request)
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
    if request.method == "PUT":
        wanted = decode(raw, ctype)
    elif ctype == "application/json-patch+json":
        wanted = json_patch(current, decode(raw, ctype))
    elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        wanted = merge_patch(current, decode(raw, ctype))
    else:
        raise unsupported_media_type(ctype)
    if not isinstance(wanted, dict):
        raise bad_request("a Scale must be an object")
    # An omitted (or null) replicas is zero, as Go decodes ScaleSpec.
    replicas = (wanted.get("spec") or {}).get("replicas")
    replicas = 0 if replicas is None else replicas
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise invalid(
            "Scale",
            "autoscaling",
            name,
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                )
            ],
        )
    return replicas, (wanted.get("metadata") or {}).get("resourceVersion")


def _scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector") or {}
    # A ReplicationController's selector is the label map itself.
    labels = selector if obj.get("kind") == "ReplicationController" else selector.get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        # ScaleSpec's replicas is omitted when zero (omitempty); ScaleStatus's never is.
        "spec": {"replicas": replicas} if (replicas := spec.get("replicas", 1)) else {},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }
