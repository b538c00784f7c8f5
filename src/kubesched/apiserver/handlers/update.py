"""PUT of a resource or its status: the strategy's update rules, then the store's compare-and-swap."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.apiserver import managed_fields
from kubesched.apiserver.handlers.prepare import prepare
from kubesched.apiserver.handlers.responses import get_or_404, json_response, view, warning_headers
from kubesched.apiserver.openapi.schemas import builtin_schema
from kubesched.registry.errors import STALE, bad_request, conflict, not_found
from kubesched.registry.strategy import Strategy
from kubesched.store.base import Conflict, NotFound, Obj
from kubesched.store.memory import format_timestamp

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer


def update(
    server: ApiServer,
    strategy: Strategy,
    namespace: str | None,
    name: str,
    sub: str | None,
    body: Any,
    query: Mapping[str, str],
    manager: str,
) -> web.Response:
    obj, warnings = prepare(
        server.store, server.auto_create_namespaces, strategy, namespace, body, query, creating=False
    )
    if obj["metadata"]["name"] != name:
        raise bad_request(
            f"the name of the object ({obj['metadata']['name']}) does not match the name on the URL ({name})"
        )
    old = get_or_404(server.store, strategy.resource, namespace, name)
    updated = store_update(server, strategy, old, obj, sub, query, manager)
    return json_response(view(strategy.resource, updated), 200, warning_headers(warnings))


def store_update(
    server: ApiServer,
    strategy: Strategy,
    old: Obj,
    obj: dict[str, Any],
    sub: str | None,
    query: Mapping[str, str],
    manager: str | None,
) -> Obj:
    """Write ``obj`` over ``old``; ``manager`` (None for an apply, which kept the managed fields
    itself) becomes the owner of the fields the write changed."""
    res = strategy.resource
    name = old["metadata"]["name"]
    given = obj["metadata"].get("resourceVersion")
    if given and given != old["metadata"]["resourceVersion"]:
        raise conflict(res.plural, res.group, name, STALE)
    if sub == "status":
        new = {**old, "status": obj.get("status") or {}}
        new["metadata"] = dict(old["metadata"])
        strategy.prepare_for_status_update(old, new)
    else:
        new = obj
        strategy.prepare_for_update(old, new)
        strategy.allocate(server.store, old, new)
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
    if manager is not None:
        managed_fields.track_update(
            old,
            new,
            manager=manager,
            api_version=res.group_version,
            now=format_timestamp(time.time()),
            subresource=sub or "",
            schema=builtin_schema(res.group, res.version, res.kind),
        )
    if query.get("dryRun") == "All":
        return new
    if new == old:
        return old
    try:
        return server.store.update(new)
    except Conflict:
        raise conflict(res.plural, res.group, name, STALE) from None
    except NotFound:
        raise not_found(res.plural, res.group, name) from None
