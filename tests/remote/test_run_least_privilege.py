"""``kubesched run`` against kube-apiserver v1.20.2 with nothing but the ServiceAccount and roles of
``deploy/rbac.yaml``: leader election, bindings, events, PodGroups and Queue status all go through,
and no request is refused."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from tests.remote.conftest import pod

from kubesched.cli import EXIT_OK
from kubesched.remote.client import ApiClient
from kubesched.remote.config import load_client_config
from kubesched.remote.loop import LoopThread
from kubesched.store.base import AlreadyExists, NotFound

from .refcp import RefCluster, needs_refcp, refcp, volcano_crd

__all__ = ["refcp"]

ROOT = Path(__file__).resolve().parents[2]
VOLCANO = "scheduling.volcano.sh/v1beta1"
PODS = "/api/v1/namespaces/default/pods"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched"
WAIT = 60.0

#: Where each kind of deploy/rbac.yaml is created.
PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRole": f"{RBAC}/clusterroles",
    "ClusterRoleBinding": f"{RBAC}/clusterrolebindings",
    "Role": f"{RBAC}/namespaces/{{ns}}/roles",
    "RoleBinding": f"{RBAC}/namespaces/{{ns}}/rolebindings",
}


def _until(check: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


@needs_refcp
def test_run_with_the_deployed_service_account(
    refcp: RefCluster, connect: Any, loop_thread: LoopThread, tmp_path: Path
) -> None:
    admin: ApiClient = connect(load_client_config(str(refcp.kubeconfig)))

    def call(method: str, path: str, **kw: Any) -> Any:
        return loop_thread.run(admin.request(method, path, **kw))

    for doc in yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()):
        ns = doc["metadata"].get("namespace", "")
        with contextlib.suppress(AlreadyExists):
            call("POST", PATHS[doc["kind"]].format(ns=ns), body=doc)
    for crd in (
        volcano_crd("podgroups", "PodGroup", "Namespaced"),
        volcano_crd("queues", "Queue", "Cluster"),
    ):
        with contextlib.suppress(AlreadyExists):
            call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)

    def served() -> bool:
        try:
            call("GET", f"/apis/{VOLCANO}/queues")
            call("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups")
        except NotFound:
            return False
        return True

    assert _until(served)
    cap = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    for name in ("lp-0", "lp-1"):
        meta = {"name": name, "labels": {"kubernetes.io/hostname": name}}
        with contextlib.suppress(AlreadyExists):
            call(
                "POST",
                "/api/v1/nodes",
                body={
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": meta,
                    "status": {"capacity": cap, "allocatable": cap},
                },
            )
    with contextlib.suppress(AlreadyExists):
        call(
            "POST",
            f"/apis/{VOLCANO}/queues",
            body={
                "apiVersion": VOLCANO,
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1},
            },
        )

    # The ServiceAccount's credentials, as `kubectl create token kubesched` asks for them.
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    token = call("POST", "/api/v1/namespaces/kube-system/serviceaccounts/kubesched/token", body=request)[
        "status"
    ]["token"]
    kubeconfig = tmp_path / "kubesched.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "ref",
                        "cluster": {
                            "server": refcp.url,
                            "certificate-authority": str(refcp.root / "pki" / "ca.crt"),
                        },
                    }
                ],
                "users": [{"name": "kubesched", "user": {"token": token}}],
                "contexts": [{"name": "kubesched", "context": {"cluster": "ref", "user": "kubesched"}}],
                "current-context": "kubesched",
            }
        )
    )
    (tmp_path / "ksc.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - schedulerName: kubesched\n"
    )
    cmd = [
        sys.executable, "-m", "kubesched.cli", "run",
        "--kubeconfig", str(kubeconfig), "--config", str(tmp_path / "ksc.yaml"),
        "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
        "--leader-elect-retry-period", "500ms", "--secure-port", "0",
    ]  # fmt: skip
    log = tmp_path / "run.log"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ))
    try:
        web = pod("lp-web")
        web["spec"]["schedulerName"] = "kubesched"
        call("POST", PODS, body=web)
        big = pod("lp-too-big", cpu="64")
        big["spec"]["schedulerName"] = "kubesched"
        call("POST", PODS, body=big)
        batch = pod("lp-batch")  # for the batch scheduler, in no PodGroup: kubesched creates one
        batch["spec"]["schedulerName"] = "volcano"
        call("POST", PODS, body=batch)
        group = {
            "apiVersion": VOLCANO,
            "kind": "PodGroup",
            "metadata": {"name": "lp-gang", "namespace": "default"},
            "spec": {"minMember": 2, "queue": "default"},
        }
        call("POST", f"/apis/{VOLCANO}/namespaces/default/podgroups", body=group)
        for i in range(2):
            member = pod(f"lp-gang-{i}")
            member["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "lp-gang"}
            member["spec"]["schedulerName"] = "volcano"
            call("POST", PODS, body=member)

        def unbound() -> list[str]:
            names = ("lp-web", "lp-batch", "lp-gang-0", "lp-gang-1")
            return [n for n in names if not call("GET", f"{PODS}/{n}")["spec"].get("nodeName")]

        assert _until(lambda: not unbound()), f"{unbound()} not bound: {log.read_text()}"

        def unschedulable() -> bool:
            conditions = call("GET", f"{PODS}/lp-too-big")["status"].get("conditions") or []
            return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)

        assert _until(unschedulable)
        assert _until(
            lambda: (
                call("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups/lp-gang")
                .get("status", {})
                .get("phase")
                == "Running"
            )
        )
        assert _until(
            lambda: call("GET", f"/apis/{VOLCANO}/queues/default").get("status", {}).get("allocated")
        )

        def reasons() -> set[str]:
            return {e["reason"] for e in call("GET", "/api/v1/namespaces/default/events")["items"]}

        assert _until(lambda: {"Scheduled", "FailedScheduling"} <= reasons())
        assert call("GET", LEASE)["spec"]["holderIdentity"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert proc.returncode == EXIT_OK, text
    for refused in ("Forbidden", "403", "Traceback"):
        assert refused not in text, text
    assert not call("GET", LEASE)["spec"].get("holderIdentity")  # released on SIGTERM
