"""PATCH of a resource or its status: JSON patch, merge patch, strategic merge patch and server-side
apply (which creates an object that does not exist yet)."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiohttp import web

from kubesched.apiserver import managed_fields
from kubesched.apiserver.convert import served
from kubesched.apiserver.handlers.body import decode
from kubesched.apiserver.handlers.create import create
from kubesched.apiserver.handlers.prepare import prepare
from kubesched.apiserver.handlers.responses import json_response, view, warning_headers
from kubesched.apiserver.handlers.update import store_update
from kubesched.apiserver.openapi.schemas import builtin_schema
from kubesched.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from kubesched.registry.errors import (
    STALE,
    ApiError,
    bad_request,
    conflict,
    invalid,
    not_found,
    unsupported_media_type,
)
from kubesched.registry.strategy import Strategy
from kubesched.store.memory import format_timestamp

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH, APPLY)


def patch(
    server: ApiServer,
    strategy: Strategy,
    namespace: str | None,
    name: str,
    sub: str | None,
    ctype: str,
    raw: bytes,
    query: Mapping[str, str],
    manager: str,
) -> web.Response:
    res = strategy.resource
    applying = ctype == APPLY
    _check_options(applying, query)
    force = query.get("force") in ("true", "1", "True")
    if ctype not in PATCH_TYPES:
        raise unsupported_media_type(ctype)
    schema = builtin_schema(res.group, res.version, res.kind)
    if ctype == STRATEGIC_MERGE_PATCH and schema is None:
        raise unsupported_media_type(ctype)  # a custom resource upstream: no Go type to merge by
    change = decode(raw, "yaml" if ctype.endswith("yaml") else "json")
    if ctype != JSON_PATCH and not isinstance(change, dict):
        raise bad_request("the patch must be a JSON object")
    store = server.store
    for _ in range(10):
        old = store.get(res.store_kind, namespace, name)
        if old is None and not applying:
            raise not_found(res.plural, res.group, name)
        current = None if old is None else served(copy.deepcopy(dict(old)), res.group, res.version)
        if applying:
            patched = managed_fields.apply(
                current,
                change,
                manager=manager,
                force=force,
                api_version=res.group_version,
                now=format_timestamp(time.time()),
                schema=schema,
            )
        elif ctype == JSON_PATCH:
            patched = json_patch(current, change)
        elif ctype == STRATEGIC_MERGE_PATCH:
            patched = strategic_merge_patch(current, change, schema)
        else:
            patched = merge_patch(current, change)
        if old is None:
            # Applying an object that does not exist yet creates it.
            return create(server, strategy, namespace, patched, query)
        if not isinstance(patched, dict):
            raise bad_request("the patched object is not an object")
        obj, warnings = prepare(
            store, server.auto_create_namespaces, strategy, namespace, patched, query, creating=False
        )
        if obj["metadata"].get("name") != name:
            raise bad_request("the patch must not change the object's name")
        rv = obj["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, res.group, name, STALE)
        try:
            updated = store_update(server, strategy, old, obj, sub, query, None if applying else manager)
        except ApiError as err:
            if err.reason == "Conflict" and not (
                isinstance(change, dict) and (change.get("metadata") or {}).get("resourceVersion")
            ):
                continue  # someone wrote in between: patch the newer object
            raise
        return json_response(view(res, updated), 200, warning_headers(warnings))
    raise conflict(res.plural, res.group, name, STALE)


def _check_options(applying: bool, query: Mapping[str, str]) -> None:
    """An apply names its field manager; only an apply may force."""
    if applying and not query.get("fieldManager"):
        raise invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            [("FieldValueRequired", "fieldManager", "Required value: is required for apply patch")],
        )
    if not applying and "force" in query:
        raise invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            [("FieldValueForbidden", "force", "Forbidden: may not be specified for non-apply patch")],
        )
