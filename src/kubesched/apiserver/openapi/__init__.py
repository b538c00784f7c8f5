"""The OpenAPI documents kube-apiserver serves, built from the registry's table: ``/openapi/v2`` (one
Swagger 2.0 document, JSON or gnostic protobuf) and ``/openapi/v3`` (an index and one document per
group version). The schemas are upstream's (``schemas.py``); the paths are our resources'
(``paths.py``).

kubectl reads them for ``explain`` (1.20 the v2 document, 1.32 the v3 ones), for strategic merge
patches (``x-kubernetes-patch-strategy`` and ``-merge-key``), for client-side validation (1.20), and
to learn that PATCH takes ``dryRun`` (1.20's ``diff``) and ``fieldValidation`` (1.32 validates on the
server). Each document is built once, on first request, and kept with its hash as bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.apiserver.openapi import gnostic
from kubesched.apiserver.openapi.paths import gv_path, resource_paths, resource_schemas
from kubesched.apiserver.openapi.schemas import closure, to_v2, vendored
from kubesched.registry.table import BY_GROUP_VERSION, STRATEGIES, served_strategies

__all__ = ["Served", "gv_path", "v2", "v2_protobuf", "v3_group_version", "v3_root"]


@dataclass(frozen=True, slots=True)
class Served:
    """A document as it goes on the wire, with the hash clients cache it by."""

    body: bytes
    etag: str


def _served(body: bytes) -> Served:
    return Served(body, hashlib.sha512(body).hexdigest().upper())


def _info() -> dict[str, str]:
    return {"title": "Kubernetes", "version": vendored().release}


def _v3_documents() -> dict[str, Served]:
    return _v3_documents_of(DEFAULT_FEATURE_GATES.generation)


# The documents list what the API serves, which the feature gates decide: one set per generation of
# the gates (a served cluster sets them once; tests set them per cluster).
@lru_cache(maxsize=4)
def _v3_documents_of(_generation: int) -> dict[str, Served]:
    out: dict[str, Served] = {}
    for group, version in BY_GROUP_VERSION:
        strategies = served_strategies(group, version)
        if not strategies:
            continue
        paths: dict[str, Any] = {}
        roots: set[str] = set()
        for strategy in strategies.values():
            paths.update(resource_paths(strategy))
            roots |= resource_schemas(strategy)
        doc = {
            "openapi": "3.0.0",
            "info": _info(),
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": closure(roots)},
        }
        out[gv_path(group, version)] = _served(orjson.dumps(doc))
    return out


def v3_root() -> dict[str, Any]:
    """``/openapi/v3``: where each group version's document is, by its current hash."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={doc.etag}"}
            for path, doc in _v3_documents().items()
        }
    }


def v3_group_version(path: str) -> Served | None:
    """``/openapi/v3/apis/apps/v1`` and the like."""
    return _v3_documents().get(path)


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in op.items():
        if key == "parameters":
            out[key] = [_v2_parameter(p) for p in value]
        elif key == "requestBody":
            media = value["content"]
            schema = next(iter(media.values()))["schema"]
            out["consumes"] = list(media)
            body = {"in": "body", "name": "body", "required": value.get("required", False), "schema": schema}
            out.setdefault("parameters", []).insert(0, to_v2(body))
        elif key == "responses":
            out[key] = {}
            for code, response in value.items():
                v2: dict[str, Any] = {"description": response["description"]}
                if "content" in response:
                    v2["schema"] = to_v2(next(iter(response["content"].values()))["schema"])
                    if code == "200":
                        out["produces"] = list(response["content"])
                out[key][code] = v2
        else:
            out[key] = value
    out["schemes"] = ["https"]
    return out


def _v2_parameter(p: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in p.items() if k != "schema"}
    out.update(p.get("schema", {}))
    return out


def _v2_document() -> dict[str, Any]:
    return _v2_document_of(DEFAULT_FEATURE_GATES.generation)


@lru_cache(maxsize=4)
def _v2_document_of(_generation: int) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    roots: set[str] = set()
    for strategy in STRATEGIES:
        if not strategy.served():
            continue
        for path, item in resource_paths(strategy).items():
            paths[path] = {
                k: ([_v2_parameter(p) for p in v] if k == "parameters" else _v2_operation(v))
                for k, v in item.items()
            }
        roots |= resource_schemas(strategy)
    return {
        "swagger": "2.0",
        "info": _info(),
        "paths": dict(sorted(paths.items())),
        "definitions": {name: to_v2(s) for name, s in closure(roots).items()},
    }


def v2() -> Served:
    """``/openapi/v2`` as JSON."""
    return _v2_json_of(DEFAULT_FEATURE_GATES.generation)


@lru_cache(maxsize=4)
def _v2_json_of(_generation: int) -> Served:
    return _served(orjson.dumps(_v2_document()))


def v2_protobuf() -> Served:
    """``/openapi/v2`` as gnostic's protobuf (kubectl asks for it by ``Accept``)."""
    return _v2_protobuf_of(DEFAULT_FEATURE_GATES.generation)


@lru_cache(maxsize=4)
def _v2_protobuf_of(_generation: int) -> Served:
    return _served(gnostic.document(_v2_document()))
