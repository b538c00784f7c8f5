"""Just enough OpenAPI for kubectl: the v3 documents say every PATCH takes ``fieldValidation``, so
kubectl validates on the server (``fieldValidation=Strict``) instead of downloading schemas."""

from __future__ import annotations

import hashlib
from typing import Any

from kubesched.registry.strategy import Resource
from kubesched.registry.table import BY_GROUP_VERSION


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _hash(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:32].upper()


def v3_root() -> dict[str, Any]:
    return {
        "paths": {
            _gv_path(g, v): {
                "serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash={_hash(_gv_path(g, v))}"
            }
            for g, v in BY_GROUP_VERSION
        }
    }


def _item_path(r: Resource) -> str:
    base = "/" + _gv_path(r.group, r.version)
    if r.namespaced:
        return f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}"
    return f"{base}/{r.plural}/{{name}}"


def v3_group_version(path: str) -> dict[str, Any] | None:
    for (g, v), strategies in BY_GROUP_VERSION.items():
        if _gv_path(g, v) != path:
            continue
        paths: dict[str, Any] = {}
        for strategy in strategies.values():
            r = strategy.resource
            if "patch" not in r.verbs:
                continue
            gvk = {"group": r.group, "version": r.version, "kind": r.kind}
            param = {
                "name": "fieldValidation",
                "in": "query",
                "schema": {"type": "string", "uniqueItems": True},
            }
            paths[_item_path(r)] = {
                "patch": {
                    "operationId": f"patch{r.kind}",
                    "parameters": [param],
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": gvk,
                },
                "put": {
                    "operationId": f"replace{r.kind}",
                    "parameters": [param],
                    "x-kubernetes-action": "put",
                    "x-kubernetes-group-version-kind": gvk,
                },
            }
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths,
            "components": {"schemas": {}},
        }
    return None


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    size = len(payload)
    varint = bytearray()
    while True:
        byte = size & 0x7F
        size >>= 7
        varint.append(byte | (0x80 if size else 0))
        if not size:
            break
    return bytes([number << 3 | 2]) + bytes(varint) + payload


def v2_protobuf() -> bytes:
    """An OpenAPI v2 document (gnostic's protobuf form, which is what kubectl asks for) with no
    definitions: kubectl's client-side validation skips kinds it has no schema for, so manifests
    that the v3 check cannot cover (``kind: List``) are still accepted and checked on the server."""
    info = _field(1, b"Kubernetes") + _field(2, b"v1.32.0")
    return _field(1, b"2.0") + _field(2, info)


def v2() -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {},
        "definitions": {},
    }
