"""What every handler answers with: JSON bodies, served views, warnings, and what a request asks of
its answer (a table, a field manager)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from kubesched.apiserver import managed_fields
from kubesched.apiserver.convert import served
from kubesched.apiserver.query import Match
from kubesched.apiserver.tables import TableOptions, table_options
from kubesched.registry.errors import ApiError, not_found
from kubesched.registry.strategy import Resource
from kubesched.store.base import ClusterStore, Obj


def json_response(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    # kube-apiserver's JSON encoder ends every body with a newline; clients that show or compare
    # the text of an answer (a Status in an error message) see the same bytes.
    return web.Response(
        body=orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def error_response(err: ApiError) -> web.Response:
    return json_response(err.status(), err.code)


def view(res: Resource, obj: Obj) -> dict[str, Any]:
    """An object as ``res`` serves it."""
    return served(dict(obj), res.group, res.version)


def get_or_404(store: ClusterStore, res: Resource, namespace: str | None, name: str) -> Obj:
    obj = store.get(res.store_kind, namespace, name)
    if obj is None:
        raise not_found(res.plural, res.group, name)
    return obj


def field_manager(request: web.Request) -> str:
    """The manager a write is recorded for: ``fieldManager``, else upstream's default from the
    User-Agent."""
    return request.query.get("fieldManager") or managed_fields.manager_from_user_agent(
        request.headers.get("User-Agent", "")
    )


def wants_table(request: web.Request) -> TableOptions | None:
    """The Table the request asks for (None: the objects themselves)."""
    return table_options(request.headers.get("Accept", ""), request.query)


def warning_headers(warnings: list[str]) -> dict[str, str] | None:
    if not warnings:
        return None
    return {"Warning": ", ".join(f'299 - "{_header_text(w)}"' for w in warnings)}


def _header_text(text: str) -> str:
    """Printable ASCII only: a field name from a request body must not break the header."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '\\"' else f"\\u{ord(c):04x}" for c in text)


def matches(
    obj: Mapping[str, Any], namespace: str | None, labels: Match | None, fields: Match | None
) -> bool:
    if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
        return False
    if labels is not None and not labels(obj):
        return False
    return fields is None or fields(obj)


def sort_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
