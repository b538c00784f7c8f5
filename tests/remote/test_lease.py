"""Leases over HTTP: the LeaseAPI adapter against ``kubesched serve`` in this process and, when it is
built, against kube-apiserver v1.20.2 (``../shared/refcp``); then two electors over the wire."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.remote.client import ApiClient
from kubesched.remote.config import load_client_config
from kubesched.remote.lease import Election, RemoteLeaseAPI, lease_path
from kubesched.remote.loop import LoopThread
from kubesched.runtime.leader_election import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
)
from kubesched.store.base import AlreadyExists, Conflict

REFCP = Path(__file__).resolve().parents[3] / "shared" / "refcp"
REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
REFCP_BUILT = (REF_DIR / "bin" / "kube-apiserver").exists() and (REFCP / "start.sh").exists()

# Short durations: the Lease says 2s, the leader renews every 0.25s and gives up after 1.5s.
LEASE, RENEW, RETRY = 2.0, 1.5, 0.25


def lease(name: str, holder: str = "x", namespace: str = "kube-system") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    }


class Candidate:
    """An elector on its own loop thread with its own client: a separate process, as far as the
    API server can tell."""

    def __init__(
        self, kubeconfig: str, identity: str, *, lock: str = "kubesched", release_on_cancel: bool = False
    ) -> None:
        self.loop = LoopThread(name=f"candidate-{identity}")
        self.client = self.loop.run(ApiClient.connect(load_client_config(kubeconfig)))
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        callbacks = LeaderCallbacks(
            on_started_leading=lambda: setattr(self, "started_at", time.monotonic()),
            on_stopped_leading=lambda: setattr(self, "stopped_at", time.monotonic()),
        )
        config = LeaderElectionConfig(
            identity=identity,
            lock_name=lock,
            lock_namespace="kube-system",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            release_on_cancel=release_on_cancel,
            callbacks=callbacks,
        )
        self.elector = LeaderElector(config, RemoteLeaseAPI(self.client))
        self.task: asyncio.Task[None] | None = None

    def start(self) -> Candidate:
        async def start() -> asyncio.Task[None]:
            return asyncio.get_running_loop().create_task(self.elector.run())

        self.task = self.loop.run(start())
        return self

    @property
    def leading(self) -> bool:
        return self.elector.leading

    def kill(self) -> None:
        """Stop the elector where it stands; with ``release_on_cancel`` it first gives the Lease up."""
        task = self.task

        async def cancel() -> None:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

        self.loop.run(cancel(), timeout=30)

    def close(self) -> None:
        self.kill()
        self.loop.run(self.client.close(), timeout=10)
        self.loop.stop()


def wait_for(predicate: Any, limit: float = 20.0) -> float:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)
    return time.monotonic()


@pytest.fixture
def candidates() -> Iterator[Any]:
    made: list[Candidate] = []

    def make(kubeconfig: str, identity: str, **kwargs: Any) -> Candidate:
        c = Candidate(kubeconfig, identity, **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# --- the adapter --------------------------------------------------------------------------------


def check_adapter(api: RemoteLeaseAPI, loop: LoopThread) -> None:
    assert loop.run(api.get("kube-system", "adapter")) is None
    created = loop.run(api.create(lease("adapter")))
    assert created["metadata"]["resourceVersion"]
    with pytest.raises(AlreadyExists):
        loop.run(api.create(lease("adapter")))
    got = loop.run(api.get("kube-system", "adapter"))
    assert got is not None and got["spec"]["holderIdentity"] == "x"
    updated = loop.run(api.update({**got, "spec": {**got["spec"], "holderIdentity": "y"}}))
    assert updated["spec"]["holderIdentity"] == "y"
    # A write from the version read before the last one is refused: optimistic concurrency.
    with pytest.raises(Conflict):
        loop.run(api.update({**got, "spec": {**got["spec"], "holderIdentity": "z"}}))
    stored = loop.run(api.get("kube-system", "adapter"))
    assert stored is not None and stored["spec"]["holderIdentity"] == "y"


def test_lease_path_escapes_names() -> None:
    assert lease_path("kube-system") == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert lease_path("ns", "a/b") == "/apis/coordination.k8s.io/v1/namespaces/ns/leases/a%2Fb"


def test_adapter_against_serve(cluster, loop_thread, connect) -> None:
    check_adapter(RemoteLeaseAPI(connect(cluster)), loop_thread)


# --- two electors over HTTP ---------------------------------------------------------------------


def check_failover(kubeconfig: str, make: Any) -> dict[str, float]:
    """One of two candidates leads; the leader dies without a word; the other leads once the Lease
    has run out as it observed it. Returns what was measured."""
    a = make(kubeconfig, "a", lock="failover").start()
    wait_for(lambda: a.leading)
    b = make(kubeconfig, "b", lock="failover").start()
    time.sleep(3 * LEASE)
    assert a.leading and not b.leading, "the standby took a Lease that was being renewed"
    assert b.elector.get_leader() == "a"
    killed = time.monotonic()
    a.kill()
    taken = wait_for(lambda: b.leading, limit=10 * LEASE)
    # The Lease says int(LEASE) seconds; b counts them from the last change it saw (at most one
    # jittered retry before the kill) and notices at its next try.
    assert taken - killed >= int(LEASE) - RETRY * (1 + 1.2)
    record = LeaderElectionRecord.from_spec(
        b.loop.run(RemoteLeaseAPI(b.client).get("kube-system", "failover"))["spec"]  # type: ignore[index]
    )
    assert record.holder_identity == "b"
    assert record.leader_transitions == 1
    return {"takeover_s": taken - killed}


def check_release(kubeconfig: str, make: Any) -> float:
    a = make(kubeconfig, "a", lock="release", release_on_cancel=True).start()
    wait_for(lambda: a.leading)
    b = make(kubeconfig, "b", lock="release").start()
    time.sleep(LEASE)
    released = time.monotonic()
    a.kill()
    assert a.stopped_at is not None
    taken = wait_for(lambda: b.leading, limit=10 * LEASE)
    return taken - released


def check_lost(kubeconfig: str, make: Any, api_down: Any) -> float:
    """The leader's API calls start failing: it stops leading within the renew deadline (counted
    from its last successful renewal, one retry period earlier at most)."""
    a = make(kubeconfig, "a").start()
    wait_for(lambda: a.leading)
    time.sleep(2 * RETRY)
    failing = time.monotonic()
    api_down(a)
    stopped = wait_for(lambda: a.stopped_at is not None, limit=10 * LEASE)
    return stopped - failing


def fail_requests_of(client: ApiClient) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("connection refused")

    client.request = refuse  # type: ignore[method-assign]


def fail_requests(candidate: Candidate) -> None:
    fail_requests_of(candidate.client)


def test_two_electors_against_serve(make_cluster, candidates) -> None:
    cluster = make_cluster()
    kubeconfig = str(cluster.kubeconfig)
    measured = check_failover(kubeconfig, candidates)
    assert measured["takeover_s"] < 10 * LEASE


def test_release_hands_over_against_serve(make_cluster, candidates) -> None:
    cluster = make_cluster()
    handover = check_release(str(cluster.kubeconfig), candidates)
    # No lease to wait out: b takes over at its next try.
    assert handover < LEASE


def test_a_leader_cut_off_from_the_api_stops_leading(make_cluster, candidates) -> None:
    cluster = make_cluster()
    lost = check_lost(str(cluster.kubeconfig), candidates, fail_requests)
    assert lost < LEASE


# --- kube-apiserver v1.20.2 ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def refcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private control plane (its own REF_DIR over the built binaries, free ports)."""
    if not REFCP_BUILT:
        pytest.skip("refcp (a real kube-apiserver) is not built here")
    ref_dir = tmp_path_factory.mktemp("refcp")
    (ref_dir / "bin").symlink_to(REF_DIR / "bin")
    env = {**os.environ, "REF_DIR": str(ref_dir), "REF_PORTS": "auto"}
    subprocess.run(["bash", str(REFCP / "start.sh")], check=True, env=env, capture_output=True, timeout=180)
    try:
        yield ref_dir
    finally:
        subprocess.run(["bash", str(REFCP / "stop.sh"), "--wipe"], env=env, capture_output=True, timeout=60)


