"""The HTTP API: kube-apiserver's REST surface over a :class:`SqliteStore`, as an aiohttp app.

Paths, verbs, status codes and ``Status`` bodies follow upstream, so that kubectl and client
libraries work unchanged. Objects are stored as they are served (one version per kind; Events are
converted between core/v1 and events.k8s.io/v1 on the way out).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import logging
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson
import yaml
from aiohttp import web

from kubesched import __version__
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.apiserver import managed_fields, openapi, protobuf
from kubesched.apiserver.convert import served
from kubesched.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from kubesched.apiserver.query import Match, parse_field_selector, parse_label_selector
from kubesched.apiserver.resources import (
    BY_GROUP_VERSION,
    GROUPS,
    Resource,
    api_group,
    api_group_list,
    api_resource_list,
)
from kubesched.apiserver.status import (
    STALE,
    ApiError,
    already_exists,
    bad_request,
    conflict,
    gone,
    invalid,
    method_not_allowed,
    not_found,
    success,
    too_large,
    unauthorized,
    unsupported_media_type,
)
from kubesched.apiserver.tables import table
from kubesched.errors import InputError
from kubesched.metrics.health import Check, health_response, with_ping
from kubesched.runtime.metrics import CONTENT_TYPE, SchedulerMetrics
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound, Obj, WatchEvent
from kubesched.store.memory import format_timestamp
from kubesched.store.parsers import DEFAULT_PARSERS
from kubesched.store.sqlite import CommitFailed, SqliteStore, TooOld

log = logging.getLogger(__name__)

#: Upstream's limit on a request body (3 MiB).
MAX_BODY = 3 * 1024 * 1024
#: Upstream caps a watch at a random 30 to 60 minutes; one fixed cap is enough here.
MAX_WATCH_SECONDS = 1800
#: After a watch has sent changes, how long it waits to gather the next ones into one write.
WATCH_BATCH_SECONDS = 0.005
#: Changes whose encoded watch lines are kept for the other watches (cleared past this size).
_ENCODED_CACHE = 4096

_POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
    "existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

T = TypeVar("T")

#: Quantities that parsed: requests repeat a few amounts ("100m", "1Gi"), each checked once.
_VALID_QUANTITIES: set[str] = set()
_VALID_QUANTITIES_KEPT = 4096
#: Objects (as JSON, name left out) the schedulers' parser accepted, and how many are kept.
_ACCEPTED_SHAPES: set[bytes] = set()
_ACCEPTED_SHAPES_KEPT = 1024

#: Top-level fields each kind has besides apiVersion, kind and metadata (unknown ones are refused
#: under fieldValidation=Strict and warned about otherwise).
_TOP_FIELDS: dict[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData", "immutable"}),
    "Event": frozenset(
        {
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
            "regarding",
            "note",
            "reportingController",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        }
    ),
    "PriorityClass": frozenset({"value", "globalDefault", "description", "preemptionPolicy"}),
}
_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

#: Kinds whose spec changes bump metadata.generation.
_GENERATION_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "Job", "PodGroup", "Queue", "PodDisruptionBudget"}
)


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _json(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type="application/json", headers=headers)


def _error_response(err: ApiError) -> web.Response:
    return _json(err.status(), err.code)


class ApiServer:
    """The request handlers; one per served cluster."""

    def __init__(
        self,
        store: SqliteStore,
        token: str,
        *,
        bookmark_interval: float = 60.0,
        git_version: str = "v1.32.0",
        auto_create_namespaces: bool = True,
    ) -> None:
        self.store = store
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.git_version = git_version
        #: A playground convenience (upstream answers 404): creating an object in a namespace that
        #: does not exist creates the namespace, so manifests made for ``simulate`` apply as they are.
        self.auto_create_namespaces = auto_create_namespaces
        #: Per kind, the event the watches of that kind wait on; set (and dropped) when an object
        #: of the kind changes, so a write wakes only the watches that may have something to send.
        self._changed: dict[str, asyncio.Event] = {}
        #: Kinds written since the last wake (guarded by the store's lock).
        self._changed_kinds: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_pending = False
        #: Requests whose writes wait for the commit made at the end of this turn of the loop.
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._commit_scheduled = False
        #: Encoded watch lines and served views of recent changes, shared by the watches that send
        #: the same change in the same form: each is built once, not once per watch.
        self._lines: dict[tuple[int, str, str, str], bytes] = {}
        self._views: dict[tuple[int, bool, str, str], dict[str, Any]] = {}
        self.started = time.time()
        #: The served schedulers' metrics (``GET /metrics``, behind the token like every API path);
        #: None: ``/metrics`` is 404.
        self.metrics: SchedulerMetrics | None = None
        #: Named checks ``/readyz`` runs after ``ping`` (``/healthz`` and ``/livez`` run ``ping``).
        self.ready_checks: dict[str, Check] = {}

    # -- wiring ----------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        # Every path reaches one handler that guards itself: an aiohttp middleware would wrap each
        # request in another layer of calls for the same effect.
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self._loop = asyncio.get_running_loop()
        self.store.add_kind_listener(self._on_write)

    async def _on_cleanup(self, _app: web.Application) -> None:
        self.store.remove_kind_listener(self._on_write)

    def _on_write(self, kind: str) -> None:
        """Any thread, after any write, holding the store's lock: wake the watches of ``kind``
        (once per loop turn)."""
        if kind not in self._changed:
            # No watch waits on this kind: a watch registers its wake-up before it reads the
            # changes, under the store's lock that this write holds, so it cannot miss this one.
            return
        self._changed_kinds.add(kind)
        if self._wake_pending or self._loop is None:
            return
        self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: the server is going down
            self._wake_pending = False

    def _wake(self) -> None:
        with self.store.lock:
            self._wake_pending = False
            kinds, self._changed_kinds = self._changed_kinds, set()
        for kind in kinds:
            changed = self._changed.pop(kind, None)
            if changed is not None:
                changed.set()
        if len(self._lines) > _ENCODED_CACHE or len(self._views) > _ENCODED_CACHE:
            self._lines.clear()
            self._views.clear()

    def _changed_event(self, kind: str) -> asyncio.Event:
        """The event set at the next change of an object of ``kind``."""
        changed = self._changed.get(kind)
        if changed is None:
            changed = self._changed[kind] = asyncio.Event()
        return changed

    def _served_view(self, obj: Obj, rv: int, old: bool, res: Resource) -> dict[str, Any]:
        """``served`` of a change's object (``old``: its previous state), built once per change."""
        key = (rv, old, res.group, res.version)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = served(dict(obj), res.group, res.version)
        return view

    def _event_for(
        self,
        event: WatchEvent,
        rv: int,
        res: Resource,
        namespace: str | None,
        labels: Match | None,
        fields: Match | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """What a filtered watch sees of one change: an object that starts matching is ADDED, one
        that stops matching DELETED (as upstream's filtered watch)."""
        view = self._served_view(event.obj, rv, False, res)
        now = _matches(view, namespace, labels, fields)
        if event.type == EventType.DELETED:
            return ("DELETED", view) if now else None
        if event.type == EventType.ADDED:
            return ("ADDED", view) if now else None
        before = event.old is not None and _matches(
            self._served_view(event.old, rv, True, res), namespace, labels, fields
        )
        if now and before:
            return ("MODIFIED", view)
        if now:
            return ("ADDED", view)
        if before:
            return ("DELETED", view)
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await self._guard(request, self._dispatch)

    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Authentication, and errors as Status bodies: a handler bug is a 500 Status, never a
        traceback to the client."""
        path = request.path
        public = path in ("/healthz", "/readyz", "/livez", "/version") or path.startswith(
            ("/healthz/", "/readyz/", "/livez/")
        )
        if not public:
            auth = request.headers.get("Authorization", "")
            if auth != f"Bearer {self.token}":
                return _error_response(unauthorized())
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except ApiError as err:
            return _error_response(err)
        except web.HTTPRequestEntityTooLarge:
            return _error_response(too_large())
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except CommitFailed as exc:
            log.error("%s", exc)
            return _error_response(ApiError(500, "InternalError", str(exc)))
        except Exception:
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            return _error_response(ApiError(500, "InternalError", "an internal error occurred"))

    # -- routing ---------------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        method = request.method
        if parts and parts[0] in ("healthz", "readyz", "livez") and len(parts) <= 2:
            return self._health(request, parts)
        if path == "/metrics":
            if self.metrics is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})
        if path == "/version":
            return _json(self._version())
        if path == "/api":
            host = request.host
            return _json(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
                }
            )
        if path == "/apis":
            return _json(api_group_list())
        if parts and parts[0] == "openapi":
            return self._openapi(request, parts)
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 2 and parts[0] == "apis" and parts[1] in GROUPS:
            if len(parts) == 2:
                return _json(api_group(parts[1]))
            group, version, rest = parts[1], parts[2], parts[3:]
            if (group, version) not in BY_GROUP_VERSION:
                raise not_found("", "", path)
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if method != "GET":
                raise method_not_allowed()
            return _json(api_resource_list(group, version))
        resources = BY_GROUP_VERSION[(group, version)]
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        res = resources.get(rest[0])
        if res is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace is not None and not res.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return await self._resource(request, res, namespace, name, sub)

    def _health(self, request: web.Request, parts: list[str]) -> web.Response:
        endpoint = parts[0]
        checks = with_ping(self.ready_checks if endpoint == "readyz" else {})
        status, body = health_response(
            endpoint,
            checks,
            check=parts[1] if len(parts) == 2 else None,
            verbose="verbose" in request.query,
            exclude=request.query.getall("exclude", []),
        )
        return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")

    def _version(self) -> dict[str, str]:
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": f"kubesched-{__version__}",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "python",
            "compiler": "kubesched",
            "platform": "linux/amd64",
        }

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        if parts[:2] == ["openapi", "v3"]:
            if len(parts) == 2:
                return _json(openapi.v3_root())
            doc = openapi.v3_group_version("/".join(parts[2:]))
            if doc is not None:
                return _json(doc)
        if parts == ["openapi", "v2"]:
            if "protobuf" in request.headers.get("Accept", ""):
                return web.Response(
                    body=openapi.v2_protobuf(),
                    headers={"Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
                )
            return _json(openapi.v2())
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # -- resources -------------------------------------------------------------------------------
    async def _resource(
        self, request: web.Request, res: Resource, namespace: str | None, name: str | None, sub: str | None
    ) -> web.StreamResponse:
        method = request.method
        query = request.query
        if name is None:
            if method == "GET":
                if query.get("watch") in ("1", "true", "True"):
                    return await self._watch(request, res, namespace)
                return await self._read(lambda: self._list(request, res, namespace))
            if method == "POST":
                if not res.namespaced or namespace is not None:
                    body = await self._body(request)
                    return await self._write(lambda: self._create(res, namespace, body, query))
                raise method_not_allowed()
            if method == "DELETE":
                return await self._write(lambda: self._delete_collection(request, res, namespace))
            raise method_not_allowed()
        if res.namespaced and namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub == "binding":
            if method != "POST":
                raise method_not_allowed()
            body = await self._body(request)
            return await self._write(lambda: self._bind(namespace or "default", name, body))
        if sub == "eviction":
            if method != "POST":
                raise method_not_allowed()
            body = await self._body(request)
            return await self._write(lambda: self._evict(namespace or "default", name, body))
        if sub == "scale":
            return await self._scale(request, res, namespace, name)
        if method == "GET":
            return await self._read(lambda: self._get_one(request, res, namespace, name))
        if method == "PUT":
            body = await self._body(request)
            manager = _field_manager(request)
            return await self._write(lambda: self._update(res, namespace, name, sub, body, query, manager))
        if method == "PATCH":
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
            raw = await self._raw_body(request)
            manager = _field_manager(request)
            return await self._write(
                lambda: self._patch(res, namespace, name, sub, ctype, raw, query, manager)
            )
        if method == "DELETE":
            if sub is not None:
                raise method_not_allowed()
            raw = await self._raw_body(request)
            options = self._decode(raw, request.headers.get("Content-Type", "")) if raw.strip() else {}
            if not isinstance(options, dict):
                raise bad_request("DeleteOptions must be an object")
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
            return await self._write(lambda: self._delete(res, namespace, name, options))
        raise method_not_allowed()

    def _get_one(self, request: web.Request, res: Resource, namespace: str | None, name: str) -> web.Response:
        view = self._served(res, self._get(res, namespace, name))
        if _wants_table(request):
            return _json(table(res.kind, [view], {"resourceVersion": view["metadata"]["resourceVersion"]}))
        return _json(view)

    # -- commits ---------------------------------------------------------------------------------
    async def _read(self, handle: Callable[[], web.Response]) -> web.Response:
        """Run a handler that reads the store; answer once what it read is committed."""
        response = handle()
        await self._read_committed()
        return response

    async def _read_committed(self) -> None:
        """Return once whatever a read of the store just saw is committed (a write may be in
        memory before its commit, which a client must never see)."""
        await self._committed(self.store.pending_generation())

    async def _write(self, handle: Callable[[], web.Response]) -> web.Response:
        """Run a handler that writes; answer once its writes are committed. The handlers that write
        in one turn of the loop share one commit, made after them in the same turn (the store
        commits every write waiting, whoever's)."""
        try:
            with self.store.deferring() as pending:
                return handle()
        finally:
            await self._committed(pending.generation)

    async def _committed(self, generation: int) -> None:
        if not generation or self.store.committed(generation):
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._commit_waiters.append((generation, waiter))
        if not self._commit_scheduled:
            self._commit_scheduled = True
            loop.call_soon(self._commit_waiting)
        await waiter

    def _commit_waiting(self) -> None:
        self._commit_scheduled = False
        waiters, self._commit_waiters = self._commit_waiters, []
        try:
            self.store.sync(max(generation for generation, _ in waiters))
        except Exception as exc:
            for _, waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for _, waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _served(self, res: Resource, obj: Obj) -> dict[str, Any]:
        return served(dict(obj), res.group, res.version)

    def _get(self, res: Resource, namespace: str | None, name: str) -> Obj:
        obj = self.store.get(res.kind, namespace, name)
        if obj is None:
            raise not_found(res.plural, res.group, name)
        return obj

    # -- bodies ----------------------------------------------------------------------------------
    async def _raw_body(self, request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise too_large()
        return await request.read()

    async def _body(self, request: web.Request) -> Any:
        raw = await self._raw_body(request)
        if not raw.strip():
            raise bad_request("the request body is empty")
        return self._decode(raw, request.headers.get("Content-Type", ""))

    @staticmethod
    def _decode(raw: bytes, content_type: str) -> Any:
        try:
            if "protobuf" in content_type:
                return protobuf.decode(raw)
            if "yaml" in content_type:
                doc = yaml.safe_load(raw.decode("utf-8"))
                # YAML escapes can make strings JSON cannot carry (a lone surrogate): refused here,
                # as a JSON body with one is.
                orjson.dumps(doc)
                return doc
            return orjson.loads(raw)
        except (
            orjson.JSONDecodeError,
            yaml.YAMLError,
            UnicodeDecodeError,
            RecursionError,
            ValueError,
            TypeError,
        ) as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise bad_request(f"the body of the request could not be decoded: {text}") from None

    # -- validation ------------------------------------------------------------------------------
    def _prepare(
        self,
        res: Resource,
        namespace: str | None,
        body: Any,
        query: Mapping[str, str],
        *,
        creating: bool,
    ) -> tuple[dict[str, Any], list[str]]:
        """Check a body's shape for ``res`` and fill defaults; returns it and any warnings."""
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
        kind = body.get("kind")
        if kind is None:
            body["kind"] = res.kind
        elif kind != res.kind:
            raise bad_request(
                f"the object provided is unrecognized (must be of type {res.kind}): kind {kind!r}"
            )
        api_version = body.get("apiVersion")
        if api_version is None:
            body["apiVersion"] = res.group_version
        elif not isinstance(api_version, str) or (
            api_version != res.group_version
            and not (res.kind == "Event" and api_version in ("v1", "events.k8s.io/v1"))
        ):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({res.group_version})"
            )
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        name = meta.get("name")
        shown = name if isinstance(name, str) else ""
        if creating and not name:
            generate = meta.get("generateName")
            if isinstance(generate, str) and generate:
                name = generate + "".join(random.choices(_GENERATE_ALPHABET, k=5))
                meta["name"] = name
            else:
                raise invalid(
                    res.kind,
                    res.group,
                    "",
                    [
                        (
                            "FieldValueRequired",
                            "metadata.name",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
        if not isinstance(name, str):
            raise invalid(
                res.kind,
                res.group,
                shown,
                [("FieldValueInvalid", "metadata.name", "Invalid value: must be a string")],
            )
        pattern = _DNS_LABEL if res.kind == "Namespace" else _DNS_SUBDOMAIN
        if len(name) > 253 or not pattern.fullmatch(name):
            raise invalid(
                res.kind,
                res.group,
                name,
                [
                    (
                        "FieldValueInvalid",
                        "metadata.name",
                        f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                        "character",
                    )
                ],
            )
        if res.namespaced:
            given = meta.get("namespace")
            if given is not None and given != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
            if creating and self.store.get("Namespace", None, str(namespace)) is None:
                if not self.auto_create_namespaces:
                    raise not_found("namespaces", "", str(namespace))
                created: dict[str, Any] = {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": namespace},
                }
                admit(created)
                with contextlib.suppress(AlreadyExists):
                    self.store.create(created)
        else:
            meta.pop("namespace", None)
        causes: list[tuple[str, str, str]] = []
        for field in ("labels", "annotations"):
            values = meta.get(field)
            if values is None:
                continue
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                raise bad_request(f"metadata.{field} must be a map of strings")
            for key, value in values.items():
                why = qualified_name_error(key)
                if why:
                    causes.append(
                        ("FieldValueInvalid", f"metadata.{field}", f'Invalid value: "{key}": {why}')
                    )
                if field == "labels":
                    why = label_value_error(value)
                    if why:
                        causes.append(
                            ("FieldValueInvalid", "metadata.labels", f'Invalid value: "{value}": {why}')
                        )
        if causes:
            raise invalid(res.kind, res.group, name, causes)
        warnings: list[str] = []
        allowed = _TOP_FIELDS.get(res.kind, frozenset({"spec", "status"}))
        unknown = [f"{k}" for k in body if k not in allowed | {"apiVersion", "kind", "metadata"}]
        unknown += [f"metadata.{k}" for k in meta if k not in _META_FIELDS]
        if unknown:
            if query.get("fieldValidation") == "Strict":
                raise bad_request(
                    "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
                )
            if query.get("fieldValidation") != "Ignore":
                warnings.extend(f'unknown field "{u}"' for u in unknown)
        for key in ("spec", "status"):
            if key in body and body[key] is not None and not isinstance(body[key], dict):
                raise bad_request(f"{key} must be an object")
        self._check_typed(res, body)
        return body, warnings

    def _check_typed(self, res: Resource, body: dict[str, Any]) -> None:
        """The schedulers' own parser must accept what is stored: its complaint is a 422. A
        quantity that does not parse is a 400, as upstream's decoder refuses it before validation."""
        name = str(body["metadata"].get("name", ""))
        for value in _quantities(body):
            if type(value) is str and value in _VALID_QUANTITIES:
                continue
            try:
                parse_quantity(value)
            except (QuantityError, TypeError, ValueError):
                raise bad_request(
                    f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                ) from None
            if type(value) is str:
                _remember(_VALID_QUANTITIES, value, _VALID_QUANTITIES_KEPT)
        parse = DEFAULT_PARSERS.get(res.kind)
        if res.kind in ("Deployment", "Job"):
            spec = body.get("spec") or {}
            replicas = spec.get("replicas" if res.kind == "Deployment" else "parallelism")
            if replicas is not None and (
                not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0
            ):
                field = "spec.replicas" if res.kind == "Deployment" else "spec.parallelism"
                raise invalid(
                    res.kind,
                    res.group,
                    name,
                    [
                        (
                            "FieldValueInvalid",
                            field,
                            f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                        )
                    ],
                )
            template = spec.get("template")
            if not isinstance(template, dict):
                raise invalid(
                    res.kind, res.group, name, [("FieldValueRequired", "spec.template", "Required value")]
                )
            parse = DEFAULT_PARSERS["Pod"]
            body = {
                "kind": "Pod",
                "metadata": {"name": name, **(template.get("metadata") or {})},
                "spec": template.get("spec") or {},
            }
        if parse is None:
            return
        shape = _shape_key(body)
        if shape is not None and shape in _ACCEPTED_SHAPES:
            return  # the same object but for its (non-empty) name was accepted before
        try:
            parse(body, None)
        except InputError as exc:
            field = exc.field or ""
            raise invalid(
                res.kind, res.group, name, [("FieldValueInvalid", field, f"Invalid value: {exc.message}")]
            ) from None
        except Exception as exc:
            raise invalid(
                res.kind, res.group, name, [("FieldValueInvalid", "", f"Invalid value: {exc}")]
            ) from None
        if shape is not None:
            _remember(_ACCEPTED_SHAPES, shape, _ACCEPTED_SHAPES_KEPT)

    # -- verbs -----------------------------------------------------------------------------------
    def _create(
        self, res: Resource, namespace: str | None, body: Any, query: Mapping[str, str]
    ) -> web.Response:
        obj, warnings = self._prepare(res, namespace, body, query, creating=True)
        meta = obj["metadata"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(key, None)
        if res.kind in _GENERATION_KINDS:
            meta["generation"] = 1
        admit(obj)
        if query.get("dryRun") == "All":
            return _json(self._served(res, obj), 201)
        try:
            created = self.store.create(obj)
        except AlreadyExists:
            raise already_exists(res.plural, res.group, meta["name"]) from None
        except InputError as exc:
            raise ApiError(
                403, "Forbidden", f'{res.plural} "{meta["name"]}" is forbidden: {exc.message}'
            ) from None
        return _json(self._served(res, created), 201, _warning_headers(warnings))

    def _update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        sub: str | None,
        body: Any,
        query: Mapping[str, str],
        manager: str,
    ) -> web.Response:
        obj, warnings = self._prepare(res, namespace, body, query, creating=False)
        if obj["metadata"]["name"] != name:
            raise bad_request(
                f"the name of the object ({obj['metadata']['name']}) does not match the name on the URL "
                f"({name})"
            )
        old = self._get(res, namespace, name)
        updated = self._store_update(res, old, obj, sub, query, manager)
        return _json(self._served(res, updated), 200, _warning_headers(warnings))

    def _store_update(
        self,
        res: Resource,
        old: Obj,
        obj: dict[str, Any],
        sub: str | None,
        query: Mapping[str, str],
        manager: str | None,
    ) -> Obj:
        """Write ``obj`` over ``old``; ``manager`` (None for an apply, which kept the managed fields
        itself) becomes the owner of the fields the write changed."""
        name = old["metadata"]["name"]
        given = obj["metadata"].get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, res.group, name, STALE)
        if sub == "status":
            new = {**old, "status": obj.get("status") or {}}
            new["metadata"] = dict(old["metadata"])
        else:
            new = obj
            meta = new["metadata"]
            for key in ("uid", "creationTimestamp"):
                meta[key] = old["metadata"].get(key)
            if res.status_subresource():
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if res.kind == "Pod":
                old_spec, spec = old.get("spec") or {}, dict(new.get("spec") or {})
                if old_spec.get("nodeName") and spec.get("nodeName") not in (None, old_spec["nodeName"]):
                    raise invalid(
                        "Pod",
                        "",
                        name,
                        [
                            (
                                "FieldValueForbidden",
                                "spec.nodeName",
                                _POD_UPDATE_FORBIDDEN,
                            )
                        ],
                    )
                for key in ("nodeName", "schedulerName", "priority", "preemptionPolicy"):
                    if key in old_spec and key not in spec:
                        spec[key] = old_spec[key]
                new["spec"] = spec
            if res.kind in _GENERATION_KINDS:
                generation = int(old["metadata"].get("generation") or 1)
                meta["generation"] = generation + 1 if new.get("spec") != old.get("spec") else generation
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if manager is not None:
            managed_fields.track_update(
                old,
                new,
                manager=manager,
                api_version=res.group_version,
                now=format_timestamp(time.time()),
                subresource=sub or "",
            )
        if query.get("dryRun") == "All":
            return new
        if new == old:
            return old
        try:
            return self.store.update(new)
        except Conflict:
            raise conflict(res.plural, res.group, name, STALE) from None
        except NotFound:
            raise not_found(res.plural, res.group, name) from None

    def _patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        sub: str | None,
        ctype: str,
        raw: bytes,
        query: Mapping[str, str],
        manager: str,
    ) -> web.Response:
        applying = ctype == "application/apply-patch+yaml"
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
        force = query.get("force") in ("true", "1", "True")
        if ctype not in (
            "application/merge-patch+json",
            "application/json-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ):
            raise unsupported_media_type(ctype)
        if ctype == "application/strategic-merge-patch+json" and res.group == "scheduling.volcano.sh":
            raise unsupported_media_type(ctype)
        patch = self._decode(raw, "yaml" if ctype.endswith("yaml") else "json")
        if ctype != "application/json-patch+json" and not isinstance(patch, dict):
            raise bad_request("the patch must be a JSON object")
        for _ in range(10):
            old = self.store.get(res.kind, namespace, name)
            if old is None and not applying:
                raise not_found(res.plural, res.group, name)
            current = None if old is None else served(copy.deepcopy(dict(old)), res.group, res.version)
            if applying:
                patched = managed_fields.apply(
                    current,
                    patch,
                    manager=manager,
                    force=force,
                    api_version=res.group_version,
                    now=format_timestamp(time.time()),
                )
            elif ctype == "application/json-patch+json":
                patched = json_patch(current, patch)
            elif ctype == "application/strategic-merge-patch+json":
                patched = strategic_merge_patch(current, patch)
            else:
                patched = merge_patch(current, patch)
            if old is None:
                # Applying an object that does not exist yet creates it.
                return self._create(res, namespace, patched, query)
            if not isinstance(patched, dict):
                raise bad_request("the patched object is not an object")
            obj, warnings = self._prepare(res, namespace, patched, query, creating=False)
            if obj["metadata"].get("name") != name:
                raise bad_request("the patch must not change the object's name")
            rv = obj["metadata"].get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res.plural, res.group, name, STALE)
            try:
                updated = self._store_update(res, old, obj, sub, query, None if applying else manager)
            except ApiError as err:
                if err.reason == "Conflict" and not (
                    isinstance(patch, dict) and (patch.get("metadata") or {}).get("resourceVersion")
                ):
                    continue  # someone wrote in between: patch the newer object
                raise
            return _json(self._served(res, updated), 200, _warning_headers(warnings))
        raise conflict(res.plural, res.group, name, STALE)

    def _delete(
        self, res: Resource, namespace: str | None, name: str, options: Mapping[str, Any]
    ) -> web.Response:
        old = self._get(res, namespace, name)
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
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"].get(
                "resourceVersion"
            ):
                raise conflict(res.plural, res.group, name, STALE)
        if options.get("dryRun") == ["All"]:
            return _json(self._served(res, old))
        if res.kind == "Pod":
            terminating = self._terminate(old, options)
            if terminating is not None:
                return _json(self._served(res, terminating))
        gone_obj = delete_cascading(
            self.store, res.kind, namespace, name, str(options.get("propagationPolicy") or "Background")
        )
        if gone_obj is None:
            raise not_found(res.plural, res.group, name)
        return _json(self._served(res, gone_obj))

    def _terminate(self, pod: Obj, options: Mapping[str, Any]) -> Obj | None:
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
            return self.store.update(marked)
        except Conflict:
            raise conflict("pods", "", meta["name"], STALE) from None

    def _delete_collection(self, request: web.Request, res: Resource, namespace: str | None) -> web.Response:
        items = self._select(request, res, namespace)
        deleted = []
        for obj in items:
            meta = obj["metadata"]
            gone_obj = delete_cascading(
                self.store, res.kind, meta.get("namespace"), meta["name"], "Background"
            )
            if gone_obj is not None:
                deleted.append(self._served(res, gone_obj))
        return _json(
            {"kind": f"{res.kind}List", "apiVersion": res.group_version, "metadata": {}, "items": deleted}
        )

    async def _scale(
        self, request: web.Request, res: Resource, namespace: str | None, name: str
    ) -> web.Response:
        """The autoscaling/v1 Scale subresource: spec.replicas of a workload, read and written."""
        method = request.method
        if method not in ("GET", "PUT", "PATCH"):
            raise method_not_allowed()
        for _ in range(10):
            obj = self._get(res, namespace, name)
            scale = _scale_of(obj)
            if method == "GET":
                await self._read_committed()
                return _json(scale)
            raw = await self._raw_body(request)
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
            if method == "PUT":
                wanted = self._decode(raw, ctype)
            elif ctype == "application/json-patch+json":
                wanted = json_patch(scale, self._decode(raw, ctype))
            elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                wanted = merge_patch(scale, self._decode(raw, ctype))
            else:
                raise unsupported_media_type(ctype)
            if not isinstance(wanted, dict):
                raise bad_request("a Scale must be an object")
            replicas = (wanted.get("spec") or {}).get("replicas")
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
            given = (wanted.get("metadata") or {}).get("resourceVersion")
            if given and given != obj["metadata"]["resourceVersion"]:
                raise conflict(res.plural, res.group, name, STALE)
            spec = dict(obj.get("spec") or {})
            spec["replicas"] = replicas
            generation = int(obj["metadata"].get("generation") or 1)
            new = {**obj, "spec": spec, "metadata": {**obj["metadata"], "generation": generation + 1}}
            managed_fields.track_update(
                obj,
                new,
                manager=_field_manager(request),
                api_version=res.group_version,
                now=format_timestamp(time.time()),
                subresource="scale",
            )
            try:
                updated = self.store.update(new)
            except Conflict:
                continue
            return _json(_scale_of(updated))
        raise conflict(res.plural, res.group, name, STALE)

    def _bind(self, namespace: str, name: str, body: Any) -> web.Response:
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
            raise invalid("Binding", "", name, [("FieldValueRequired", "target", "Required value")])
        node = body["target"].get("name")
        if not isinstance(node, str) or not node:
            raise invalid("Binding", "", name, [("FieldValueRequired", "target.name", "Required value")])
        uid = str((body.get("metadata") or {}).get("uid") or "")
        try:
            self.store.bind(namespace, name, uid, node)
        except NotFound as exc:
            if self.store.get("Pod", namespace, name) is None:
                raise not_found("pods", "", name) from None
            raise ApiError(404, "NotFound", str(exc)) from None
        except Conflict as exc:
            raise conflict("pods/binding", "", name, str(exc)) from None
        return _json(success(), 201)

    def _evict(self, namespace: str, name: str, body: Any) -> web.Response:
        pod = self._get(BY_GROUP_VERSION[("", "v1")]["pods"], namespace, name)
        if not isinstance(body, dict):
            raise bad_request("an Eviction must be an object")
        blocking = _blocking_budget(self.store, pod)
        if blocking is not None:
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                details={
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {blocking} needs more healthy pods",
                        }
                    ]
                },
            )
        self.store.update_pod_condition(
            namespace,
            name,
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
            },
        )
        delete_cascading(self.store, "Pod", namespace, name, "Background")
        return _json(success(), 201)

    # -- list and watch --------------------------------------------------------------------------
    def _matchers(self, request: web.Request, res: Resource) -> tuple[Match | None, Match | None]:
        q = request.query
        labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
        fields = parse_field_selector(q["fieldSelector"], res.kind) if q.get("fieldSelector") else None
        return labels, fields

    def _select(self, request: web.Request, res: Resource, namespace: str | None) -> list[Obj]:
        labels, fields = self._matchers(request, res)
        items = self.store.list(res.kind)
        return [o for o in items if _matches(self._served(res, o), namespace, labels, fields)]

    def _list(self, request: web.Request, res: Resource, namespace: str | None) -> web.Response:
        q = request.query
        labels, fields = self._matchers(request, res)
        items, rv = self.store.list_with_version(res.kind)
        keyed = sorted(((_sort_key(o), o) for o in items), key=lambda t: t[0])
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
            view = self._served(res, obj)
            if not _matches(view, namespace, labels, fields):
                continue
            if limit > 0 and len(out) >= limit:
                remaining += 1
                continue
            out.append(view)
        if remaining and out:
            last = _sort_key(out[-1])
            next_token = base64.urlsafe_b64encode(orjson.dumps({"ns": last[0], "name": last[1]})).decode()
        list_meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if next_token:
            list_meta["continue"] = next_token
            list_meta["remainingItemCount"] = remaining
        if _wants_table(request):
            return _json(table(res.kind, out, list_meta))
        return _json(
            {"kind": f"{res.kind}List", "apiVersion": res.group_version, "metadata": list_meta, "items": out}
        )

    async def _watch(self, request: web.Request, res: Resource, namespace: str | None) -> web.StreamResponse:
        q = request.query
        labels, fields = self._matchers(request, res)
        try:
            timeout = float(q.get("timeoutSeconds") or MAX_WATCH_SECONDS)
        except ValueError:
            raise bad_request(f"timeoutSeconds: Invalid value: {q.get('timeoutSeconds')!r}") from None
        timeout = max(0.0, min(timeout, MAX_WATCH_SECONDS))
        rv_text = q.get("resourceVersion") or ""
        start_rv: int | None = None
        if rv_text not in ("", "0"):
            if not rv_text.isdigit():
                raise bad_request(
                    f'resourceVersion: Invalid value: "{rv_text}": must be a non-negative integer'
                )
            start_rv = int(rv_text)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true", "True")
        as_table = _wants_table(request)
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        deadline = time.monotonic() + timeout

        pending: list[bytes] = []

        def line(kind: str, obj: Mapping[str, Any]) -> None:
            body = obj
            if as_table and kind not in ("ERROR", "BOOKMARK"):
                body = table(res.kind, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
            pending.append(orjson.dumps({"type": kind, "object": body}) + b"\n")

        def change_line(kind: str, obj: Mapping[str, Any], rv: int) -> None:
            # Every watch of this group version sends the change in the same bytes (unless it
            # wants tables): encode it once.
            if as_table:
                line(kind, obj)
                return
            key = (rv, kind, res.group, res.version)
            data = self._lines.get(key)
            if data is None:
                data = self._lines[key] = orjson.dumps({"type": kind, "object": obj}) + b"\n"
            pending.append(data)

        async def flush() -> None:
            # One write per batch of events: a burst of changes costs one TLS record, not one each.
            if pending:
                data = b"".join(pending)
                pending.clear()
                await resp.write(data)

        async def send(kind: str, obj: Mapping[str, Any]) -> None:
            line(kind, obj)
            await flush()

        try:
            if start_rv is None:
                items, start_rv = self.store.list_with_version(res.kind)
                await self._read_committed()
                for obj in sorted(items, key=_sort_key):
                    view = self._served(res, obj)
                    if _matches(view, namespace, labels, fields):
                        line("ADDED", view)
                await flush()
            rv = start_rv
            last_sent = time.monotonic()
            while True:
                changed = self._changed_event(res.kind)
                try:
                    events = self.store.changes_since(rv)
                except TooOld as exc:
                    await send("ERROR", gone(str(exc)).status())
                    break
                for event in events:
                    rv = int(event.obj["metadata"]["resourceVersion"])
                    if event.kind != res.kind:
                        continue
                    typed = self._event_for(event, rv, res, namespace, labels, fields)
                    if typed is not None:
                        change_line(typed[0], typed[1], rv)
                sent = bool(pending)
                if sent:
                    await flush()
                    last_sent = time.monotonic()
                now = time.monotonic()
                if now >= deadline:
                    break
                if sent:
                    # Changes that follow within a few milliseconds go out in the next write
                    # together: under load a stream costs a write per batch, not per change, and an
                    # isolated change still goes out at once.
                    await asyncio.sleep(min(WATCH_BATCH_SECONDS, deadline - now))
                if events:
                    continue
                if bookmarks and now - last_sent >= self.bookmark_interval:
                    await send(
                        "BOOKMARK",
                        {
                            "kind": res.kind,
                            "apiVersion": res.group_version,
                            "metadata": {"resourceVersion": str(rv)},
                        },
                    )
                    last_sent = now
                wait = deadline - now
                if bookmarks:
                    wait = min(wait, max(0.01, self.bookmark_interval - (now - last_sent)))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await changed.wait()
        except (ConnectionResetError, ConnectionError):
            return resp
        with contextlib.suppress(ConnectionError):
            await resp.write_eof()
        return resp


def _field_manager(request: web.Request) -> str:
    """The manager a write is recorded for: ``fieldManager``, else upstream's default from the
    User-Agent."""
    return request.query.get("fieldManager") or managed_fields.manager_from_user_agent(
        request.headers.get("User-Agent", "")
    )


def _remember(seen: set[T], value: T, kept: int) -> None:
    """Add ``value`` to a set of values known good, emptied when it holds ``kept`` of them."""
    if len(seen) >= kept:
        seen.clear()
    seen.add(value)


def _shape_key(body: Mapping[str, Any]) -> bytes | None:
    """The object as JSON with its name left out, for objects whose name is a non-empty string
    (what the schedulers' parser checks of a name); None when it cannot be encoded as JSON. The
    pods of one client usually differ only by name: the parser's verdict on one holds for all."""
    meta = body.get("metadata")
    if type(meta) is not dict or type(meta.get("name")) is not str or not meta["name"]:
        return None
    try:
        return orjson.dumps({**body, "metadata": {**meta, "name": ""}})
    except (TypeError, orjson.JSONEncodeError):
        return None


def _matches(
    obj: Mapping[str, Any], namespace: str | None, labels: Match | None, fields: Match | None
) -> bool:
    if namespace is not None and (obj.get("metadata") or {}).get("namespace") != namespace:
        return False
    if labels is not None and not labels(obj):
        return False
    return fields is None or fields(obj)


def _quantities(obj: Mapping[str, Any]) -> list[Any]:
    """The resource quantities of a pod (or a workload's pod template) or a node."""
    out: list[Any] = []
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        spec = spec["template"].get("spec")
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            containers = spec.get(key)
            for c in containers if isinstance(containers, list) else []:
                resources = c.get("resources") if isinstance(c, dict) else None
                for part in ("requests", "limits"):
                    amounts = resources.get(part) if isinstance(resources, dict) else None
                    if isinstance(amounts, dict):
                        out.extend(amounts.values())
        overhead = spec.get("overhead")
        if isinstance(overhead, dict):
            out.extend(overhead.values())
    status = obj.get("status")
    if obj.get("kind") == "Node" and isinstance(status, dict):
        for part in ("capacity", "allocatable"):
            amounts = status.get(part)
            if isinstance(amounts, dict):
                out.extend(amounts.values())
    return out


def _scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
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
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }


