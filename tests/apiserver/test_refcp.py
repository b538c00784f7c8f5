"""Side by side with kube-apiserver itself (v1.20.2 from ../shared/refcp): the same requests get the
same status codes, reasons and, for the common errors, the same messages. Skipped unless refcp is
built (``../shared/refcp/build.sh``)."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import ssl
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from tests.apiserver.conftest import WARDLE_API_SERVICE

REFCP = Path(__file__).resolve().parents[3] / "shared" / "refcp"
REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
pytestmark = pytest.mark.skipif(
    not (REF_DIR / "bin" / "kube-apiserver").exists() or not (REFCP / "start.sh").exists(),
    reason="refcp (a real kube-apiserver) is not built here",
)


class Reference:
    def __init__(self) -> None:
        env = {**os.environ, "REF_PORTS": "auto"}
        subprocess.run(
            ["bash", str(REFCP / "start.sh")], check=True, env=env, capture_output=True, timeout=180
        )
        values: dict[str, str] = {}
        for line in (REF_DIR / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export ") :].partition("=")
                values[key] = shlex.split(value)[0] if value else ""
        url = urlparse(values["REF_API_URL"])
        self.port = int(url.port or 443)
        self.token = values["REF_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=values["REF_CA"])

    def request(self, method, path, body=None, *, content_type="application/json", token="default"):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        headers = {"Content-Type": content_type}
        if token is not None:
            headers["Authorization"] = f"Bearer {self.token if token == 'default' else token}"
        data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode()
        return resp.status, parsed, dict(resp.getheaders())

    def stop(self) -> None:
        subprocess.run(["bash", str(REFCP / "stop.sh"), "--wipe"], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def reference():
    ref = Reference()
    yield ref
    ref.stop()


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def _scenario(server) -> list[tuple[int, str | None, str | None, list[str] | None]]:
    """The same requests, in order; what each answered (code, reason, message, cause fields)."""
    out = []

    def note(result, message: bool = True):
        code, body, _ = result
        reason = body.get("reason") if isinstance(body, dict) and body.get("kind") == "Status" else None
        msg = (
            body.get("message")
            if message and isinstance(body, dict) and body.get("kind") == "Status"
            else None
        )
        causes = None
        if isinstance(body, dict) and isinstance(body.get("details"), dict) and body["details"].get("causes"):
            causes = sorted(c.get("field", "") for c in body["details"]["causes"])
        out.append((code, reason, msg, causes))
        return body

    note(server.request("GET", f"{PODS}/missing"))
    note(server.request("GET", PODS, token="wrong"))
    created = note(
        server.request("POST", CM, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}), message=False
    )
    note(server.request("POST", CM, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}))
    note(server.request("PUT", f"{CM}/cfg", {**created, "data": {"a": "2"}}), message=False)
    note(server.request("PUT", f"{CM}/cfg", {**created, "data": {"a": "3"}}))
    note(
        server.request(
            "POST",
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
    )
    note(server.request("POST", PODS, {**_pod("Bad_Name")}), message=False)
    note(server.request("POST", PODS, b"{not json"), message=False)
    note(
        server.request(
            "POST",
            "/api/v1/namespaces/kube-system/pods",
            _pod("x") | {"metadata": {"name": "x", "namespace": "default"}},
        )
    )
    note(server.request("POST", "/api/v1/namespaces/other/pods", _pod("x")))
    note(server.request("PATCH", f"{CM}/cfg", {"data": {"b": "2"}}, content_type="text/plain"), message=False)
    note(
        server.request(
            "PATCH", f"{CM}/nope", {"data": {"b": "2"}}, content_type="application/merge-patch+json"
        )
    )
    bad_cpu = _pod("cpu")
    bad_cpu["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    note(server.request("POST", PODS, bad_cpu), message=False)
    note(
        server.request("POST", PODS, _pod("lbl") | {"metadata": {"name": "lbl", "labels": {"a": "-x-"}}}),
        message=False,
    )
    note(server.request("POST", PODS, [1, 2]), message=False)
    note(server.request("GET", f"{PODS}?labelSelector=a%3D%3D%3Db"), message=False)
    note(server.request("GET", f"{PODS}?fieldSelector=spec.bogus%3D1"), message=False)
    note(
        server.request(
            "PATCH",
            f"{CM}/cfg",
            [{"op": "remove", "path": "/nope"}],
            content_type="application/json-patch+json",
        ),
        message=False,
    )
    note(server.request("DELETE", "/api/v1/namespaces/default/widgets/x"), message=False)
    for i in range(3):
        server.request("POST", CM, {"metadata": {"name": f"page-{i}"}})
    code, body, _ = server.request("GET", f"{CM}?limit=2")
    out.append((code, None, None, [str(len(body["items"])), str(bool(body["metadata"].get("continue")))]))
    note(server.request("DELETE", f"{CM}/cfg"), message=False)
    note(server.request("DELETE", f"{CM}/cfg"))
    return out


def test_same_answers_as_kube_apiserver(reference, make_cluster):
    ours = make_cluster(nodes=0, schedulers=False, auto_create_namespaces=False)
    theirs = _scenario(reference)
    mine = _scenario(ours)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert a == b, f"request {i}: kubesched {a} != kube-apiserver {b}"


def _apply_scenario(server) -> list[tuple[int, str | None, str | None, list[dict] | None, dict | None]]:
    """Server-side apply on a ConfigMap by two managers: what each request answered (code, reason,
    message, causes, and the data an answer that is not a Status holds)."""
    out = []

    def apply(body, query: str):
        code, answer, _ = server.request(
            "PATCH", f"{CM}/owned?{query}", json.dumps(body), content_type="application/apply-patch+yaml"
        )
        status = isinstance(answer, dict) and answer.get("kind") == "Status"
        causes = (answer.get("details") or {}).get("causes") if status else None
        out.append(
            (
                code,
                answer.get("reason") if status else None,
                answer.get("message") if status else None,
                sorted(causes, key=lambda c: c.get("field", "")) if causes else None,
                None if status else answer.get("data"),
            )
        )

    def cm(data: dict) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": data}

    apply(cm({"a": "1"}), "")
    apply(cm({"a": "1", "b": "1"}), "fieldManager=alice")
    apply(cm({"a": "2", "c": "2"}), "fieldManager=bob")
    apply(cm({"a": "1", "c": "2"}), "fieldManager=bob")
    apply(cm({"a": "3", "b": "3"}), "fieldManager=bob&force=true")
    apply(cm({"a": "1"}), "fieldManager=alice")
    apply(cm({"c": "2"}), "fieldManager=bob")
    code, answer, _ = server.request(
        "PATCH", f"{CM}/owned?force=true", {"data": {"d": "4"}}, content_type="application/merge-patch+json"
    )
    out.append((code, answer.get("reason"), answer.get("message"), None, None))
    return out


def test_server_side_apply_answers_as_kube_apiserver(reference, make_cluster):
    """Conflicts, shared ownership, force, and fields an applier stops applying, side by side."""
    ours = make_cluster(nodes=0, schedulers=False)
    assert _apply_scenario(ours) == _apply_scenario(reference)


def _list_apply_scenario(server) -> list[tuple[int, list | None, list | None, dict]]:
    """Two managers apply a Deployment's container ports (a map list keyed by port and protocol)
    and its finalizers (a set): what each answer holds and what each manager owns there."""
    out = []
    path = "/apis/apps/v1/namespaces/default/deployments/ports"

    def apply(ports: list[dict], finalizers: list[str], manager: str) -> None:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "ports", "finalizers": finalizers},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "ports"}},
                "template": {
                    "metadata": {"labels": {"app": "ports"}},
                    "spec": {"containers": [{"name": "c", "image": "x", "ports": ports}]},
                },
            },
        }
        code, answer, _ = server.request(
            "PATCH",
            f"{path}?fieldManager={manager}",
            json.dumps(body),
            content_type="application/apply-patch+yaml",
        )
        if answer.get("kind") == "Status":
            out.append((code, None, None, {"status": answer.get("reason")}))
            return
        owned = {
            e["manager"]: (
                e["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"],
                e["fieldsV1"].get("f:metadata", {}).get("f:finalizers"),
            )
            for e in answer["metadata"]["managedFields"]
            if e["operation"] == "Apply"
        }
        ports_now = answer["spec"]["template"]["spec"]["containers"][0].get("ports")
        out.append((code, ports_now, answer["metadata"].get("finalizers"), owned))

    apply([{"containerPort": 80}], ["example.com/a"], "alice")
    apply([{"containerPort": 80, "protocol": "UDP"}], ["example.com/b"], "bob")
    apply([{"containerPort": 80, "name": "web"}], ["example.com/a"], "alice")
    apply([], [], "bob")
    server.request(
        "PATCH", path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
    )
    server.request("DELETE", path)
    return out


def test_server_side_apply_merges_lists_as_kube_apiserver(reference, make_cluster):
    ours = make_cluster(nodes=0, schedulers=False)
    assert _list_apply_scenario(ours) == _list_apply_scenario(reference)


RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _kinds_scenario(server) -> list:
    """ReplicationControllers, RBAC objects and APIServices: defaults, refusals and conflicts."""
    out: list = []

    def record(result, *fields: str) -> None:
        code, body, _ = result
        if isinstance(body, dict) and body.get("kind") == "Status":
            causes = sorted(
                (c.get("field"), c.get("message")) for c in (body.get("details") or {}).get("causes") or []
            )
            out.append((code, body.get("reason"), body.get("message") if not causes else None, causes))
            return
        picked = {}
        for field in fields:
            value = body
            for step in field.split("."):
                value = value.get(step) if isinstance(value, dict) else None
            picked[field] = value
        out.append((code, picked))

    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "frontend"},
        "spec": {
            "replicas": 0,
            "template": {
                "metadata": {"labels": {"name": "frontend"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }
    path = "/api/v1/namespaces/default/replicationcontrollers"
    record(server.request("POST", path, rc), "spec.selector", "metadata.labels", "status")
    record(server.request("POST", path, rc))
    bad = {**rc, "metadata": {"name": "other"}, "spec": {**rc["spec"], "selector": {"name": "else"}}}
    record(server.request("POST", path, bad))
    record(server.request("GET", f"{path}/frontend/scale"), "spec.replicas", "status.selector")
    server.request("DELETE", f"{path}/frontend")

    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    roles = f"{RBAC}/namespaces/default/roles"
    record(server.request("POST", roles, role), "rules")
    record(
        server.request(
            "POST", roles, {**role, "metadata": {"name": "r2"}, "rules": [{"resources": ["pods"]}]}
        )
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read-pods"},
        "subjects": [{"kind": "User", "name": "jane"}],
        "roleRef": {"kind": "Role", "name": "pod-reader"},
    }
    bindings = f"{RBAC}/namespaces/default/rolebindings"
    record(server.request("POST", bindings, binding), "roleRef", "subjects")
    record(
        server.request(
            "PATCH",
            f"{bindings}/read-pods",
            {"roleRef": {"name": "other"}},
            content_type="application/merge-patch+json",
        )
    )
    record(
        server.request(
            "POST", bindings, {**binding, "metadata": {"name": "b2"}, "roleRef": {"kind": "Pod", "name": "x"}}
        )
    )
    server.request("DELETE", f"{bindings}/read-pods")
    server.request("DELETE", f"{roles}/pod-reader")

    api_service = WARDLE_API_SERVICE
    services = "/apis/apiregistration.k8s.io/v1/apiservices"
    record(server.request("POST", services, api_service), "spec.service")
    record(server.request("POST", services, api_service))
    record(server.request("POST", services, {**api_service, "metadata": {"name": "v1.wrong.k8s.io"}}))
    for _ in range(50):
        got = server.request("GET", f"{services}/v1alpha1.wardle.k8s.io")[1]
        conditions = (got.get("status") or {}).get("conditions") or []
        if conditions:
            break
        time.sleep(0.2)
    out.append([(c["type"], c["status"], c["reason"], c["message"]) for c in conditions])
    server.request("DELETE", f"{services}/v1alpha1.wardle.k8s.io")
    return out


def test_replication_controllers_rbac_and_api_services_as_kube_apiserver(reference, make_cluster):
    ours = make_cluster(nodes=0, schedulers=False)
    theirs = _kinds_scenario(reference)
    mine = _kinds_scenario(ours)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        assert a == b, f"answer {i}: kubesched {a} != kube-apiserver {b}"
