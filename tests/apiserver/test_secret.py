"""Secrets over HTTP and from kubectl: ``kubectl create secret generic|tls|docker-registry`` (JSON or
protobuf bodies), the table, stringData folded into data, types and immutable secrets."""

from __future__ import annotations

import base64
import datetime
import json

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok
from tests.apiserver.test_protobuf import _envelope, _field

SECRETS = "/api/v1/namespaces/default/secrets"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _key_pair(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "web")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_secret_create_get_table_and_string_data(cluster):
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "data": {"user": _b64(b"admin")},
        "stringData": {"password": "s3cret", "user": "root"},
    }
    code, created, _ = cluster.request("POST", SECRETS, body)
    assert code == 201, created
    assert created["type"] == "Opaque" and "stringData" not in created
    assert created["data"] == {"password": _b64(b"s3cret"), "user": _b64(b"root")}
    code, tbl, _ = cluster.request("GET", SECRETS, headers=TABLE)
    assert [c["name"] for c in tbl["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert [r["cells"][:3] for r in tbl["rows"]] == [["db", "Opaque", 2]]
    code, patched, _ = cluster.request(
        "PATCH", f"{SECRETS}/db", {"stringData": {"extra": "x"}}, content_type="application/merge-patch+json"
    )
    assert code == 200 and set(patched["data"]) == {"extra", "password", "user"}
    listed = cluster.request("GET", f"{SECRETS}?fieldSelector=type%3DOpaque")[1]["items"]
    assert [s["metadata"]["name"] for s in listed] == ["db"]
    assert cluster.request("GET", f"{SECRETS}?fieldSelector=type%3Dkubernetes.io/tls")[1]["items"] == []


def test_secret_errors_are_upstreams(cluster):
    bad = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "data": {"a": "YQ=x"}}
    code, status, _ = cluster.request("POST", SECRETS, bad)
    assert code == 400 and status["message"].endswith("illegal base64 data at input byte 2")
    tls = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "type": "kubernetes.io/tls"}
    code, status, _ = cluster.request("POST", SECRETS, tls)
    assert code == 422
    assert status["message"] == (
        'Secret "t" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]'
    )
    frozen = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "f"}, "immutable": True, "data": {}}
    assert cluster.request("POST", SECRETS, frozen)[0] == 201
    code, status, _ = cluster.request(
        "PATCH", f"{SECRETS}/f", {"data": {"a": "YQ=="}}, content_type="application/merge-patch+json"
    )
    assert code == 422
    assert (
        status["message"]
        == 'Secret "f" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )
    code, _, _ = cluster.request(
        "PATCH",
        f"{SECRETS}/f",
        {"metadata": {"labels": {"a": "b"}}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    assert cluster.request("DELETE", f"{SECRETS}/f")[0] == 200


def test_secret_in_protobuf_as_kubectl_create_sends_it(cluster):
    entry = _field(1, b"key") + _field(2, b"\x00\xffbinary")
    literal = _field(1, b"note") + _field(2, b"plain")
    raw = (
        _field(1, _field(1, b"bin"))
        + _field(2, entry)
        + _field(3, b"Opaque")
        + _field(4, literal)
        + _field(5, 0)
    )
    code, created, _ = cluster.request(
        "POST", SECRETS, _envelope("v1", "Secret", raw), content_type="application/vnd.kubernetes.protobuf"
    )
    assert code == 201, created
    assert created["data"] == {"key": _b64(b"\x00\xffbinary"), "note": _b64(b"plain")}
    assert created["immutable"] is False and created["type"] == "Opaque"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_create_secret_generic_tls_and_docker_registry(cluster, binary, tmp_path):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    (tmp_path / "blob").write_bytes(bytes(range(256)))
    ok(
        kubectl(
            "create",
            "secret",
            "generic",
            "app",
            "--from-literal=user=admin",
            f"--from-file={tmp_path / 'blob'}",
        )
    )
    cert, key = _key_pair(tmp_path)
    ok(kubectl("create", "secret", "tls", "web-tls", f"--cert={cert}", f"--key={key}"))
    ok(
        kubectl(
            "create",
            "secret",
            "docker-registry",
            "regcred",
            "--docker-server=registry.example.com",
            "--docker-username=u",
            "--docker-password=p",
        )
    )
    rows = [line.split() for line in ok(kubectl("get", "secrets")).splitlines()]
    assert rows[0] == ["NAME", "TYPE", "DATA", "AGE"]
    assert [r[:3] for r in rows[1:]] == [
        ["app", "Opaque", "2"],
        ["regcred", "kubernetes.io/dockerconfigjson", "1"],
        ["web-tls", "kubernetes.io/tls", "2"],
    ]
    app = json.loads(ok(kubectl("get", "secret", "app", "-o", "json")))
    assert base64.b64decode(app["data"]["blob"]) == bytes(range(256))
    assert base64.b64decode(app["data"]["user"]) == b"admin"
    tls = json.loads(ok(kubectl("get", "secret", "web-tls", "-o", "json")))
    assert base64.b64decode(tls["data"]["tls.crt"]) == cert.read_bytes()
    config = json.loads(
        base64.b64decode(
            json.loads(ok(kubectl("get", "secret", "regcred", "-o", "json")))["data"][".dockerconfigjson"]
        )
    )
    assert config["auths"]["registry.example.com"]["username"] == "u"

    proc = kubectl("create", "secret", "generic", "app", "--from-literal=a=b")
    assert proc.returncode == 1 and 'secrets "app" already exists' in proc.stderr
    ok(kubectl("patch", "secret", "app", "-p", '{"immutable":true}'))
    proc = kubectl("patch", "secret", "app", "-p", '{"stringData":{"user":"root"}}')
    assert proc.returncode == 1 and "field is immutable when `immutable` is set" in proc.stderr
    assert 'secret "app" deleted' in ok(kubectl("delete", "secret", "app"))
