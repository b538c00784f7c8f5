"""The web UI: a small browser app served at ``/ui/`` on the API's port.

The app's files (HTML, JavaScript, CSS in ``ui_assets/``, shipped in the package) hold no cluster
data and are served without the token; everything the app shows it reads through the API as any
other client does (list and watch with the bearer token), so it sees what kubectl sees and can do
only what the token allows. The page asks for the token once (kept in the tab's session storage),
or takes it from the one-time link ``serve`` prints: ``/ui/#code=…`` whose code the page trades at
``POST /ui/login`` for the token, once. The answers carry a Content-Security-Policy that lets the
page load and connect only to its own origin.

``POST /kubesched/v1/decode`` (behind the token) turns the YAML the editor holds into JSON objects
with the line each document starts on, so the page can apply them through the API and locate the
API's refusals in the text.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson
import yaml
from aiohttp import web
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from kubesched.api.yaml_input import BoundedSafeLoader
from kubesched.apiserver.handlers.body import raw_body
from kubesched.apiserver.handlers.responses import json_response
from kubesched.errors import yaml_error_detail
from kubesched.registry.errors import ApiError, bad_request, method_not_allowed, unauthorized

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: The app's files and their media types (nothing else under ``/ui/`` is served).
ASSETS = {
    "index.html": "text/html",
    "app.js": "text/javascript",
    "app.css": "text/css",
}

#: Same origin only: the page runs its own script and style and talks to its own server.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

#: How long a one-time link stays good.
CODE_LIFETIME = 24 * 3600.0


class LoginCodes:
    """One-time codes that stand for the token: each is traded for it once, within its lifetime."""

    def __init__(self, token: str, lifetime: float = CODE_LIFETIME) -> None:
        self._token = token
        self._lifetime = lifetime
        self._codes: dict[str, float] = {}

    def issue(self) -> str:
        code = secrets.token_urlsafe(24)
        self._codes[code] = time.monotonic() + self._lifetime
        return code

    def redeem(self, code: str) -> str | None:
        """The token, once per code; None for an unknown, used or expired code."""
        now = time.monotonic()
        for known, expiry in list(self._codes.items()):
            if expiry < now:
                del self._codes[known]
            elif hmac.compare_digest(known.encode(), code.encode()):
                del self._codes[known]
                return self._token
        return None


UI_CPU_HELP = (
    "CPU seconds the API server spent making the web UI's views: bringing the Cluster view's "
    "summary and the Pods view's rows up to date from the store's changes and answering them."
)


class UiCostCollector(Collector):
    """``kubesched_ui_cpu_seconds_total{view}``, read from the server at scrape time: what an open
    UI costs the server beyond the watches and requests every client makes."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily("kubesched_ui_cpu_seconds", UI_CPU_HELP, labels=["view"])
        for view, seconds in self.server.ui_cpu_seconds.items():
            family.add_metric([view], seconds)
        yield family


def _asset(name: str) -> bytes:
    return resources.files("kubesched.apiserver").joinpath("ui_assets", name).read_bytes()


async def ui(server: ApiServer, request: web.Request, parts: list[str]) -> web.StreamResponse:
    """``/ui``, ``/ui/<asset>`` and ``POST /ui/login`` (the public paths of the UI)."""
    if len(parts) == 1 and request.path == "/ui":
        return web.Response(status=302, headers={"Location": "/ui/"})
    name = parts[1] if len(parts) == 2 else "index.html" if len(parts) == 1 else ""
    if name == "login":
        return await _login(server, request)
    if name not in ASSETS:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if request.method not in ("GET", "HEAD"):
        raise method_not_allowed()
    return web.Response(
        body=_asset(name),
        headers={**SECURITY_HEADERS, "Content-Type": ASSETS[name], "Cache-Control": "no-cache"},
    )


async def _login(server: ApiServer, request: web.Request) -> web.Response:
    if request.method != "POST":
        raise method_not_allowed()
    origin = request.headers.get("Origin")
    if origin is not None and origin.partition("://")[2] != request.host:
        raise ApiError(403, "Forbidden", "cross-origin login refused")
    try:
        sent = orjson.loads(await raw_body(request))
    except orjson.JSONDecodeError:
        raise bad_request("the body must be a JSON object with a code") from None
    code = sent.get("code") if isinstance(sent, dict) else None
    token = server.login_codes.redeem(code) if isinstance(code, str) else None
    if token is None:
        raise unauthorized()
    return json_response({"token": token}, headers={"Cache-Control": "no-store"})


def decode_documents(text: str) -> list[dict[str, Any]]:
    """Each non-empty YAML document of ``text`` with the line it starts on (``{"line", "object"}``);
    a syntax error is a 422 naming the line."""
    loader = BoundedSafeLoader(text)
    out: list[dict[str, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            doc = loader.construct_document(node)
            if doc is None:
                continue
            orjson.dumps(doc)
            out.append({"line": node.start_mark.line + 1, "object": doc})
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        cause = {"reason": "FieldValueInvalid", "message": str(exc), "field": f"line {line}"}
        raise ApiError(
            422, "Invalid", f"not valid YAML{yaml_error_detail(exc)}", details={"causes": [cause]}
        ) from None
    except (TypeError, ValueError) as exc:
        raise bad_request(f"the YAML cannot be given as JSON: {exc}") from None
    finally:
        loader.dispose()
    return out


async def decode(request: web.Request) -> web.Response:
    if request.method != "POST":
        raise method_not_allowed()
    raw = await raw_body(request)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("the body must be UTF-8 text") from None
    return json_response({"items": decode_documents(text)})
