"""Hypothesis throws bodies and query strings at the API: never a 5xx, never a lost object."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.apiserver.conftest import Cluster, pod

from kubesched.apiserver.server import ServeOptions

PODS = "/api/v1/namespaces/default/pods"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)

#: Pod-shaped bodies with one part replaced by anything.
PATHS = [
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "labels"),
    ("metadata", "namespace"),
    ("spec",),
    ("spec", "containers"),
    ("spec", "containers", 0),
    ("spec", "containers", 0, "resources"),
    ("spec", "containers", 0, "resources", "requests", "cpu"),
    ("spec", "priority"),
    ("spec", "nodeName"),
    ("spec", "tolerations"),
    ("spec", "affinity"),
    ("kind",),
    ("apiVersion",),
    ("status",),
]


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory) -> Iterator[Cluster]:
    cluster = Cluster(ServeOptions(data_dir=tmp_path_factory.mktemp("fuzz"), port=0, nodes=2)).start()
    assert cluster.request("POST", PODS, pod("keeper"))[0] == 201
    yield cluster
    cluster.stop()


def _check(cluster: Cluster, code: int, body) -> None:
    assert code < 500, body
    if code >= 400:
        assert isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == code, body


def _replace(obj, path, value):
    cur = obj
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return obj


@FUZZ
@given(body=json_values)
def test_any_json_body(fuzz_cluster, body):
    for method, path in (
        ("POST", PODS),
        ("PUT", f"{PODS}/keeper"),
        ("POST", "/api/v1/nodes"),
        ("POST", "/apis/apps/v1/namespaces/default/deployments"),
    ):
        code, resp, _ = fuzz_cluster.request(method, path, json.dumps(body))
        _check(fuzz_cluster, code, resp)


@FUZZ
@given(
    where=st.sampled_from(PATHS),
    value=json_values,
    name=st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
)
def test_pod_with_one_bad_part(fuzz_cluster, where, value, name):
    body = pod(f"f-{name}")
    code, resp, _ = fuzz_cluster.request("POST", PODS, _replace(body, where, value))
    _check(fuzz_cluster, code, resp)
    if code == 201:
        fuzz_cluster.request("DELETE", f"{PODS}/{resp['metadata']['name']}")
    for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        patch = {where[0]: value} if len(where) == 1 else {where[0]: {where[1]: value}}
        code, resp, _ = fuzz_cluster.request("PATCH", f"{PODS}/keeper", json.dumps(patch), content_type=ctype)
        _check(fuzz_cluster, code, resp)
    # Server-side apply of the whole pod with the bad part, forced over the keeper's other managers.
    code, resp, _ = fuzz_cluster.request(
        "PATCH",
        f"{PODS}/keeper?fieldManager=fuzz&force=true",
        json.dumps(_replace(pod("keeper"), where, value)),
        content_type="application/apply-patch+yaml",
    )
    _check(fuzz_cluster, code, resp)
    assert fuzz_cluster.request("GET", f"{PODS}/keeper")[0] == 200


@FUZZ
@given(
    raw=st.binary(max_size=200),
    ctype=st.sampled_from(
        [
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
            "text/plain",
        ]
    ),
)
def test_any_bytes(fuzz_cluster, raw, ctype):
    for method, path in (
        ("POST", PODS),
        ("PATCH", f"{PODS}/keeper"),
        ("PATCH", f"{PODS}/keeper?fieldManager=fuzz"),
        ("POST", f"{PODS}/keeper/binding"),
        ("POST", f"{PODS}/nothing/eviction"),
        ("DELETE", f"{PODS}/nothing"),
    ):
        code, resp, _ = fuzz_cluster.request(method, path, raw, content_type=ctype)
        _check(fuzz_cluster, code, resp)
    assert fuzz_cluster.request("GET", f"{PODS}/keeper")[0] == 200


query_keys = st.sampled_from(
    [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "timeoutSeconds",
        "watch",
        "allowWatchBookmarks",
        "fieldValidation",
        "dryRun",
    ]
)


@FUZZ
@given(params=st.lists(st.tuples(query_keys, st.text(max_size=30)), max_size=4))
def test_any_query_string(fuzz_cluster, params):
    params = [(k, v) for k, v in params if k != "watch"] + [("timeoutSeconds", "0")]
    qs = "&".join(f"{k}={quote(v)}" for k, v in params)
    for path in (PODS, "/api/v1/pods", "/api/v1/nodes", "/apis/events.k8s.io/v1/events"):
        code, resp, _ = fuzz_cluster.request("GET", f"{path}?{qs}")
        _check(fuzz_cluster, code, resp)
