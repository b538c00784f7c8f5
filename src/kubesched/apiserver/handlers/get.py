"""GET of one object and of a list (label and field selectors, pages, tables)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
from aiohttp import web

from kubesched.apiserver.handlers.responses import (
    get_or_404,
    json_response,
    matches,
    sort_key,
    view,
    wants_table,
)
from kubesched.apiserver.query import Match, parse_field_selector, parse_label_selector
from kubesched.apiserver.tables import table
from kubesched.registry.errors import bad_request
from kubesched.registry.strategy import Strategy
from kubesched.store.base import ClusterStore, Obj
from kubesched.store.sqlite import SqliteStore


def get_one(
    store: ClusterStore, request: web.Request, strategy: Strategy, namespace: str | None, name: str
) -> web.Response:
    obj = view(strategy.resource, get_or_404(store, strategy.resource, namespace, name))
    options = wants_table(request)
    if options is not None:
        list_meta = {"resourceVersion": obj["metadata"]["resourceVersion"]}
        return json_response(table(strategy, [obj], list_meta, options))
    return json_response(obj)


def matchers(request: web.Request, strategy: Strategy) -> tuple[Match | None, Match | None]:
    """The request's label and field selectors."""
    q = request.query
    labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
    fields = (
        parse_field_selector(q["fieldSelector"], strategy.selectable_fields)
        if q.get("fieldSelector")
        else None
    )
    return labels, fields


def select(store: ClusterStore, request: web.Request, strategy: Strategy, namespace: str | None) -> list[Obj]:
    """The objects of the strategy's kind the request's namespace and selectors pick."""
    labels, fields = matchers(request, strategy)
    res = strategy.resource
    return [o for o in store.list(res.store_kind) if matches(view(res, o), namespace, labels, fields)]


def list_objects(
    store: SqliteStore, request: web.Request, strategy: Strategy, namespace: str | None
) -> web.Response:
    res = strategy.resource
    q = request.query
    labels, fields = matchers(request, strategy)
    options = wants_table(request)
    items, rv = store.list_with_version(res.store_kind)
    keyed = sorted(((sort_key(o), o) for o in items), key=lambda t: t[0])
    start_after: tuple[str, str] | None = None
    if q.get("continue"):
        try:
            token = orjson.loads(base64.urlsafe_b64decode(q["continue"].encode()))
            start_after = (str(token["ns"]), str(token["name"]))
        except Exception:
            raise bad_request("continue key is not valid: invalid continue token") from None
    try:
        limit = int(q.get("limit") or 0)
    except ValueError:
        raise bad_request(f"limit: Invalid value: {q.get('limit')!r}") from None
    out: list[dict[str, Any]] = []
    next_token: str | None = None
    remaining = 0
    for key, obj in keyed:
        if start_after is not None and key <= start_after:
            continue
        served = view(res, obj)
        if not matches(served, namespace, labels, fields):
            continue
        if limit > 0 and len(out) >= limit:
            remaining += 1
            continue
        out.append(served)
    if remaining and out:
        last = sort_key(out[-1])
        next_token = base64.urlsafe_b64encode(orjson.dumps({"ns": last[0], "name": last[1]})).decode()
    list_meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if next_token:
        list_meta["continue"] = next_token
        list_meta["remainingItemCount"] = remaining
    if options is not None:
        return json_response(table(strategy, out, list_meta, options))
    return json_response(
        {"kind": f"{res.kind}List", "apiVersion": res.group_version, "metadata": list_meta, "items": out}
    )
