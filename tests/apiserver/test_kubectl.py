"""kubectl against a served cluster, as a user would drive it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kubectl(cluster, *args: str, check: bool = True, timeout: float = 30) -> str:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    proc = subprocess.run(
        [KUBECTL or "kubectl", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout + (proc.stderr if not check else "")


def _until(fn, timeout: float = 15.0):
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(0.1)


def test_apply_examples_get_wide_describe_and_restart(make_cluster, tmp_path):
    cluster = make_cluster(nodes=0, data_dir=tmp_path / "d")
    out = kubectl(cluster, "apply", "-f", str(EXAMPLES / "quickstart"))
    assert "pod/web-1 created" in out and "node/worker-a1 created" in out
    out = kubectl(cluster, "apply", "-f", str(EXAMPLES / "batch" / "queues-and-gangs.yaml"))
    assert "podgroup.scheduling.volcano.sh/train created" in out
    # Applying again changes nothing.
    assert "unchanged" in kubectl(cluster, "apply", "-f", str(EXAMPLES / "quickstart"))

    def placed() -> bool:
        rows = kubectl(cluster, "get", "pods", "-n", "shop", "-o", "wide").splitlines()
        return len(rows) > 1 and all("<none>" not in row.split()[6] for row in rows[1:])

    assert _until(placed), kubectl(cluster, "get", "pods", "-A", "-o", "wide")
    wide = kubectl(cluster, "get", "pods", "-n", "shop", "-o", "wide")
    header = wide.splitlines()[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in header
    web1 = next(r for r in wide.splitlines() if r.startswith("web-1 ")).split()
    assert web1[2] == "Running" and web1[6].startswith(("worker-", "gpu-"))

    # The gang of the batch example is placed by the batch scheduler.
    assert _until(lambda: "Running" in kubectl(cluster, "get", "podgroups", "-n", "ml", "train")), kubectl(
        cluster, "get", "pods,podgroups", "-n", "ml", "-o", "wide"
    )

    # An unschedulable pod says why, in the events kubectl describe shows.
    assert _until(
        lambda: (
            "FailedScheduling" in kubectl(cluster, "describe", "pod", "-n", "analytics", "giant-simulation")
        )
    )
    described = kubectl(cluster, "describe", "pod", "-n", "analytics", "giant-simulation")
    assert "default-scheduler" in described and "nodes are available" in described

    before = kubectl(cluster, "get", "pods", "-A", "-o", "wide")
    cluster.stop()
    again = make_cluster(nodes=0, data_dir=tmp_path / "d")
    after = kubectl(again, "get", "pods", "-A", "-o", "wide")
    strip = lambda text: [r.split()[:3] + r.split()[7:8] for r in text.splitlines()]  # noqa: E731
    assert strip(after) == strip(before)


def test_cordon_label_delete_and_watch(make_cluster):
    cluster = make_cluster(nodes=2)
    assert "cordoned" in kubectl(cluster, "cordon", "node-0")
    nodes = kubectl(cluster, "get", "nodes")
    assert "Ready,SchedulingDisabled" in next(r for r in nodes.splitlines() if r.startswith("node-0"))
    kubectl(cluster, "label", "node", "node-1", "disk=ssd")
    assert "node-1" in kubectl(cluster, "get", "nodes", "-l", "disk=ssd")
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    watcher = subprocess.Popen(
        [KUBECTL or "kubectl", "get", "pods", "-w", "--output-watch-events"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)
        kubectl(cluster, "run", "web", "--image=nginx")
        assert _until(lambda: "Running" in kubectl(cluster, "get", "pod", "web"))
        wide = kubectl(cluster, "get", "pod", "web", "-o", "wide")
        assert "node-1" in wide  # node-0 is cordoned
        assert 'pod "web" deleted' in kubectl(cluster, "delete", "pod", "web")
        assert "NotFound" in kubectl(cluster, "get", "pod", "web", check=False)
        time.sleep(0.5)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    kinds = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    assert kinds[0] == "ADDED" and "MODIFIED" in kinds and kinds[-1] == "DELETED", out
    assert "uncordoned" in kubectl(cluster, "uncordon", "node-0")


def test_deployment_scale_and_garbage_collection(make_cluster):
    cluster = make_cluster(nodes=3)
    kubectl(cluster, "create", "deployment", "web", "--image=nginx", "--replicas=5")

    def count() -> int:
        rows = kubectl(cluster, "get", "pods", "-l", "app=web").splitlines()[1:]
        return len([r for r in rows if "Running" in r])

    assert _until(lambda: count() == 5)
    kubectl(cluster, "scale", "deployment", "web", "--replicas=2")
    assert _until(lambda: count() == 2)
    assert _until(lambda: "2/2" in kubectl(cluster, "get", "deployment", "web"))
    # Drain evicts through the eviction subresource; the ReplicaSet makes replacements elsewhere.
    drained = kubectl(cluster, "drain", "node-0", "--ignore-daemonsets", timeout=60)
    assert "node/node-0 drained" in drained or "node/node-0 evicted" in drained  # kubectl 1.32 or 1.20

    def off_node_0() -> bool:
        rows = kubectl(cluster, "get", "pods", "-l", "app=web", "-o", "wide").splitlines()[1:]
        return len(rows) == 2 and all(r.split()[6] != "node-0" and "Running" in r for r in rows)

    assert _until(off_node_0)
    kubectl(cluster, "delete", "deployment", "web")
    assert _until(lambda: "No resources" in kubectl(cluster, "get", "pods,rs", check=False))


def test_bad_manifest_is_refused_cleanly(make_cluster, tmp_path):
    cluster = make_cluster(nodes=1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n"
    )
    out = kubectl(cluster, "apply", "-f", str(bad), check=False)
    assert "BadRequest" in out or "quantities must match" in out
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
        "spec: {containers: [{name: c, image: x}], tolerations: [{key: a, operator: Sideways}]}\n"
    )
    out = kubectl(cluster, "apply", "-f", str(bad), check=False)
    assert "is invalid" in out and "spec.tolerations[0].operator" in out
    assert "No resources" in kubectl(cluster, "get", "pods", check=False)
