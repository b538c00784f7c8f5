"""Tables and what their rows carry (``includeObject``): the whole object, its metadata (the
default) or nothing, in lists, gets and watches; ``kubectl get --sort-by`` sorts on any field."""

from __future__ import annotations

import json

import pytest
from tests.apiserver.conftest import pod
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

PODS = "/api/v1/namespaces/default/pods"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
# What kubectl sends: Table in v1, then v1beta1, then the objects themselves.
KUBECTL_ACCEPT = {
    "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
    "g=meta.k8s.io,application/json"
}


def _bound(cluster, name):
    return until(lambda: cluster.request("GET", f"{PODS}/{name}")[1]["spec"].get("nodeName"))


def test_rows_carry_whole_objects_metadata_or_nothing(cluster):
    cluster.request("POST", PODS, pod("web-1"))
    node = _bound(cluster, "web-1")

    code, tbl, _ = cluster.request("GET", f"{PODS}?includeObject=Object", headers=KUBECTL_ACCEPT)
    assert code == 200 and tbl["apiVersion"] == "meta.k8s.io/v1"
    obj = tbl["rows"][0]["object"]
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1" and obj["spec"]["nodeName"] == node
    assert obj["metadata"]["name"] == "web-1" and "status" in obj

    code, tbl, _ = cluster.request("GET", f"{PODS}/web-1?includeObject=Object", headers=TABLE)
    assert code == 200 and tbl["rows"][0]["object"]["spec"]["nodeName"] == node

    for query in ("", "?includeObject=Metadata", "?includeObject="):
        code, tbl, _ = cluster.request("GET", f"{PODS}{query}", headers=TABLE)
        partial = tbl["rows"][0]["object"]
        assert partial["kind"] == "PartialObjectMetadata" and partial["apiVersion"] == "meta.k8s.io/v1"
        assert set(partial) == {"kind", "apiVersion", "metadata"} and partial["metadata"]["name"] == "web-1"

    code, tbl, _ = cluster.request("GET", f"{PODS}?includeObject=None", headers=TABLE)
    assert code == 200 and tbl["rows"][0]["object"] is None and tbl["rows"][0]["cells"][0] == "web-1"


def test_a_v1beta1_table_and_its_rows_are_v1beta1(cluster):
    cluster.request("POST", PODS, pod("web-1"))
    accept = {"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"}
    code, tbl, _ = cluster.request("GET", PODS, headers=accept)
    assert code == 200 and tbl["apiVersion"] == "meta.k8s.io/v1beta1"
    assert tbl["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    # The objects themselves asked for first: no table.
    objects_first = {"Accept": "application/json,application/json;as=Table;v=v1;g=meta.k8s.io"}
    code, listed, _ = cluster.request("GET", PODS, headers=objects_first)
    assert code == 200 and listed["kind"] == "PodList"


def test_an_unknown_include_object_is_refused_as_upstream(cluster):
    code, status, _ = cluster.request("GET", f"{PODS}?includeObject=Everything", headers=TABLE)
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == (
        'Unable to convert to Table as requested: includeObject: Invalid value: "Everything": '
        "must be 'Metadata', 'Object', 'None', or empty"
    )
    resp = cluster.stream(f"{PODS}?watch=1&includeObject=Everything", headers=TABLE)
    assert resp.status == 400
    # Without a table the option means nothing.
    assert cluster.request("GET", f"{PODS}?includeObject=Everything")[0] == 200


def test_a_table_watch_sends_objects_and_the_columns_once(cluster):
    cluster.request("POST", PODS, pod("a-1"))
    cluster.request("POST", PODS, pod("b-1"))
    resp = cluster.stream(f"{PODS}?watch=1&timeoutSeconds=1&includeObject=Object", headers=TABLE)
    events = [json.loads(line) for line in resp.read().splitlines()]
    assert [e["object"]["rows"][0]["object"]["metadata"]["name"] for e in events][:2] == ["a-1", "b-1"]
    assert all(e["object"]["kind"] == "Table" for e in events)
    assert events[0]["object"]["columnDefinitions"][0]["name"] == "Name"
    assert all(e["object"]["columnDefinitions"] is None for e in events[1:])
    assert events[0]["object"]["rows"][0]["object"]["kind"] == "Pod"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_sort_by_any_field(make_cluster, binary):
    cluster = make_cluster(nodes=3)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    for name, node in (("c", "node-0"), ("a", "node-2"), ("b", "node-1")):
        body = pod(name, nodeSelector={"kubernetes.io/hostname": node})
        body["metadata"]["labels"] = {}
        code, created, _ = cluster.request("POST", PODS, body)
        assert code == 201, created
    until(lambda: all(_bound(cluster, n) for n in "abc"))

    out = ok(kubectl("get", "pods", "-A", "--sort-by=.spec.nodeName", "-o", "wide"))
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [r[1] for r in rows] == ["c", "b", "a"], out

    out = ok(kubectl("get", "pods", "--sort-by=.metadata.name", "--no-headers"))
    assert [line.split()[0] for line in out.splitlines()] == ["a", "b", "c"]

    # Events sort by their last time (every Scheduled event has one).
    until(lambda: ok(kubectl("get", "events", "--no-headers")).count("Scheduled") >= 3)
    out = ok(kubectl("get", "events", "--sort-by=.lastTimestamp"))
    assert out.count("Scheduled") >= 3 and "No resources found" not in out
    out = ok(kubectl("get", "events", "-A", "--sort-by=.metadata.creationTimestamp"))
    assert out.splitlines()[0].split()[:2] == ["NAMESPACE", "LAST"]