def _sort_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


def _warning_headers(warnings: list[str]) -> dict[str, str] | None:
    if not warnings:
        return None
    return {"Warning": ", ".join(f'299 - "{_header_text(w)}"' for w in warnings)}


def _header_text(text: str) -> str:
    """Printable ASCII only: a field name from a request body must not break the header."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '\\"' else f"\\u{ord(c):04x}" for c in text)


def admit(obj: dict[str, Any]) -> None:
    """Defaults the API server and a kubelet would fill in before the schedulers see the object."""
    kind = obj.get("kind")
    if kind == "Namespace":
        obj.setdefault("status", {})
        if isinstance(obj["status"], dict):
            obj["status"].setdefault("phase", "Active")
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    elif kind == "Node":
        from kubesched.apiserver.lifecycle import node_defaults

        node_defaults(obj)
    elif kind == "Pod":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("enableServiceLinks", True)
    elif kind == "Queue":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("weight", 1)
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("state", "Open")


def _blocking_budget(store: SqliteStore, pod: Obj) -> str | None:
    """The PodDisruptionBudget that evicting ``pod`` would break, if any."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace")
    labels = meta.get("labels") or {}
    for pdb in store.list("PodDisruptionBudget"):
        if (pdb.get("metadata") or {}).get("namespace") != namespace:
            continue
        spec = pdb.get("spec") or {}
        selector = spec.get("selector") or {}
        wanted = selector.get("matchLabels") or {}
        if not wanted or any(labels.get(k) != v for k, v in wanted.items()):
            continue
        matching = [
            p
            for p in store.list("Pod")
            if (p.get("metadata") or {}).get("namespace") == namespace
            and all(((p.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]
        healthy = sum(1 for p in matching if (p.get("status") or {}).get("phase") == "Running")
        min_available = spec.get("minAvailable")
        max_unavailable = spec.get("maxUnavailable")
        if isinstance(min_available, int) and healthy - 1 < min_available:
            return str(pdb["metadata"]["name"])
        if isinstance(max_unavailable, int) and len(matching) - (healthy - 1) > max_unavailable:
            return str(pdb["metadata"]["name"])
    return None


def delete_cascading(
    store: SqliteStore, kind: str, namespace: str | None, name: str, policy: str
) -> Obj | None:
    """Delete an object and (unless orphaned) what it owns, as the garbage collector would; a deleted
    namespace takes its objects with it."""
    try:
        gone_obj = store.delete(kind, namespace, name)
    except NotFound:
        return None
    uid = (gone_obj.get("metadata") or {}).get("uid")
    if policy == "Orphan" or not uid:
        return gone_obj
    if kind == "Namespace":
        for r in {r.kind for group in BY_GROUP_VERSION.values() for r in group.values() if r.namespaced}:
            for obj in store.list(r):
                if (obj.get("metadata") or {}).get("namespace") == name:
                    delete_cascading(store, r, name, obj["metadata"]["name"], policy)
        return gone_obj
    for child_kind in _OWNED.get(kind, ()):
        for obj in store.list(child_kind):
            meta = obj.get("metadata") or {}
            if any(
                ref.get("uid") == uid for ref in meta.get("ownerReferences") or [] if isinstance(ref, dict)
            ):
                delete_cascading(store, child_kind, meta.get("namespace"), meta["name"], policy)
    return gone_obj


#: Kind → the kinds whose objects it may own.
_OWNED: dict[str, tuple[str, ...]] = {
    "Deployment": ("ReplicaSet",),
    "ReplicaSet": ("Pod",),
    "StatefulSet": ("Pod",),
    "Job": ("Pod",),
    "PodGroup": ("Pod",),
    "ReplicationController": ("Pod",),
}
