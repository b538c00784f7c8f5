"""Side by side with kube-apiserver v1.20.2 (``../shared/refcp``, in a directory of its own): what
kubectl users reach besides plain objects (tables with objects, Secrets, the access reviews, the
checks before a pod's kubelet is asked) gets the same answers. Skipped unless refcp is built."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
from tests.remote.refcp import RefCluster, needs_refcp

pytestmark = needs_refcp

PODS = "/api/v1/namespaces/default/pods"
SECRETS = "/api/v1/namespaces/default/secrets"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
MERGE = "application/merge-patch+json"


class _Client:
    def __init__(self, port: int, token: str, cafile: str) -> None:
        self.port, self.token = port, token
        self.ctx = ssl.create_default_context(cafile=cafile)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers=None,
    ) -> tuple[int, Any, dict[str, str]]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        hdrs = {"Content-Type": content_type, "Authorization": f"Bearer {self.token}", **(headers or {})}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode()
        return resp.status, parsed, dict(resp.getheaders())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Client]:
    ref = RefCluster(tmp_path_factory.mktemp("refcp"))
    try:
        yield _Client(int(urlparse(ref.url).port or 443), ref.token, ref.ca)
    finally:
        ref.stop()


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeSelector": {"nowhere": "x"}, **spec},
    }


def _secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def _status(result: tuple[int, Any, dict[str, str]], message: bool = True) -> tuple[Any, ...]:
    code, body, _ = result
    if not (isinstance(body, dict) and body.get("kind") == "Status"):
        return (code,)
    causes = sorted(
        (c.get("field"), c.get("message")) for c in (body.get("details") or {}).get("causes") or []
    )
    return (code, body.get("reason"), body.get("message") if message else None, causes)


def _scenario(server: Any) -> list[Any]:
    """The same requests; what each answered, in comparable form."""
    out: list[Any] = []
    server.request(
        "POST", PODS, _pod("two", containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "x"}])
    )
    server.request("POST", PODS, _pod("one"))

    # Tables and what their rows carry.
    for include in ("Object", "Metadata", "None", ""):
        code, tbl, _ = server.request("GET", f"{PODS}?includeObject={include}", headers=TABLE)
        obj = tbl["rows"][0]["object"]
        out.append(
            (code, tbl["kind"], None if obj is None else (obj["kind"], obj["apiVersion"], "spec" in obj))
        )
    out.append(_status(server.request("GET", f"{PODS}?includeObject=All", headers=TABLE)))

    # The checks made before a pod's kubelet is asked.
    out.append(_status(server.request("GET", f"{PODS}/missing/log")))
    out.append(_status(server.request("GET", f"{PODS}/two/log")))
    out.append(_status(server.request("GET", f"{PODS}/one/log?container=x")))
    out.append(_status(server.request("GET", f"{PODS}/one/log?tailLines=-1&limitBytes=0")))
    out.append(
        _status(server.request("GET", f"{PODS}/one/log?sinceSeconds=1&sinceTime=2020-01-01T00:00:00Z"))
    )
    out.append(_status(server.request("GET", f"{PODS}/one/log?tailLines=x")))
    out.append(server.request("GET", f"{PODS}/one/log")[0])  # no node: nothing
    out.append(
        _status(server.request("POST", f"{PODS}/one/exec?command=ls", headers={"Connection": "Upgrade"}))
    )
    out.append(_status(server.request("POST", f"{PODS}/one/portforward?ports=x")))
    out.append(_status(server.request("DELETE", f"{PODS}/one/exec")))

    # Secrets.
    created = server.request(
        "POST", SECRETS, _secret("s", data={"a": "YQ=="}, stringData={"a": "b", "c": "d"})
    )
    out.append((created[0], created[1]["data"], created[1]["type"], "stringData" in created[1]))
    out.append(_status(server.request("POST", SECRETS, _secret("b64", data={"a": "YQ=x"})), message=False))
    for kind in (
        "kubernetes.io/tls",
        "kubernetes.io/dockerconfigjson",
        "kubernetes.io/service-account-token",
    ):
        out.append(_status(server.request("POST", SECRETS, _secret("t", type=kind))))
    # Upstream walks the keys in Go's map order: the causes compare, not their order in the message.
    bad_keys = _secret("k", stringData={"bad key": "v", "..x": "v"})
    out.append(_status(server.request("POST", SECRETS, bad_keys), message=False))
    out.append(
        _status(
            server.request(
                "POST",
                SECRETS,
                _secret("j", type="kubernetes.io/dockerconfigjson", stringData={".dockerconfigjson": "[1]"}),
            )
        )
    )
    server.request("POST", SECRETS, _secret("frozen", immutable=True, data={"a": "YQ=="}))
    out.append(
        _status(server.request("PATCH", f"{SECRETS}/frozen", {"data": {"a": "Yg=="}}, content_type=MERGE))
    )
    out.append(
        _status(server.request("PATCH", f"{SECRETS}/frozen", {"immutable": False}, content_type=MERGE))
    )
    out.append(_status(server.request("PATCH", f"{SECRETS}/s", {"type": "x/y"}, content_type=MERGE)))
    code, patched, _ = server.request("PATCH", f"{SECRETS}/s", {"stringData": {"e": "f"}}, content_type=MERGE)
    out.append((code, sorted(patched["data"])))

    # Access reviews of the admin's token.
    review = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1"}
    code, answer, _ = server.request(
        "POST", SSAR, {**review, "spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}}
    )
    out.append((code, answer["status"], answer["metadata"].get("creationTimestamp")))
    out.append(_status(server.request("POST", SSAR, {**review, "spec": {}})))
    rules = {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "spec": {}}
    out.append(_status(server.request("POST", SSRR, rules)))
    out.append(_status(server.request("GET", SSAR)))
    return out


def test_same_answers_as_kube_apiserver(reference, make_cluster):
    ours = make_cluster(nodes=1, auto_create_namespaces=False)
    theirs, mine = _scenario(reference), _scenario(ours)
    for i, (want, got) in enumerate(zip(theirs, mine, strict=True)):
        assert got == want, f"answer {i}: kube-apiserver {want!r}, kubesched {got!r}"
