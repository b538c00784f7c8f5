"""Load: concurrent clients, every pod bound exactly once, every watcher sees every change in order;
a killed server keeps every create it acknowledged."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from kubesched.apiserver.loadgen import run_load
from kubesched.store.base import EventType

SRC = Path(__file__).resolve().parents[2] / "src"


def test_eight_clients_create_2000_pods_each_bound_once_watchers_in_order(make_cluster):
    cluster = make_cluster(nodes=100)
    start_rv = cluster.store.resource_version
    result = asyncio.run(
        run_load(
            f"https://127.0.0.1:{cluster.port}",
            cluster.token,
            str(cluster.served.identity.ca_cert),
            pods=2000,
            clients=8,
            watchers=3,
            timeout=120,
        )
    )
    assert result.failed == 0 and len(result.created) == 2000
    # What the store did, in order: the reference every watcher must match.
    reference = [
        (
            e.type.value,
            e.obj["metadata"]["name"],
            int(e.obj["metadata"]["resourceVersion"]),
            (e.obj.get("spec") or {}).get("nodeName") or "",
        )
        for e in cluster.store.changes_since(start_rv, limit=10**7)
        if e.kind == "Pod" and e.type != EventType.DELETED
    ]
    for log in result.watches:
        assert log.events == reference[: len(log.events)]
        rvs = [rv for _, _, rv, _ in log.events]
        assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)
        assert Counter(t for t, _, _, _ in log.events)["ADDED"] == 2000
    nodes: dict[str, set[str]] = {}
    for _, name, _, node in reference:
        if node:
            nodes.setdefault(name, set()).add(node)
    assert len(nodes) == 2000 and all(len(v) == 1 for v in nodes.values())
    # Events are written off the scheduling path, in batches (up to 0.2 s after the bind): each pod
    # gets its one Scheduled event soon after the watchers saw it bound.
    deadline = time.monotonic() + 10
    while True:
        scheduled = Counter(
            e["regarding"]["name"] for e in cluster.store.list("Event") if e.get("reason") == "Scheduled"
        )
        if set(scheduled) == set(result.created) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert set(scheduled) == set(result.created) and set(scheduled.values()) == {1}


def _start_server(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesched.cli",
            "serve",
            "--nodes",
            "20",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"https://127\.0\.0\.1:(\d+)", line)
    assert match, line
    return proc, int(match.group(1))


def test_kill_9_during_a_burst_loses_no_acknowledged_create(tmp_path):
    data = tmp_path / "data"
    proc, port = _start_server(data)
    token = (data / "token").read_text().strip()
    ctx = ssl.create_default_context(cafile=str(data / "ca.crt"))
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(k: int) -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        i = 0
        while not stop.is_set() and i < 5000:
            name = f"burst-{k}-{i}"
            body = json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                }
            )
            try:
                conn.request(
                    "POST",
                    "/api/v1/namespaces/default/pods",
                    body=body,
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                )
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                return
            if resp.status == 201:
                with lock:
                    acknowledged.append(name)
            i += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    deadline = time.time() + 20
    while len(acknowledged) < 300 and time.time() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    stop.set()
    for t in threads:
        t.join(15)
    assert len(acknowledged) >= 300

    proc, port = _start_server(data)
    try:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        conn.request("GET", "/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {token}"})
        listed = json.loads(conn.getresponse().read())
        present = {p["metadata"]["name"] for p in listed["items"]}
        assert set(acknowledged) <= present
        # ResourceVersions go on increasing after the restart.
        conn.request(
            "POST",
            "/api/v1/namespaces/default/pods",
            body=json.dumps(
                {"metadata": {"name": "after"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
            ),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        created = json.loads(conn.getresponse().read())
        assert int(created["metadata"]["resourceVersion"]) > int(listed["metadata"]["resourceVersion"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
