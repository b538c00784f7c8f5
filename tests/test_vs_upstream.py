"""bench/vs_upstream.py, the side-by-side benchmark against the real control plane, at a toy size:
both sides of each mode run on a fresh plane and the report compares them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFCP = ROOT.parent / "shared" / "refcp"
REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
pytestmark = pytest.mark.skipif(
    not (REF_DIR / "bin" / "kube-apiserver").exists() or not (REFCP / "start.sh").exists(),
    reason="refcp (a real kube-apiserver) is not built here",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("mode", "sides"),
    [
        ("scheduler", ("kube-scheduler", "kubesched run")),
        ("serve", ("kube-apiserver + etcd + kube-scheduler", "kubesched serve")),
    ],
)
def test_both_sides_measured_and_compared(mode: str, sides: tuple[str, str]) -> None:
    args = [sys.executable, "bench/vs_upstream.py", mode, "--rounds", "1", "--nodes", "20", "--pods", "60"]
    args += ["--port", str(_free_port())]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows[1:]] == list(sides)
    for r in rows[1:]:
        rate = float(r.split(" | ")[1])
        assert rate > 0
        # Every watched process used some CPU for the pods.
        assert all(float(ms) > 0 for ms in re.findall(r" (\d+\.\d+)", r.split(" | ")[3]))
    assert re.search(rf"ratio {re.escape(sides[1])} / {re.escape(sides[0])}: \d+\.\d+x", done.stdout)


def test_costs_times_each_write_of_a_scheduled_pod() -> None:
    args = [sys.executable, "bench/vs_upstream.py", "costs", "--rounds", "1", "--nodes", "5", "--pods", "40"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    writes = [r.split(" | ")[0].lstrip("| ") for r in rows[1:]]
    assert writes == ["create pod", "POST pods/binding", "POST events (events.k8s.io/v1)"]
    for r in rows[1:]:
        rate, apiserver, _etcd = (float(x) for x in r.strip(" |").split(" | ")[1:])
        assert rate > 0
        assert apiserver > 0  # the API server spent CPU on every kind of write
