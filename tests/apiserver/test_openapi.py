"""The OpenAPI documents: every served kind has its upstream schema in v2 (JSON and gnostic protobuf)
and v3, with what kubectl reads (group-version-kind, patch strategies, dryRun and fieldValidation on
PATCH); kubectl 1.32 and 1.20 explain every served kind and diff and dry-run against them."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.apiserver import openapi
from kubesched.apiserver.openapi import gnostic
from kubesched.apiserver.openapi.schemas import to_v2
from kubesched.registry.table import STRATEGIES

GVK = "x-kubernetes-group-version-kind"


def _gvks(schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(g["group"], g["version"], g["kind"]) for g in schema.get(GVK, [])]


# A protobuf wire reader: field number → list of raw values (bytes for length-delimited fields).
def _fields(data: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = struct.unpack("<d", data[i : i + 8])[0], i + 8
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        else:
            raise AssertionError(f"wire type {wire}")
        out.setdefault(number, []).append(value)
    assert i == len(data)
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = data[i]
        i += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, i


def _named(entries: list[bytes]) -> dict[str, bytes]:
    return {_fields(e)[1][0].decode(): _fields(e)[2][0] for e in entries}


def test_every_served_kind_has_its_schema_in_its_group_version_document() -> None:
    root = openapi.v3_root()["paths"]
    for strategy in STRATEGIES:
        if not strategy.served():
            continue
        r = strategy.resource
        path = f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"
        assert path in root
        doc = openapi.v3_group_version(path)
        assert doc is not None
        parsed = json.loads(doc.body)
        kinds = {gvk for s in parsed["components"]["schemas"].values() for gvk in _gvks(s)}
        assert (r.group, r.version, r.kind) in kinds
        if "list" in r.verbs:
            assert (r.group, r.version, r.kind + "List") in kinds
        # Every reference resolves inside the document, as kubectl's parser requires.
        text = doc.body.decode()
        for ref in set(text.split('"$ref":"')[1:]):
            name = ref.split('"')[0].removeprefix("#/components/schemas/")
            assert name in parsed["components"]["schemas"], name


def test_v3_index_names_each_document_by_the_hash_of_its_content() -> None:
    for path, entry in openapi.v3_root()["paths"].items():
        doc = openapi.v3_group_version(path)
        assert doc is not None
        assert entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={doc.etag}"
        assert doc.etag == hashlib.sha512(doc.body).hexdigest().upper()


def test_patch_operations_take_dry_run_and_field_validation_with_their_kind() -> None:
    doc = json.loads(openapi.v3_group_version("apis/apps/v1").body)  # type: ignore[union-attr]
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["operationId"] == "patchAppsV1NamespacedDeployment"
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert {"dryRun", "fieldManager", "fieldValidation", "force"} <= {p["name"] for p in patch["parameters"]}
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["put"]
    assert scale["x-kubernetes-group-version-kind"]["kind"] == "Scale"


def test_strategic_merge_metadata_is_upstreams() -> None:
    v2 = json.loads(openapi.v2().body)
    containers = v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    env = v2["definitions"]["io.k8s.api.core.v1.Container"]["properties"]["env"]
    assert env["x-kubernetes-patch-merge-key"] == "name"


def test_volcano_kinds_are_published_as_kube_apiserver_publishes_a_crd() -> None:
    v2 = json.loads(openapi.v2().body)["definitions"]
    group = v2["sh.volcano.scheduling.v1beta1.PodGroup"]
    assert _gvks(group) == [("scheduling.volcano.sh", "v1beta1", "PodGroup")]
    assert (
        group["properties"]["metadata"]["$ref"]
        == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert "minMember" in group["properties"]["spec"]["properties"]
    listed = v2["sh.volcano.scheduling.v1beta1.PodGroupList"]
    assert listed["properties"]["items"]["items"] == {
        "$ref": "#/definitions/sh.volcano.scheduling.v1beta1.PodGroup"
    }


def test_v2_has_no_v3_only_constructs() -> None:
    text = openapi.v2().body.decode()
    assert "#/components/" not in text and '"allOf"' not in text and '"nullable"' not in text
    definitions = json.loads(text)["definitions"]
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"


def test_protobuf_document_carries_the_json_documents_paths_and_definitions() -> None:
    doc = json.loads(openapi.v2().body)
    top = _fields(openapi.v2_protobuf().body)
    assert top[1] == [b"2.0"]
    definitions = _named(_fields(top[9][0])[1])
    assert set(definitions) == set(doc["definitions"])
    pod = _fields(definitions["io.k8s.api.core.v1.Pod"])
    extensions = {_fields(e)[1][0].decode(): _fields(e)[2][0] for e in pod[31]}
    yaml_text = _fields(extensions[GVK])[2][0].decode()  # Any.yaml
    assert json.loads(yaml_text) == [{"group": "", "kind": "Pod", "version": "v1"}]
    paths = _named(_fields(top[8][0])[2])
    assert set(paths) == set(doc["paths"])
    # PATCH of a Deployment: its parameters include the dryRun query parameter.
    item = _fields(paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"])
    patch = _fields(item[8][0])
    names = []
    for param in patch[8]:
        parameter = _fields(_fields(param)[1][0])
        if 2 in parameter:  # a non-body parameter: query (3) or path (4)
            sub = _fields(next(iter(_fields(parameter[2][0]).values()))[0])
            names.append(sub[4][0].decode())
    assert "dryRun" in names and "fieldValidation" in names


_SCALARS = st.one_of(st.text(max_size=5), st.integers(-5, 5), st.booleans())
_SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "boolean", "number"])},
        optional={
            "description": st.text(max_size=20),
            "format": st.text(max_size=5),
            "enum": st.lists(_SCALARS),
        },
    ),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(st.text(min_size=1, max_size=5), inner)}
        ),
        st.fixed_dictionaries(
            {"type": st.just("object"), "additionalProperties": st.one_of(inner, st.booleans())}
        ),
    ),
    max_leaves=8,
)


def _decode_schema(data: bytes) -> dict[str, Any]:
    f = _fields(data)
    out: dict[str, Any] = {}
    if 22 in f:
        out["type"] = _fields(f[22][0])[1][0].decode()
    if 4 in f:
        out["description"] = f[4][0].decode()
    if 2 in f:
        out["format"] = f[2][0].decode()
    if 20 in f:
        out["enum"] = [json.loads(_fields(a)[2][0]) if 2 in _fields(a) else "" for a in f[20]]
    if 23 in f:
        out["items"] = _decode_schema(_fields(f[23][0])[1][0])
    if 25 in f:
        out["properties"] = {k: _decode_schema(v) for k, v in _named(_fields(f[25][0]).get(1, [])).items()}
    if 21 in f:
        extra = _fields(f[21][0])
        out["additionalProperties"] = _decode_schema(extra[1][0]) if 1 in extra else bool(extra[2][0])
    return out


@settings(max_examples=60, deadline=None)
@given(_SCHEMAS)
def test_a_schema_survives_the_protobuf_encoding(schema: dict[str, Any]) -> None:
    expected = json.loads(json.dumps(schema))
    for s in _walk(expected):
        if s.get("description") == "":
            del s["description"]
        if s.get("format") == "":
            del s["format"]
        if s.get("enum") == []:
            del s["enum"]
    # An empty "properties" stays present: kubectl reads an object with properties as a kind, one
    # without as a map.
    assert _decode_schema(gnostic.schema(to_v2(schema))) == expected


def _walk(s: dict[str, Any]) -> list[dict[str, Any]]:
    out = [s]
    if isinstance(s.get("items"), dict):
        out += _walk(s["items"])
    for v in (s.get("properties") or {}).values():
        out += _walk(v)
    if isinstance(s.get("additionalProperties"), dict):
        out += _walk(s["additionalProperties"])
    return out


def test_documents_are_served_with_their_hash_and_revalidated(cluster) -> None:
    status, root, _ = cluster.request("GET", "/openapi/v3")
    url = root["paths"]["apis/batch/v1"]["serverRelativeURL"]
    status, doc, headers = cluster.request("GET", url)
    assert status == 200 and "io.k8s.api.batch.v1.Job" in doc["components"]["schemas"]
    assert headers["Cache-Control"] == "public, immutable"
    status, _, headers = cluster.request("GET", "/openapi/v3/apis/batch/v1?hash=stale")
    assert status == 301 and headers["Location"] == url
    status, _, headers = cluster.request("GET", "/openapi/v2")
    status, _, _ = cluster.request("GET", "/openapi/v2", headers={"If-None-Match": headers["ETag"]})
    assert status == 304


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_explains_every_served_kind(binary, cluster) -> None:
    run = kubectl_runner(binary, cluster.kubeconfig)
    for strategy in STRATEGIES:
        if not strategy.served():  # behind a feature gate that is off: not served, not published
            continue
        r = strategy.resource
        out = ok(run("explain", r.plural, f"--api-version={r.group_version}"))
        assert re.search(rf"^KIND:\s+{r.kind}$", out, re.M), out
    out = ok(run("explain", "pods.spec.containers.ports"))
    assert re.search(r"^\s+containerPort\t<integer> -required-$", out, re.M), out
    assert re.search(r"^\s+protocol\t<string>$", out, re.M), out
    out = ok(run("explain", "podgroups.spec.minMember"))
    assert "minMember" in out and "<integer>" in out


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_diff_and_server_dry_run_store_nothing(binary, cluster, tmp_path) -> None:
    run = kubectl_runner(binary, cluster.kubeconfig)
    manifest = tmp_path / "web.yaml"

    def write(replicas: int, value: str) -> None:
        manifest.write_text(
            json.dumps(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web"},
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {
                                "containers": [
                                    {"name": "c", "image": "nginx", "env": [{"name": "A", "value": value}]}
                                ]
                            },
                        },
                    },
                }
            )
        )

    write(2, "1")
    assert "created (server dry run)" in ok(run("apply", "--dry-run=server", "-f", str(manifest)))
    assert "NotFound" in run("get", "deployment", "web").stderr
    ok(run("apply", "-f", str(manifest)))
    write(3, "2")
    diff = run("diff", "-f", str(manifest))
    assert diff.returncode == 1, diff.stderr
    assert "-  replicas: 2\n+  replicas: 3" in diff.stdout
    assert '-          value: "1"\n+          value: "2"' in diff.stdout
    out = ok(run("apply", "--dry-run=server", "-f", str(manifest), "-o", "jsonpath={.spec.replicas}"))
    assert out == "3"
    assert ok(run("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}")) == "2"
    ok(run("apply", "-f", str(manifest)))
    assert run("diff", "-f", str(manifest)).returncode == 0


def test_a_kind_behind_an_off_gate_is_not_published_and_is_once_the_gate_is_on() -> None:
    before = DEFAULT_FEATURE_GATES.set_all({"GenericWorkload": False})
    try:
        assert "apis/scheduling.k8s.io/v1alpha2" not in openapi.v3_root()["paths"]
        assert not any("/scheduling.k8s.io/v1alpha2/" in p for p in json.loads(openapi.v2().body)["paths"])
        DEFAULT_FEATURE_GATES.set_all({"GenericWorkload": True})
        doc = openapi.v3_group_version("apis/scheduling.k8s.io/v1alpha2")
        assert doc is not None
        kinds = {gvk for s in json.loads(doc.body)["components"]["schemas"].values() for gvk in _gvks(s)}
        assert {("scheduling.k8s.io", "v1alpha2", k) for k in ("Workload", "PodGroup")} <= kinds
        assert any("/scheduling.k8s.io/v1alpha2/" in p for p in json.loads(openapi.v2().body)["paths"])
    finally:
        DEFAULT_FEATURE_GATES.set_all(before)
