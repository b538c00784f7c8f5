"""Side by side with kube-apiserver and kube-controller-manager v1.20.2 (``../shared/refcp``): the
workloads' defaults and the Deployment controller's revision bookkeeping through kubectl 1.20's
``rollout undo`` and ``history`` come out the same. refcp runs no kubelet, so its pods never run:
what is compared is what does not wait for them. Skipped unless refcp is built."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.kubectls import _OLD
from tests.remote.refcp import RefCluster, needs_refcp

pytestmark = [needs_refcp, pytest.mark.skipif(not _OLD.exists(), reason="kubectl 1.20 is not built")]

NS = "default"
REVISION = "deployment.kubernetes.io/revision"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    ref = RefCluster(tmp_path_factory.mktemp("refcp-cm"), args=("--controller-manager",))
    try:
        yield ref
    finally:
        ref.stop()


def _kubectl(kubeconfig: Path) -> Callable[..., str]:
    def run(*args: str) -> str:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        proc = subprocess.run([str(_OLD), *args], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    return run


def _wait(fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(0.2)


def _manifests() -> list[dict[str, Any]]:
    labels = {"app": "web"}
    container = {"name": "c", "image": "a"}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"kubernetes.io/change-cause": "first"}},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once"},
            "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
        },
    ]


def _scenario(kubectl: Callable[..., str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for manifest in _manifests():
        kubectl_apply(kubectl, manifest)

    def get(kind: str, name: str = "") -> Any:
        return json.loads(kubectl("get", kind, *([name] if name else []), "-o", "json"))

    deploy = _wait(
        lambda: (d := get("deployment", "web")) and REVISION in d["metadata"].get("annotations", {}) and d
    )
    spec = deploy["spec"]
    out["deployment defaults"] = (
        spec["strategy"],
        spec["revisionHistoryLimit"],
        spec["progressDeadlineSeconds"],
    )
    sts = get("statefulset", "db")["spec"]
    out["statefulset defaults"] = (
        sts["updateStrategy"],
        sts["podManagementPolicy"],
        sts["revisionHistoryLimit"],
    )
    job = get("job", "once")["spec"]
    out["job defaults"] = (job["backoffLimit"], job["completions"], job["parallelism"])
    revision = _wait(lambda: get("controllerrevisions")["items"])
    out["statefulset revision"] = [(r["revision"], r["metadata"]["name"].startswith("db-")) for r in revision]

    kubectl("set", "image", "deployment/web", "c=b")
    kubectl("annotate", "deployment/web", "kubernetes.io/change-cause=second", "--overwrite")
    _wait(lambda: len(get("replicasets")["items"]) == 2)
    kubectl("rollout", "undo", "deployment/web")

    def by_image() -> dict[str, Any]:
        rows = {}
        for rs in get("replicasets")["items"]:
            image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
            annotations = rs["metadata"]["annotations"]
            rows[image] = (
                annotations.get(REVISION),
                annotations.get("deployment.kubernetes.io/revision-history"),
                annotations.get("kubernetes.io/change-cause"),
                annotations.get("deployment.kubernetes.io/desired-replicas"),
                annotations.get("deployment.kubernetes.io/max-replicas"),
                sorted(rs["spec"]["selector"]["matchLabels"]),
                rs["metadata"]["name"] == f"web-{rs['metadata']['labels']['pod-template-hash']}",
            )
        return rows

    out["replicasets after undo"] = _wait(lambda: (rows := by_image()).get("a", ("",))[0] == "3" and rows)
    deploy = get("deployment", "web")
    out["deployment after undo"] = (
        deploy["metadata"]["annotations"][REVISION],
        deploy["metadata"]["annotations"]["kubernetes.io/change-cause"],
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
    )
    history = kubectl("rollout", "history", "deployment/web")
    out["history"] = [line.split() for line in history.splitlines()[1:] if line.strip()]
    return out


def kubectl_apply(kubectl: Callable[..., str], manifest: dict[str, Any]) -> None:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"kubesched-refcp-{os.getpid()}-{manifest['kind']}.json"
    path.write_text(json.dumps(manifest))
    try:
        kubectl("create", "-f", str(path))
    finally:
        path.unlink()


def test_workload_bookkeeping_as_kube_controller_manager(reference, make_cluster):
    ours = make_cluster(nodes=2)
    theirs, mine = _scenario(_kubectl(reference.kubeconfig)), _scenario(_kubectl(ours.kubeconfig))
    for key in theirs:
        assert mine[key] == theirs[key], (
            f"{key}: kube-controller-manager {theirs[key]!r}, kubesched {mine[key]!r}"
        )
