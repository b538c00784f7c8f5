"""The paths that are not resources: ``/api``, ``/apis``, ``/version``, the health checks and the
OpenAPI documents."""

from __future__ import annotations

import time
from email.utils import formatdate

from aiohttp import web

from kubesched import __version__
from kubesched.apiserver import openapi
from kubesched.apiserver.handlers.responses import json_response
from kubesched.metrics.health import Check, health_response, with_ping
from kubesched.registry.errors import ApiError


def core_versions(request: web.Request) -> web.Response:
    """``/api``: the legacy core group's versions."""
    return json_response(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.host}],
        }
    )


def health(request: web.Request, parts: list[str], ready_checks: dict[str, Check]) -> web.Response:
    endpoint = parts[0]
    checks = with_ping(ready_checks if endpoint == "readyz" else {})
    status, body = health_response(
        endpoint,
        checks,
        check=parts[1] if len(parts) == 2 else None,
        verbose="verbose" in request.query,
        exclude=request.query.getall("exclude", []),
    )
    return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")


def version(git_version: str) -> dict[str, str]:
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": f"kubesched-{__version__}",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "kubesched",
        "platform": "linux/amd64",
    }


def openapi_document(request: web.Request, parts: list[str]) -> web.Response:
    if parts[:2] == ["openapi", "v3"]:
        if len(parts) == 2:
            return json_response(openapi.v3_root())
        path = "/".join(parts[2:])
        doc = openapi.v3_group_version(path)
        if doc is not None:
            wanted = request.query.get("hash")
            if wanted is not None and wanted != doc.etag:
                # A client holding an older hash is sent to the current document, as upstream.
                return web.Response(status=301, headers={"Location": f"/openapi/v3/{path}?hash={doc.etag}"})
            return _document(request, doc, "application/json", immutable=wanted is not None)
    if parts == ["openapi", "v2"]:
        if "protobuf" in request.headers.get("Accept", ""):
            return _document(
                request,
                openapi.v2_protobuf(),
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            )
        return _document(request, openapi.v2(), "application/json")
    raise ApiError(404, "NotFound", "the server could not find the requested resource")


def _document(
    request: web.Request, doc: openapi.Served, content_type: str, immutable: bool = False
) -> web.Response:
    etag = f'"{doc.etag}"'
    headers = {"ETag": etag, "Vary": "Accept"}
    if immutable:
        # The hash in the URL names the content: a client may keep it as long as it likes.
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = formatdate(time.time() + 365 * 86400, usegmt=True)
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers=headers)
    return web.Response(body=doc.body, headers={**headers, "Content-Type": content_type})
