"""Refresh ``src/kubesched/apiserver/openapi/schemas.json``: the OpenAPI v3 schemas of every kind the
registry's table serves, trimmed from the documents a kube-apiserver publishes and from Volcano's CRDs.

    python scripts/vendor_openapi.py --kube DIR --crd podgroups.yaml --crd queues.yaml \\
        --crd hypernodes.yaml --release v1.35

``DIR`` holds kube-apiserver's ``/openapi/v3`` group-version documents, either as the Kubernetes
repository keeps them (``api/openapi-spec/v3/apis__apps__v1_openapi.json``) or one file per group
version (``api/v1.json``, ``apis/apps/v1.json``). The CRD files are Volcano's
``config/crd/volcano/bases/*.yaml``. A CRD's schema is published as kube-apiserver's CRD OpenAPI
builder publishes it: ``metadata`` refers to ObjectMeta, ``apiVersion`` and ``kind`` carry TypeMeta's
descriptions, the kind and its list kind carry ``x-kubernetes-group-version-kind``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from kubesched.apiserver.openapi.schemas import references
from kubesched.registry.table import STRATEGIES

REF = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
#: What every group-version document refers to besides its kinds (the request and answer types).
COMMON = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
)
#: The kinds subresources read and write.
SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
}


def load_kube(directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schemas, and the query parameters of the operations (their upstream descriptions)."""
    schemas: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    for path in sorted(directory.rglob("*.json")):
        doc = json.loads(path.read_text())
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            schemas.setdefault(name, schema)
        for item in doc.get("paths", {}).values():
            for key, operation in item.items():
                for param in operation if key == "parameters" else operation.get("parameters", []):
                    if param["in"] == "query":
                        parameters.setdefault(param["name"], param)
    return schemas, parameters


def _rest_friendly(group: str, version: str, kind: str) -> str:
    return ".".join([*reversed(group.split(".")), version, kind])


def crd_schemas(path: Path, type_meta: dict[str, Any]) -> dict[str, Any]:
    crd = yaml.safe_load(path.read_text())
    spec = crd["spec"]
    group, names = spec["group"], spec["names"]
    out: dict[str, Any] = {}
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        v = version["name"]
        kind_name = _rest_friendly(group, v, names["kind"])
        schema = dict(version["schema"]["openAPIV3Schema"])
        props = dict(schema.get("properties", {}))
        props["apiVersion"] = type_meta["apiVersion"]
        props["kind"] = type_meta["kind"]
        props["metadata"] = {
            "$ref": REF + OBJECT_META,
            "description": "Standard object's metadata. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        }
        schema["properties"] = props
        schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": names["kind"], "version": v}]
        out[kind_name] = schema
        list_kind = names.get("listKind", names["kind"] + "List")
        out[_rest_friendly(group, v, list_kind)] = {
            "description": f"{list_kind} is a list of {names['kind']}",
            "properties": {
                "apiVersion": type_meta["apiVersion"],
                "items": {
                    "description": f"List of {names['plural']}. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                    "items": {"$ref": REF + kind_name},
                    "type": "array",
                },
                "kind": type_meta["kind"],
                "metadata": {
                    "$ref": REF + LIST_META,
                    "description": "Standard list metadata. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                },
            },
            "required": ["items"],
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind, "version": v}],
        }
    return out


def _by_gvk(schemas: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in schemas.items():
        gvks = schema.get("x-kubernetes-group-version-kind", [])
        if len(gvks) == 1:
            g = gvks[0]
            out[(g["group"], g["version"], g["kind"])] = name
    return out


def trimmed(schemas: dict[str, Any]) -> dict[str, Any]:
    by_gvk = _by_gvk(schemas)
    roots: set[str] = set(COMMON)
    for strategy in STRATEGIES:
        r = strategy.resource
        for kind in (r.kind, r.kind + "List"):
            name = by_gvk.get((r.group, r.version, kind))
            if name is None:
                if kind == r.kind:
                    # Served with a schemaless schema (a kind newer than the release vendored).
                    print(f"no schema for {r.group}/{r.version} {kind}: served without one")
                continue
            roots.add(name)
        for sub in r.subresources:
            if sub in SUBRESOURCE_KINDS:
                roots.add(by_gvk[SUBRESOURCE_KINDS[sub]])
    keep: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found: set[str] = set()
        references(schemas[name], found)
        todo.extend(found - keep)
    return {name: schemas[name] for name in sorted(keep)}


def write(path: Path, release: str, schemas: dict[str, Any], parameters: dict[str, Any]) -> None:
    # One schema a line: a refresh shows as a diff of the kinds that changed.
    lines = [
        f'{{"release": {json.dumps(release)},',
        f'"parameters": {json.dumps(dict(sorted(parameters.items())), sort_keys=True)},',
        '"schemas": {',
        ",\n".join(f"{json.dumps(n)}: {json.dumps(s, sort_keys=True)}" for n, s in schemas.items()),
        "}}",
    ]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kube", type=Path, required=True)
    parser.add_argument("--crd", type=Path, action="append", default=[])
    parser.add_argument("--release", required=True)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parent.parent / "src/kubesched/apiserver/openapi/schemas.json",
    )
    args = parser.parse_args()
    schemas, parameters = load_kube(args.kube)

    deployment = schemas["io.k8s.api.apps.v1.Deployment"]["properties"]
    type_meta = {"apiVersion": deployment["apiVersion"], "kind": deployment["kind"]}
    for crd in args.crd:
        schemas.update(crd_schemas(crd, type_meta))
    kept = trimmed(schemas)
    write(args.out, args.release, kept, parameters)
    print(f"{len(kept)} schemas of {len(schemas)} -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
