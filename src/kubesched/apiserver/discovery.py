"""The paths that are not resources: ``/api``, ``/apis``, ``/version``, the health checks and the
OpenAPI documents."""

from __future__ import annotations

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
        doc = openapi.v3_group_version("/".join(parts[2:]))
        if doc is not None:
            return json_response(doc)
    if parts == ["openapi", "v2"]:
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(
                body=openapi.v2_protobuf(),
                headers={"Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
            )
        return json_response(openapi.v2())
    raise ApiError(404, "NotFound", "the server could not find the requested resource")
