"""Routing: a request's path to the handler of its resource, verb and subresource (upstream's
``endpoints/installer.go``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from kubesched.apiserver import discovery, ui
from kubesched.apiserver.cluster_summary import cluster_summary
from kubesched.apiserver.handlers.binding import bind
from kubesched.apiserver.handlers.body import body, raw_body
from kubesched.apiserver.handlers.create import create
from kubesched.apiserver.handlers.delete import delete, delete_collection, delete_options
from kubesched.apiserver.handlers.dryrun import dry_run
from kubesched.apiserver.handlers.eviction import evict
from kubesched.apiserver.handlers.get import get_one, list_objects
from kubesched.apiserver.handlers.patch import PATCH_TYPES, patch
from kubesched.apiserver.handlers.pod_streams import STREAMS, pod_stream
from kubesched.apiserver.handlers.responses import field_manager, json_response
from kubesched.apiserver.handlers.review import review
from kubesched.apiserver.handlers.scale import scale
from kubesched.apiserver.handlers.update import update
from kubesched.apiserver.handlers.watch import watch
from kubesched.apiserver.pod_list import pod_list
from kubesched.apiserver.replay import replay
from kubesched.apiserver.resources import api_group, api_group_list, api_resource_list
from kubesched.apiserver.running_configs import config_endpoint
from kubesched.registry.errors import ApiError, method_not_allowed, not_found
from kubesched.registry.review import ReviewStrategy
from kubesched.registry.strategy import Strategy
from kubesched.registry.table import served_groups, served_strategies
from kubesched.runtime.metrics import CONTENT_TYPE

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer


def _not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


async def dispatch(server: ApiServer, request: web.Request) -> web.StreamResponse:
    path = request.path.rstrip("/") or "/"
    parts = [p for p in path.split("/") if p]
    method = request.method
    if parts and parts[0] in ("healthz", "readyz", "livez") and len(parts) <= 2:
        return discovery.health(request, parts, server.ready_checks)
    if path == "/metrics":
        if server.metrics is None:
            raise _not_found()
        return web.Response(body=server.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})
    if path == "/version":
        return json_response(discovery.version(server.git_version))
    if path == "/api":
        return discovery.core_versions(request)
    if path == "/apis":
        return json_response(api_group_list())
    if parts and parts[0] == "openapi":
        return discovery.openapi_document(request, parts)
    if parts and parts[0] == "ui":
        return await ui.ui(server, request, parts)
    if parts[:2] == ["kubesched", "v1"]:
        if parts[2:] == ["decode"]:
            return await ui.decode(request)
        if parts[2:] == ["cluster"]:
            return await cluster_summary(server, request)
        if parts[2:] == ["pods"]:
            return await pod_list(server, request)
        if parts[2:] == ["replay"]:
            return await replay(server, request)
        if len(parts) == 4 and parts[2] == "config":
            return await config_endpoint(server, request, parts[3])
        raise _not_found()
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 2 and parts[0] == "apis" and parts[1] in served_groups():
        if len(parts) == 2:
            return json_response(api_group(parts[1]))
        group, version, rest = parts[1], parts[2], parts[3:]
        if not served_strategies(group, version):
            raise not_found("", "", path)
    else:
        raise _not_found()
    if not rest:
        if method != "GET":
            raise method_not_allowed()
        return json_response(api_resource_list(group, version))
    strategies = served_strategies(group, version)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    strategy = strategies.get(rest[0])
    if strategy is None or len(rest) > 3:
        raise _not_found()
    res = strategy.resource
    if namespace is not None and not res.namespaced:
        raise _not_found()
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if sub is not None and sub not in res.subresources:
        raise _not_found()
    # The options are checked once the request's media type is known to be one the verb takes (a
    # PATCH of an unknown type is a 415 first, as upstream).
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
    # DELETE's come with its DeleteOptions, which may be in the body.
    writes = method in ("POST", "PUT") or (method == "PATCH" and ctype in PATCH_TYPES)
    dry = writes and dry_run(method, request.query.getall("dryRun", []))
    if isinstance(strategy, ReviewStrategy):
        # Only created: no objects to name, list or watch.
        if name is not None:
            raise _not_found()
        if request.method != "POST":
            raise method_not_allowed()
        obj = await body(request)
        return review(request, strategy, obj, server.token)
    if name is None:
        return await _collection(server, request, strategy, namespace)
    return await _item(server, request, strategy, namespace, name, sub, dry)


async def _collection(
    server: ApiServer, request: web.Request, strategy: Strategy, namespace: str | None
) -> web.StreamResponse:
    method = request.method
    query = request.query
    if method == "GET":
        if query.get("watch") in ("1", "true", "True"):
            return await watch(server, request, strategy, namespace)
        return await server.read(lambda: list_objects(server.store, request, strategy, namespace))
    if method == "POST":
        if not strategy.resource.namespaced or namespace is not None:
            obj = await body(request)
            return await server.write(lambda: create(server, strategy, namespace, obj, query))
        raise method_not_allowed()
    if method == "DELETE":
        dry = (await delete_options(request)).get("dryRun") == ["All"]
        return await server.write(lambda: delete_collection(server, request, strategy, namespace, dry))
    raise method_not_allowed()


async def _item(
    server: ApiServer,
    request: web.Request,
    strategy: Strategy,
    namespace: str | None,
    name: str,
    sub: str | None,
    dry: bool,
) -> web.StreamResponse:
    method = request.method
    query = request.query
    if strategy.resource.namespaced and namespace is None:
        raise _not_found()
    if sub == "binding" or sub == "eviction":
        if method != "POST":
            raise method_not_allowed()
        obj = await body(request)
        ns = namespace or "default"
        if sub == "binding":
            return await server.write(lambda: bind(server.store, ns, name, obj, dry))
        return await server.write(lambda: evict(server, ns, name, obj, dry))
    if sub in STREAMS:
        return await pod_stream(server, request, strategy, namespace or "default", name, sub)
    if sub == "scale":
        return await scale(server, request, strategy, namespace, name, dry)
    if method == "GET":
        return await server.read(lambda: get_one(server.store, request, strategy, namespace, name))
    if method == "PUT":
        obj = await body(request)
        manager = field_manager(request)
        return await server.write(lambda: update(server, strategy, namespace, name, sub, obj, query, manager))
    if method == "PATCH":
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
        raw = await raw_body(request)
        manager = field_manager(request)
        return await server.write(
            lambda: patch(server, strategy, namespace, name, sub, ctype, raw, query, manager)
        )
    if method == "DELETE":
        if sub is not None:
            raise method_not_allowed()
        options = await delete_options(request)
        return await server.write(lambda: delete(server, strategy, namespace, name, options))
    raise method_not_allowed()
