"""POST of a resource: prepare, default, admit and store a new object."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.apiserver.handlers.prepare import prepare
from kubesched.apiserver.handlers.responses import json_response, view, warning_headers
from kubesched.errors import InputError
from kubesched.registry.admission import admit
from kubesched.registry.errors import ApiError, already_exists
from kubesched.registry.strategy import Strategy
from kubesched.store.base import AlreadyExists, ClusterStore, Obj, random_uid
from kubesched.store.memory import format_timestamp

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer


def create(
    server: ApiServer, strategy: Strategy, namespace: str | None, body: Any, query: Mapping[str, str]
) -> web.Response:
    created, warnings = create_object(
        server.store, server.auto_create_namespaces, strategy, namespace, body, query
    )
    return json_response(view(strategy.resource, created), 201, warning_headers(warnings))


def create_object(
    store: ClusterStore,
    auto_create_namespaces: bool,
    strategy: Strategy,
    namespace: str | None,
    body: Any,
    query: Mapping[str, str],
) -> tuple[Obj, list[str]]:
    """Check, default, admit and store a new object (unless ``dryRun=All``): the object as stored
    and the warnings for the client. A refusal is an :class:`ApiError`."""
    res = strategy.resource
    obj, warnings = prepare(store, auto_create_namespaces, strategy, namespace, body, query, creating=True)
    strategy.prepare_for_create(obj)
    strategy.defaults(obj)
    strategy.allocate(store, None, obj)
    name = obj["metadata"]["name"]
    try:
        admit(store, obj)
        if query.get("dryRun") == "All":
            return _dry_created(store, strategy, obj), warnings
        created = store.create(obj)
    except AlreadyExists:
        raise already_exists(res.plural, res.group, name) from None
    except InputError as exc:
        # Storage refuses a name taken before admission refuses the object.
        if store.get(res.store_kind, namespace, name) is not None:
            raise already_exists(res.plural, res.group, name) from None
        raise ApiError(403, "Forbidden", f'{res.plural} "{name}" is forbidden: {exc.message}') from None
    return created, warnings


def _dry_created(store: ClusterStore, strategy: Strategy, obj: dict[str, Any]) -> Obj:
    """The object a create would store: a taken name is refused as the create would be, and the
    server's own fields (uid, creationTimestamp) are filled, as upstream fills them; no
    resourceVersion, since nothing was written."""
    meta = obj["metadata"]
    if store.get(strategy.store_kind, meta.get("namespace"), meta["name"]) is not None:
        raise AlreadyExists(meta["name"])
    obj["metadata"] = {**meta, "uid": random_uid(), "creationTimestamp": format_timestamp(time.time())}
    return obj
