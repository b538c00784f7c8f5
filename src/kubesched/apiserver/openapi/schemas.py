"""The schemas of the served kinds, as kube-apiserver publishes them (``schemas.json``, vendored by
``scripts/vendor_openapi.py``; see ``NOTICE.md`` beside it), and their OpenAPI v2 form.

The vendored file holds the OpenAPI v3 form (``#/components/schemas/`` references, a described
reference wrapped in ``allOf``); the v2 form is derived from it the way kube-openapi derives both
from one definition: references point into ``#/definitions/``, a one-element ``allOf`` is the
reference itself, and what v2 cannot say (``nullable``, ``oneOf``/``anyOf`` of the int-or-string and
quantity types) is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import orjson

from kubesched.registry.table import STRATEGIES

V3_REF = "#/components/schemas/"
V2_REF = "#/definitions/"
GVK = "x-kubernetes-group-version-kind"


@dataclass(frozen=True, slots=True)
class Vendored:
    #: The Kubernetes release the schemas were taken from (``v1.35``).
    release: str
    #: Name (``io.k8s.api.core.v1.Pod``) → OpenAPI v3 schema.
    schemas: dict[str, Any]
    #: Query parameter name → its OpenAPI v3 parameter object (upstream's description).
    parameters: dict[str, Any]
    #: (group, version, kind) → schema name, for the schemas that stand for exactly one kind.
    by_gvk: dict[tuple[str, str, str], str]


@cache
def vendored() -> Vendored:
    raw = orjson.loads(resources.files(__package__).joinpath("schemas.json").read_bytes())
    schemas: dict[str, Any] = raw["schemas"]
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, schema in schemas.items():
        gvks = schema.get(GVK, [])
        if len(gvks) == 1:
            g = gvks[0]
            by_gvk[(g["group"], g["version"], g["kind"])] = name
    for strategy in STRATEGIES:
        r = strategy.resource
        if (r.group, r.version, r.kind) not in by_gvk:
            _add_open_schema(schemas, by_gvk, r.group, r.version, r.kind, sorted(strategy.top_fields))
    return Vendored(raw["release"], schemas, raw["parameters"], by_gvk)


_TYPE_META_OF = "io.k8s.api.scheduling.v1.PriorityClass"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"


def _add_open_schema(
    schemas: dict[str, Any],
    by_gvk: dict[tuple[str, str, str], str],
    group: str,
    version: str,
    kind: str,
    fields: list[str],
) -> None:
    """A kind served before its schema was vendored (a newer alpha kind) is published as
    kube-apiserver publishes a CRD without a schema: its type and object metadata described, the
    rest of its fields preserved as sent, and its group-version-kind on it and its list."""
    type_meta = schemas[_TYPE_META_OF]["properties"]
    name = f"io.k8s.api.{group.split('.')[0] or 'core'}.{version}.{kind}"
    properties: dict[str, Any] = {
        "apiVersion": type_meta["apiVersion"],
        "kind": type_meta["kind"],
        "metadata": {"allOf": [{"$ref": V3_REF + _OBJECT_META}], "default": {}},
    }
    for field in fields:
        properties[field] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schemas[name] = {
        "description": f"{kind} of {group}/{version}; its fields are kept as sent.",
        "type": "object",
        "properties": properties,
        GVK: [{"group": group, "kind": kind, "version": version}],
    }
    by_gvk[(group, version, kind)] = name
    schemas[name + "List"] = {
        "description": f"{kind}List is a list of {kind} objects.",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta["apiVersion"],
            "kind": type_meta["kind"],
            "items": {"type": "array", "items": {"allOf": [{"$ref": V3_REF + name}], "default": {}}},
            "metadata": {"allOf": [{"$ref": V3_REF + _LIST_META}], "default": {}},
        },
        GVK: [{"group": group, "kind": kind + "List", "version": version}],
    }
    by_gvk[(group, version, kind + "List")] = name + "List"


def references(node: Any, found: set[str]) -> None:
    """Add the names of the schemas ``node`` refers to (v3 form) to ``found``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(V3_REF):
            found.add(ref[len(V3_REF) :])
        for value in node.values():
            references(value, found)
    elif isinstance(node, list):
        for value in node:
            references(value, found)


def closure(roots: set[str]) -> dict[str, Any]:
    """The schemas named in ``roots`` and every schema they refer to, by name."""
    schemas = vendored().schemas
    keep: set[str] = set()
    todo = [r for r in roots if r in schemas]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found: set[str] = set()
        references(schemas[name], found)
        todo.extend(found - keep)
    return {name: schemas[name] for name in sorted(keep)}


def to_v2(node: Any) -> Any:
    """One v3 schema (or any part of a document) in its v2 form."""
    if isinstance(node, list):
        return [to_v2(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "allOf" and len(value) == 1:
            out.update(to_v2(value[0]))
        elif key == "$ref" and isinstance(value, str) and value.startswith(V3_REF):
            out[key] = V2_REF + value[len(V3_REF) :]
        elif key in ("nullable", "oneOf", "anyOf", "not"):
            continue
        elif key in ("properties", "patternProperties"):
            out[key] = {name: to_v2(v) for name, v in value.items()}
        else:
            out[key] = to_v2(value)
    if "$ref" in out:
        # A v2 reference stands alone but for its description, as kube-openapi writes it.
        return {k: out[k] for k in ("$ref", "description") if k in out}
    if node.get("x-kubernetes-int-or-string"):
        # v2 has no type for "an integer or a string": the field stays untyped, as for CRDs upstream.
        out.pop("type", None)
    elif "type" not in out and ("oneOf" in node or "anyOf" in node):
        out["type"] = "string"  # IntOrString and Quantity are strings in v2
    return out


def resolve(node: Any) -> dict[str, Any]:
    """A v3 schema with its reference (plain or wrapped in a one-element ``allOf``) followed."""
    if not isinstance(node, dict):
        return {}
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf") or ()) == 1:
        ref = node["allOf"][0].get("$ref")
    if isinstance(ref, str) and ref.startswith(V3_REF):
        target: dict[str, Any] = vendored().schemas.get(ref[len(V3_REF) :], {})
        return target
    return node


def builtin_schema(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """The schema of a kind compiled into kube-apiserver (its name is ``io.k8s.…``); None for a kind
    served from a CustomResourceDefinition upstream (Volcano's), which takes no strategic merge
    patch there."""
    name = vendored().by_gvk.get((group, version, kind))
    if name is None or not name.startswith("io.k8s."):
        return None
    schema: dict[str, Any] = vendored().schemas[name]
    return schema
