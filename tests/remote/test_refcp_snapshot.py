"""``kubesched snapshot`` of a real kube-apiserver (v1.20.2, ../shared/refcp; skipped unless built):
what `simulate` makes of it keeps the running pods where they run and schedules the pending ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import EXIT_OK, main

from .refcp import RefCluster, needs_refcp, refcp

pytestmark = needs_refcp
__all__ = ["refcp"]


def _node(ref: RefCluster, name: str, cpu: str) -> None:
    code, body = ref.request(
        "POST",
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        },
    )
    assert code == 201, body
    body["status"] = {
        "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
    }
    code, body = ref.request("PUT", f"/api/v1/nodes/{name}/status", body)
    assert code == 200, body


def _pod(ref: RefCluster, name: str, cpu: str, **spec: Any) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx",
                    "env": [{"name": "TOKEN", "value": "s3cret"}],
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
            **spec,
        },
    }
    code, body = ref.request("POST", "/api/v1/namespaces/default/pods", obj)
    assert code == 201, body


def test_snapshot_of_kube_apiserver_replays_in_simulate(
    refcp: RefCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _node(refcp, "big", "4")
    _node(refcp, "small", "1")
    _pod(refcp, "running-big", "3", nodeName="big")
    _pod(refcp, "running-small", "500m", nodeName="small")
    _pod(refcp, "pending-fits-small", "500m")
    _pod(refcp, "pending-too-big", "2")
    out = tmp_path / "snap"
    assert main(["snapshot", "--kubeconfig", str(refcp.kubeconfig), "-o", str(out)]) == EXIT_OK
    text = "".join(p.read_text() for p in out.glob("*.yaml"))
    assert "s3cret" not in text
    assert all(d for p in out.glob("*.yaml") for d in yaml.safe_load_all(p.read_text()))
    capsys.readouterr()
    assert main(["simulate", str(out), "-o", "json", "-q"]) == EXIT_OK
    pods = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert pods["running-big"]["node"] == "big" and pods["running-small"]["node"] == "small"
    # 1 CPU left on big, 500m on small: the 500m pod fits either, the 2-CPU pod fits nowhere.
    assert pods["pending-fits-small"]["status"] == "Scheduled"
    assert pods["pending-too-big"]["status"] == "Unschedulable"
    assert "Insufficient cpu" in pods["pending-too-big"]["message"]