def test_adapter_against_kube_apiserver(refcp, loop_thread, connect) -> None:
    from kubesched.remote.config import ClientConfig

    config: ClientConfig = load_client_config(str(refcp / "kubeconfig"))
    api = RemoteLeaseAPI(connect(config))
    check_adapter(api, loop_thread)
    # kube-apiserver keeps the MicroTime the elector writes, to the microsecond.
    got = loop_thread.run(api.get("kube-system", "adapter"))
    stamped = {**got["spec"], "renewTime": "2030-01-02T03:04:05.123456Z"}
    updated = loop_thread.run(api.update({**got, "spec": stamped}))
    assert updated["spec"]["renewTime"] == "2030-01-02T03:04:05.123456Z"


def test_two_electors_against_kube_apiserver(refcp, candidates) -> None:
    kubeconfig = str(refcp / "kubeconfig")
    measured = check_failover(kubeconfig, candidates)
    assert measured["takeover_s"] < 10 * LEASE
    handover = check_release(kubeconfig, candidates)
    assert handover < LEASE


# --- Election: the elector for a threaded owner -------------------------------------------------


def election_config(
    identity: str, events: list[str], loop: LoopThread, **kwargs: Any
) -> LeaderElectionConfig:
    def stopped() -> None:
        # What stopping the scheduler does: wait for work that needs the loop (a bind in flight).
        loop.run(asyncio.sleep(0.05), timeout=5)
        events.append("stopped")

    return LeaderElectionConfig(
        identity=identity,
        lock_name="election",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        callbacks=LeaderCallbacks(
            on_started_leading=lambda: events.append("started"),
            on_stopped_leading=stopped,
            on_new_leader=lambda who: events.append(f"leader {who}"),
        ),
        **kwargs,
    )


def test_election_callbacks_may_wait_on_the_loop(cluster, loop_thread, connect) -> None:
    client = connect(cluster)
    events: list[str] = []
    election = Election(loop_thread, RemoteLeaseAPI(client), election_config("a", events, loop_thread))
    election.start()
    wait_for(lambda: "started" in events)
    assert election.healthy()
    fail_requests_of(client)
    wait_for(lambda: election.done and "stopped" in events)
    election.stop()
    assert events == ["leader a", "started", "stopped"]


def test_election_stop_releases_the_lease(cluster, loop_thread, connect) -> None:
    events: list[str] = []
    api = RemoteLeaseAPI(connect(cluster))
    election = Election(loop_thread, api, election_config("a", events, loop_thread, release_on_cancel=True))
    election.start()
    wait_for(lambda: "started" in events)
    election.stop()
    assert events[-1] == "stopped"
    stored = loop_thread.run(api.get("kube-system", "election"))
    assert stored is not None and stored["spec"]["holderIdentity"] == ""
    election.stop()  # a second stop does nothing
