"""``kubesched run``'s metrics endpoint against kube-apiserver v1.20.2 (``../shared/refcp``), with the
ServiceAccount and roles of ``deploy/rbac.yaml``, side by side with kube-scheduler's own endpoint
on the same API server: the same requests get the same answers.

- no token: ``system:anonymous``, 403 on ``/metrics``, 200 on ``/healthz``;
- a token the API server does not know: 401;
- a ServiceAccount's token without a role for ``/metrics``: 403 naming it;
- a ServiceAccount bound to ``kubesched-metrics-reader``: 200.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from kubesched.remote.client import ApiClient
from kubesched.remote.config import load_client_config
from kubesched.remote.delegated_auth import AuthOptions
from kubesched.remote.loop import LoopThread
from kubesched.remote.run import Runner, RunOptions
from kubesched.store.base import AlreadyExists

from .refcp import RefCluster, needs_refcp

ROOT = Path(__file__).resolve().parents[2]
RBAC = "/apis/rbac.authorization.k8s.io/v1"
PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRole": f"{RBAC}/clusterroles",
    "ClusterRoleBinding": f"{RBAC}/clusterrolebindings",
    "Role": f"{RBAC}/namespaces/{{ns}}/roles",
    "RoleBinding": f"{RBAC}/namespaces/{{ns}}/rolebindings",
}

pytestmark = needs_refcp


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    """kube-apiserver and kube-scheduler (whose endpoint is the reference)."""
    cluster = RefCluster(tmp_path_factory.mktemp("refcp"), ("--scheduler",))
    try:
        yield cluster
    finally:
        cluster.stop()


def _token(call: Any, namespace: str, account: str) -> str:
    """A ServiceAccount's token, as ``kubectl create token`` asks for it."""
    with contextlib.suppress(AlreadyExists):
        call(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        )
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    answer = call("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", body=request)
    token: str = answer["status"]["token"]
    return token


def _kubeconfig(ref: RefCluster, token: str, path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "ref", "cluster": {"server": ref.url, "certificate-authority": ref.ca}}
                ],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "ref", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


def _get(port: int, path: str, token: str | None) -> tuple[int, Any]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        raw = resp.read().decode()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw


def _scheduler_port(ref: RefCluster) -> int:
    for line in (ref.root / "env.sh").read_text().splitlines():
        if line.startswith("export REF_SCHED_HEALTHZ="):
            port = urlparse(line.split("=", 1)[1].strip("'\"")).port
            assert port is not None
            return port
    raise AssertionError("refcp started no kube-scheduler")


def test_metrics_as_kube_scheduler_serves_them(ref: RefCluster, tmp_path: Path) -> None:
    loop = LoopThread()
    admin = loop.run(ApiClient.connect(load_client_config(str(ref.kubeconfig))))
    runner: Runner | None = None
    try:

        def call(method: str, path: str, **kw: Any) -> Any:
            return loop.run(admin.request(method, path, **kw))

        for doc in yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()):
            with contextlib.suppress(AlreadyExists):
                call("POST", PATHS[doc["kind"]].format(ns=doc["metadata"].get("namespace", "")), body=doc)
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "monitoring-kubesched-metrics"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "kubesched-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}],
        }
        call("POST", f"{RBAC}/clusterrolebindings", body=binding)
        kubesched = _kubeconfig(
            ref, _token(call, "kube-system", "kubesched"), tmp_path / "kubesched.kubeconfig"
        )
        prometheus = _token(call, "default", "prometheus")
        nobody = _token(call, "default", "nobody")

        # kubesched as its ServiceAccount, which reviews through the same credentials.
        runner = Runner(
            RunOptions(
                kubeconfig=str(kubesched),
                leader_elect=False,
                bind_address="127.0.0.1",
                port=_free_port(),
                auth=AuthOptions(
                    authentication_kubeconfig=str(kubesched), authorization_kubeconfig=str(kubesched)
                ),
                sync_timeout=60.0,
            )
        )
        runner.start()
        assert runner.health_server is not None
        ours, theirs = runner.health_server.port, _scheduler_port(ref)

        cases = [
            ("/metrics", None, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'),
            ("/metrics", "not-a-token", 401, "Unauthorized"),
            ("/healthz", "not-a-token", 401, "Unauthorized"),
            (
                "/metrics",
                nobody,
                403,
                'forbidden: User "system:serviceaccount:default:nobody" cannot get path "/metrics"',
            ),
            ("/metrics", prometheus, 200, None),
            ("/healthz", None, 200, None),
        ]
        for path, token, code, message in cases:
            for port, who in ((ours, "kubesched"), (theirs, "kube-scheduler")):
                got, body = _get(port, path, token)
                assert got == code, (who, path, token and token[:8], body)
                if message is not None:
                    assert body["message"] == message, (who, body)
            if code != 200:
                # Byte for byte the same Status (kube-scheduler pretty-prints it).
                assert _get(ours, path, token)[1] == _get(theirs, path, token)[1]
        assert "# TYPE scheduler_pending_pods gauge" in _get(ours, "/metrics", prometheus)[1]
        assert _get(ours, "/healthz", None)[1] == "ok"
    finally:
        if runner is not None:
            runner.stop()
        loop.run(admin.close())
        loop.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_the_reviews_as_kube_apiserver(ref: RefCluster, make_cluster: Any) -> None:
    """The reviews ``run`` sends, asked of kube-apiserver and of ``serve``: the same answers where
    the two servers' users agree (an unknown token, the anonymous user, a review about nobody)."""
    serve = make_cluster(nodes=0)
    token_review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "not-a-token"},
    }
    anonymous = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:anonymous",
            "groups": ["system:unauthenticated"],
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }
    nobody = {**anonymous, "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}
    empty_token = {**token_review, "spec": {}}
    empty = {**anonymous, "spec": {}}
    for path, body in (
        ("/apis/authentication.k8s.io/v1/tokenreviews", token_review),
        ("/apis/authorization.k8s.io/v1/subjectaccessreviews", anonymous),
        ("/apis/authorization.k8s.io/v1/subjectaccessreviews", nobody),
        ("/apis/authentication.k8s.io/v1/tokenreviews", empty_token),
        ("/apis/authorization.k8s.io/v1/subjectaccessreviews", empty),
    ):
        code, theirs = ref.request("POST", path, body)
        ours_code, ours, _ = serve.request("POST", path, body)
        assert ours_code == code, (path, ours, theirs)
        if code == 201:
            assert ours["status"] == theirs["status"], path
        else:
            assert ours["message"] == theirs["message"], path
            assert ours.get("details", {}).get("causes") == theirs.get("details", {}).get("causes"), path
    # The server's own token is its admin, as the token review says.
    code, answer, _ = serve.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {**token_review, "spec": {"token": serve.token}},
    )
    assert code == 201
    assert answer["status"] == {
        "authenticated": True,
        "user": {"username": "kubesched-admin", "groups": ["system:masters", "system:authenticated"]},
    }
