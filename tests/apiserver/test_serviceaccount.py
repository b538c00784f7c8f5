"""ServiceAccounts served over HTTP: create, get, list as a Table, delete; discovery lists `sa`."""

from __future__ import annotations

from tests.apiserver.kubectls import until
from tests.apiserver.test_protobuf import _envelope, _field

SAS = "/api/v1/namespaces/default/serviceaccounts"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def test_serviceaccount_create_get_table_delete(cluster):
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "builder"},
        "secrets": [{"name": "builder-token"}, {"name": "other"}],
        "imagePullSecrets": [{"name": "regcred"}],
        "automountServiceAccountToken": False,
    }
    code, created, _ = cluster.request("POST", SAS, sa)
    assert code == 201, created
    assert created["metadata"]["namespace"] == "default" and created["metadata"]["uid"]

    code, got, _ = cluster.request("GET", f"{SAS}/builder")
    assert code == 200
    assert got["secrets"] == sa["secrets"] and got["automountServiceAccountToken"] is False

    assert until(lambda: cluster.request("GET", f"{SAS}/default")[0] == 200)
    code, tbl, _ = cluster.request("GET", SAS, headers=TABLE)
    assert code == 200 and tbl["kind"] == "Table"
    assert [c["name"] for c in tbl["columnDefinitions"]] == ["Name", "Secrets", "Age"]
    # The service accounts controller's "default" is there too.
    assert sorted(r["cells"][:2] for r in tbl["rows"]) == [["builder", 2], ["default", 0]]

    code, _, _ = cluster.request("DELETE", f"{SAS}/builder")
    assert code == 200
    assert cluster.request("GET", f"{SAS}/builder")[0] == 404


def test_serviceaccount_discovery_and_unknown_fields(cluster):
    code, v1, _ = cluster.request("GET", "/api/v1")
    entry = next(r for r in v1["resources"] if r["name"] == "serviceaccounts")
    assert entry["kind"] == "ServiceAccount" and entry["namespaced"] is True
    assert entry["shortNames"] == ["sa"]

    bad = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}, "spec": {}}
    code, status, _ = cluster.request("POST", f"{SAS}?fieldValidation=Strict", bad)
    assert code == 400, status


def test_serviceaccount_in_protobuf_as_kubectl_create_sends_it(cluster):
    raw = _field(1, _field(1, b"ci")) + _field(2, _field(3, b"tok")) + _field(3, _field(1, b"reg"))
    body = _envelope("v1", "ServiceAccount", raw + _field(4, 0))
    code, created, _ = cluster.request("POST", SAS, body, content_type="application/vnd.kubernetes.protobuf")
    assert code == 201, created
    assert created["secrets"] == [{"name": "tok"}] and created["imagePullSecrets"] == [{"name": "reg"}]
    assert created["automountServiceAccountToken"] is False
