"""``kubesched serve`` at start: bad flags, files and start-up errors refused in one line before
anything is written; manifests created as ``kubectl apply`` creates them; an absolute KUBECONFIG."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.apiserver.manifests import LAST_APPLIED
from kubesched.cli import EXIT_BAD_INPUT, main

KUBECTL = shutil.which("kubectl")
SRC = Path(__file__).resolve().parents[2] / "src"


def test_bad_flags_and_files_exit_2(tmp_path, capsys):
    assert main(["serve", "--nodes", "-1", "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    bad = tmp_path / "ksc.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n"
    )
    assert main(["serve", "--config", str(bad), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    assert (
        main(["serve", str(tmp_path / "missing.yaml"), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    )
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "d" / "cluster.db").exists()


def test_a_second_server_on_a_data_dir_in_use_is_refused_in_one_line(tmp_path, capsys):
    from kubesched.cli import EXIT_RUN_FAILED
    from kubesched.store.sqlite import SqliteStore

    data = tmp_path / "d"
    data.mkdir()
    running = SqliteStore(data / "cluster.db")  # what a serve running on the directory holds
    try:
        running.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held"}})
        code = main(["serve", "--nodes", "1", "--data-dir", str(data), "--port", "0"])
    finally:
        running.close()
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED
    assert "in use by another process" in err and str(data) in err
    assert "Traceback" not in err
    # The first server's data is untouched and opens again once it has stopped.
    reopened = SqliteStore(data / "cluster.db")
    try:
        assert reopened.get("Namespace", None, "held") is not None
    finally:
        reopened.close()


def test_a_port_in_use_is_said_in_one_line_before_anything_is_written(tmp_path, capsys):
    from kubesched.cli import EXIT_RUN_FAILED

    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        code = main(["serve", "--nodes", "1", "--port", str(port), "--data-dir", str(tmp_path / "d")])
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED
    assert err == (
        f"error: --port {port}: 127.0.0.1:{port} is already in use (another kubesched serve or another "
        "server listens there; --port 0 picks a free port)\n"
    )
    # No database, certificates or token: not even the data dir.
    assert not (tmp_path / "d").exists()


def test_a_data_dir_that_cannot_be_made_is_said_in_one_line(tmp_path, capsys):
    from kubesched.cli import EXIT_RUN_FAILED

    (tmp_path / "file").write_text("")
    code = main(["serve", "--port", "0", "--data-dir", str(tmp_path / "file" / "d")])
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED and err.startswith(f"error: --data-dir {tmp_path / 'file' / 'd'}: ")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


MANIFESTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
---
apiVersion: v1
kind: Pod
metadata: {name: ranked}
spec: {priorityClassName: missing, containers: [{name: c, image: nginx}]}
"""


def _serve(tmp_path, *args):
    """``kubesched serve`` in a process of its own, run from ``tmp_path``: the process, the lines it
    printed at start and its stderr file."""
    stderr = tmp_path / "stderr"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "serve", "--port", "0", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=stderr.open("w"),
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    return proc, lines, stderr


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_manifests_at_start_are_created_as_kubectl_apply_creates_them(tmp_path):
    (tmp_path / "app.yaml").write_text(MANIFESTS)
    proc, lines, stderr = _serve(tmp_path, "--nodes", "2", "--data-dir", "rel", "app.yaml")
    try:
        assert lines[0].startswith("kubesched serving at https://127.0.0.1:"), lines
        # The path to export is absolute even when the data dir was given relative.
        kubeconfig = lines[1].strip().removeprefix("export KUBECONFIG=")
        assert kubeconfig == str(tmp_path / "rel" / "kubeconfig")
        env = {**os.environ, "KUBECONFIG": kubeconfig}

        def kubectl(*args):
            return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=30)

        deployment = json.loads(kubectl("get", "deployment", "web", "-n", "shop", "-o", "json").stdout)
        applied = json.loads(deployment["metadata"]["annotations"][LAST_APPLIED])
        assert applied["metadata"] == {"annotations": {}, "name": "web", "namespace": "shop"}
        secret = json.loads(kubectl("get", "secret", "creds", "-o", "json").stdout)
        assert secret["data"] == {"password": "czNjcmV0"} and secret["type"] == "Opaque"
        assert kubectl("get", "job", "once").returncode == 0
        assert kubectl("get", "pod", "ranked").returncode == 1  # admission refused it
        # Applying the same manifest finds nothing to change in what serve created.
        out = kubectl("apply", "-f", str(tmp_path / "app.yaml")).stdout
        assert "deployment.apps/web unchanged" in out and "job.batch/once unchanged" in out
    finally:
        _stop(proc)
    warnings = stderr.read_text()
    assert (
        'skipping KubeSchedulerConfiguration <no name>: no matches for kind "KubeSchedulerConfiguration"'
        in (warnings)
    )
    assert 'Pod default/ranked: Error from server (Forbidden): pods "ranked" is forbidden' in warnings


def test_a_manifest_the_api_would_refuse_stops_serve_before_anything_is_written(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: 'not base64!'}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: Bad_Name}\nspec: {}\n"
    )
    assert main(["serve", str(bad), "--port", "0", "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: document 1: Secret s: ")
    assert "illegal base64 data at input byte 3" in err
    assert not (tmp_path / "d").exists()
