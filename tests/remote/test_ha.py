"""Two ``kubesched run`` replicas against one API server: only the leader binds; killed mid-burst
(``kill -9``), the standby takes over within the lease duration; no pod is bound twice or lost.

The replicas are real processes; the API server is ``kubesched serve`` in the test process with its
own schedulers off, and the test follows every pod change through the store's own watch.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.remote.conftest import Cluster, pod

from kubesched.store.base import EventType

PODS = "/api/v1/namespaces/default/pods"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched"
LEASE_SECONDS = 2.0
STARTED = "scheduling pods of"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    def __init__(self, cluster: Cluster, log: Path) -> None:
        self.port = _free_port()
        self.log = log
        self.err = log.open("w")
        cmd = [
            sys.executable,
            "-m",
            "kubesched.cli",
            "-v",
            "run",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--leader-elect-lease-duration",
            f"{LEASE_SECONDS:g}s",
            "--leader-elect-renew-deadline",
            "1500ms",
            "--leader-elect-retry-period",
            "250ms",
            "--kube-api-qps",
            "1000",
            "--kube-api-burst",
            "1000",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(self.port),
            # The endpoint reviews tokens and access through serve, which knows its admin's token.
            "--authentication-kubeconfig",
            str(cluster.kubeconfig),
            "--authorization-kubeconfig",
            str(cluster.kubeconfig),
        ]
        self.token = cluster.token
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.err, env=dict(os.environ))

    def text(self) -> str:
        return self.log.read_text()

    @property
    def leading(self) -> bool:
        return STARTED in self.text()

    def get(self, path: str) -> tuple[int, str]:
        """(status, body); (0, "") while the replica does not listen yet."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the replica's certificate is self-signed
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5, context=ctx)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        except ConnectionRefusedError:
            return 0, ""
        finally:
            conn.close()

    def attempts(self) -> float:
        _, body = self.get("/metrics")
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in body.splitlines()
            if line.startswith("scheduler_schedule_attempts_total{")
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self.err.close()


def _wait(cond: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return bool(cond())


def test_only_the_leader_binds_and_the_standby_takes_over_when_it_is_killed(
    make_cluster: Any, tmp_path: Path
) -> None:
    cluster: Cluster = make_cluster(nodes=20)
    watch = cluster.store.watch(frozenset({"Pod"}))
    replicas = [Replica(cluster, tmp_path / f"replica-{i}.log") for i in range(2)]
    try:
        assert _wait(lambda: any(r.leading for r in replicas), 60), [r.text() for r in replicas]
        leader = next(r for r in replicas if r.leading)
        standby = next(r for r in replicas if r is not leader)
        assert _wait(lambda: standby.get("/readyz")[0] == 200, 30), standby.text()

        first = 60
        for i in range(first):
            code, body, _ = cluster.request("POST", PODS, pod(f"a-{i}"))
            assert code == 201, body
        assert _wait(lambda: _bound(cluster) == first, 60)
        # Only the leader took pods: the standby made no scheduling attempt.
        assert leader.attempts() >= first
        assert standby.attempts() == 0
        assert not standby.leading

        # A burst, and the leader killed in the middle of it.
        errors: list[BaseException] = []

        def burst() -> None:
            try:
                for i in range(240):
                    code, body, _ = cluster.request("POST", PODS, pod(f"b-{i}"))
                    assert code == 201, body
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=burst)
        writer.start()
        assert _wait(lambda: _bound(cluster) >= first + 40, 60)
        os.kill(leader.proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        leader.proc.wait(10)
        assert _wait(lambda: standby.leading, 3 * LEASE_SECONDS + 5), standby.text()
        takeover = time.monotonic() - killed
        writer.join(60)
        assert not errors, errors
        total = first + 240
        assert _wait(lambda: _bound(cluster) == total, 90), (_bound(cluster), standby.text()[-3000:])
        # The lease is observed from the standby's own clock: it waits a full lease after the last
        # change it saw, then one retry period at most.
        assert takeover < LEASE_SECONDS + 2.0, takeover
        code, body, _ = cluster.request("GET", LEASE)
        assert code == 200
        assert body["spec"]["holderIdentity"].startswith(socket.gethostname())
        assert body["spec"]["leaseTransitions"] >= 1
    finally:
        for r in replicas:
            r.stop()

    # Every pod bound exactly once, and never moved.
    binds: Counter[str] = Counter()
    for event in watch.drain():
        if event.type != EventType.MODIFIED or event.old is None:
            continue
        old_node = (event.old.get("spec") or {}).get("nodeName")
        new_node = (event.obj.get("spec") or {}).get("nodeName")
        assert not old_node or old_node == new_node
        if new_node and not old_node:
            binds[event.obj["metadata"]["uid"]] += 1
    assert len(binds) == first + 240
    assert set(binds.values()) == {1}
    for r in replicas:
        assert "Traceback" not in r.text(), r.text()[-3000:]


def test_sigterm_releases_the_lease_so_the_standby_leads_at_once(make_cluster: Any, tmp_path: Path) -> None:
    cluster: Cluster = make_cluster(nodes=3)
    replicas = [Replica(cluster, tmp_path / f"replica-{i}.log") for i in range(2)]
    try:
        assert _wait(lambda: any(r.leading for r in replicas), 60), [r.text() for r in replicas]
        leader = next(r for r in replicas if r.leading)
        standby = next(r for r in replicas if r is not leader)
        time.sleep(0.5)
        leader.proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        assert leader.proc.wait(30) == 0, leader.text()
        assert _wait(lambda: standby.leading, 10), standby.text()
        # Released: no wait for the lease to run out.
        assert time.monotonic() - stopped < LEASE_SECONDS, leader.text()
        code, body, _ = cluster.request("POST", PODS, pod("after"))
        assert code == 201, body
        assert _wait(lambda: _bound(cluster) == 1, 30)
    finally:
        for r in replicas:
            r.stop()


def _bound(cluster: Cluster) -> int:
    return sum(1 for p in cluster.store.list("Pod") if p["spec"].get("nodeName"))
