"""``kubesched run`` on the command line: flags, errors, and a real process stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.remote.conftest import Cluster, pod

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, main

PODS = "/api/v1/namespaces/default/pods"


def _bound(cluster: Cluster) -> int:
    return sum(1 for p in cluster.store.list("Pod") if p["spec"].get("nodeName"))


def test_run_schedules_until_sigterm_and_exits_0(cluster: Cluster) -> None:
    for i in range(10):
        code, body, _ = cluster.request("POST", PODS, pod(f"before-{i}"))
        assert code == 201, body
    cmd = [
        sys.executable,
        "-m",
        "kubesched.cli",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--leader-elect=false",
        "--secure-port",
        "0",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        deadline = time.monotonic() + 60
        while _bound(cluster) < 10 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        # Pods created while it runs are scheduled too.
        for i in range(5):
            code, body, _ = cluster.request("POST", PODS, pod(f"during-{i}"))
            assert code == 201, body
        while _bound(cluster) < 15 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == EXIT_OK, err
    assert "Traceback" not in err
    assert _bound(cluster) == 15


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--kube-api-qps", "-1"], "--kube-api-qps"),
        (["--kube-api-qps", "many"], "--kube-api-qps"),
        (["--kube-api-burst", "0"], "--kube-api-burst"),
        (["--secure-port", "70000"], "--secure-port"),
        (["--leader-elect=maybe"], "--leader-elect"),
        (["--leader-elect-lease-duration", "soon"], "--leader-elect-lease-duration"),
        (["--leader-elect-lease-duration", "5s"], "--leader-elect-lease-duration"),
        (["--leader-elect-renew-deadline", "2s"], "--leader-elect-renew-deadline"),
        (["--leader-elect-retry-period", "0s"], "--leader-elect-retry-period"),
        (["--leader-elect-resource-namespace", "Kube_System"], "--leader-elect-resource-namespace"),
        (["--bind-address", "localhost:80"], "--bind-address"),
        (["-v", "x"], "-v"),
        (["--batch-scheduler-name", "default-scheduler"], "--batch-scheduler-name"),
        (["--batch-scheduler-name", "Not_A_Name"], "--batch-scheduler-name"),
        (["--no-such-flag"], "--no-such-flag"),
        # kube-scheduler has no insecure port any more, and neither has kubesched.
        (["--port", "10251"], "--port"),
        (["--tls-cert-file", "/etc/hostname"], "--tls-private-key-file"),
        (["--tls-cert-file", "/nonexistent", "--tls-private-key-file", "/nonexistent"], "--tls-cert-file"),
        (["--client-ca-file", "/nonexistent"], "--client-ca-file"),
        (["--authorization-always-allow-paths", "/he*lthz"], "--authorization-always-allow-paths"),
        (["--authentication-token-webhook-cache-ttl", "soon"], "--authentication-token-webhook-cache-ttl"),
        (
            ["--authorization-kubeconfig", "/nonexistent", "--leader-elect=false"],
            "--authorization-kubeconfig",
        ),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    flags: list[str], expected: str, capsys: Any, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"  # never read: the flags are refused first
    try:
        code = main(["run", "--kubeconfig", str(kubeconfig), *flags])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code  # type: ignore[assignment]
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


def test_a_bad_config_file_exits_2(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "ksc.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n"
    )
    assert main(["run", "--config", str(bad), "--leader-elect=false"]) == EXIT_BAD_INPUT
    assert "profiles" in capsys.readouterr().err


def test_a_missing_kubeconfig_exits_2(tmp_path: Path, capsys: Any) -> None:
    missing = tmp_path / "nope"
    assert main(["run", "--kubeconfig", str(missing), "--leader-elect=false"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err


def test_an_unreachable_cluster_exits_1(cluster: Cluster, tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text(cluster.kubeconfig.read_text().replace(f":{cluster.port}", ":1"))
    assert main(["run", "--kubeconfig", str(bad), "--leader-elect=false"]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "127.0.0.1:1" in err


def test_serve_no_schedulers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import kubesched.apiserver.server as server

    seen: list[Any] = []
    monkeypatch.setattr(server, "serve", seen.append)
    assert main(["serve", "--no-schedulers", "--data-dir", str(tmp_path / "d")]) == EXIT_OK
    assert main(["serve", "--data-dir", str(tmp_path / "d")]) == EXIT_OK
    assert [options.schedulers for options in seen] == [False, True]
