"""The remote client: configuration loading, errors as the store's exceptions, retries, the limiter."""

from __future__ import annotations

import asyncio
import base64
import random
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web
from tests.remote.conftest import pod

from kubesched.errors import InputError
from kubesched.remote.client import (
    ApiConnectionError,
    Gone,
    Invalid,
    RemoteAlreadyExists,
    RemoteConflict,
    RemoteNotFound,
    TokenBucket,
    TooManyRequests,
    Unauthorized,
    error_from_status,
)
from kubesched.remote.config import ClientConfig, load_client_config
from kubesched.remote.discovery import KIND_VERSIONS, Discovery, KindInfo, NotServed, _missing_note
from kubesched.remote.loop import LoopThread
from kubesched.remote.reflector import Backoff
from kubesched.store.base import AlreadyExists, Conflict, NotFound

PODS = "/api/v1/namespaces/default/pods"


def _kubeconfig(cluster: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(cluster.kubeconfig.read_text())
    return data


def _write(path: Path, config: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _clear_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))


# -- configuration ----------------------------------------------------------------------------------
def test_the_kubeconfig_serve_writes_works_as_is(cluster, loop_thread, connect):
    client = connect(cluster)
    nodes = loop_thread.run(client.get("/api/v1/nodes"))
    assert sorted(n["metadata"]["name"] for n in nodes["items"]) == ["node-0", "node-1"]
    assert client.config.server == f"https://127.0.0.1:{cluster.port}"


def test_kubeconfig_from_the_environment_and_a_context_flag(
    cluster, tmp_path, monkeypatch, loop_thread, connect
):
    config = _kubeconfig(cluster)
    # A second context whose user has a wrong token is the current one; --context picks the good one.
    config["users"].append({"name": "stranger", "user": {"token": "wrong"}})
    config["contexts"].append({"name": "other", "context": {"cluster": "kubesched", "user": "stranger"}})
    config["current-context"] = "other"
    path = _write(tmp_path / "merged", config)
    _clear_env(monkeypatch, tmp_path)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{path}")

    stranger = connect(load_client_config())
    with pytest.raises(Unauthorized) as info:
        loop_thread.run(stranger.get("/api/v1/nodes"))
    assert info.value.code == 401

    chosen = load_client_config(context="kubesched")
    assert "context kubesched" in chosen.source
    listed = loop_thread.run(connect(chosen).get("/api/v1/namespaces"))
    assert any(ns["metadata"]["name"] == "default" for ns in listed["items"])

    with pytest.raises(InputError) as missing_context:
        load_client_config(path, context="nope")
    assert "'nope'" in str(missing_context.value) and "kubesched" in str(missing_context.value)
    assert missing_context.value.field == "--context"


def test_missing_or_broken_kubeconfig_is_a_clear_input_error(tmp_path, monkeypatch):
    with pytest.raises(InputError) as info:
        load_client_config(str(tmp_path / "nowhere.yaml"))
    assert info.value.file == str(tmp_path / "nowhere.yaml")
    assert "does not exist" in str(info.value)

    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [\n")
    with pytest.raises(InputError) as broken:
        load_client_config(str(bad))
    assert str(bad) in str(broken.value)

    _clear_env(monkeypatch, tmp_path)
    with pytest.raises(InputError) as nothing:
        load_client_config()
    assert "--kubeconfig" in str(nothing.value) and "KUBERNETES_SERVICE_HOST" in str(nothing.value)

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone"))
    with pytest.raises(InputError) as env:
        load_client_config()
    assert env.value.field == "KUBECONFIG"


def test_in_cluster_service_account_and_a_rotated_token_file(
    cluster, tmp_path, monkeypatch, loop_thread, connect
):
    _clear_env(monkeypatch, tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(cluster.port))
    token = tmp_path / "token"
    token.write_text("stale-token\n")
    ca = tmp_path / "ca.crt"
    ca.write_bytes(cluster.served.identity.ca_cert.read_bytes())
    config = load_client_config(token_file=str(token), ca_file=str(ca))
    assert config.source == "in-cluster"
    client = connect(config)
    token.write_text(cluster.token)
    # The cached token is refused; the file is read again and the request goes through.
    nodes = loop_thread.run(client.get("/api/v1/nodes"))
    assert len(nodes["items"]) == 2


def test_exec_plugin_credentials(cluster, tmp_path, loop_thread, connect):
    script = tmp_path / "cred.sh"
    credential = (
        '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
        f'"status": {{"token": "{cluster.token}"}}}}'
    )
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{credential}\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    config = _kubeconfig(cluster)
    config["users"] = [
        {
            "name": "kubesched-admin",
            "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(script)}},
        }
    ]
    client = connect(load_client_config(_write(tmp_path / "exec.yaml", config)))
    assert len(loop_thread.run(client.get("/api/v1/nodes"))["items"]) == 2


def test_tls_verification_and_insecure_skip(cluster, tmp_path, loop_thread, connect):
    config = _kubeconfig(cluster)
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    unverified = connect(load_client_config(_write(tmp_path / "noca.yaml", config)))
    with pytest.raises(ApiConnectionError) as info:
        loop_thread.run(unverified.get("/api/v1/nodes"))
    assert "certificate" in str(info.value).lower()

    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    skipping = connect(load_client_config(_write(tmp_path / "skip.yaml", config)))
    assert len(loop_thread.run(skipping.get("/api/v1/nodes"))["items"]) == 2

    # A CA given as a file path next to the kubeconfig.
    (tmp_path / "ca.crt").write_bytes(
        base64.b64decode(_kubeconfig(cluster)["clusters"][0]["cluster"]["certificate-authority-data"])
    )
    del config["clusters"][0]["cluster"]["insecure-skip-tls-verify"]
    config["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    by_file = connect(load_client_config(_write(tmp_path / "cafile.yaml", config)))
    assert len(loop_thread.run(by_file.get("/api/v1/nodes"))["items"]) == 2


# -- errors -----------------------------------------------------------------------------------------
def test_status_answers_become_the_store_exceptions(cluster, loop_thread, connect):
    client = connect(cluster)
    run = loop_thread.run

    with pytest.raises(NotFound) as missing:
        run(client.get(f"{PODS}/missing"))
    assert isinstance(missing.value, RemoteNotFound)
    assert (missing.value.code, missing.value.reason) == (404, "NotFound")
    assert "missing" in missing.value.message

    created = run(client.request("POST", PODS, body=pod("web-1")))
    with pytest.raises(AlreadyExists) as exists:
        run(client.request("POST", PODS, body=pod("web-1")))
    assert isinstance(exists.value, RemoteAlreadyExists) and exists.value.code == 409

    stale = dict(created, metadata={**created["metadata"], "resourceVersion": "1"})
    with pytest.raises(Conflict) as conflict:
        run(client.request("PUT", f"{PODS}/web-1", body=stale))
    assert isinstance(conflict.value, RemoteConflict) and not isinstance(conflict.value, AlreadyExists)

    with pytest.raises(Invalid) as invalid:
        run(client.request("POST", PODS, body={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}))
    assert invalid.value.code == 422

    patched = run(
        client.request(
            "PATCH",
            f"{PODS}/web-1",
            body={"metadata": {"labels": {"tier": "a"}}},
            content_type="application/merge-patch+json",
        )
    )
    assert patched["metadata"]["labels"]["tier"] == "a"


def test_watch_error_events_decode_to_gone():
    err = error_from_status({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    assert isinstance(err, Gone) and err.code == 410 and err.reason == "Expired"
    assert isinstance(error_from_status({"code": 409, "reason": "AlreadyExists"}), AlreadyExists)


def test_unreachable_server_is_a_connection_error(loop_thread, connect):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = connect(ClientConfig(server=f"http://127.0.0.1:{port}"))
    with pytest.raises(ApiConnectionError):
        loop_thread.run(client.get("/api"))


class _FakeServer:
    """A tiny HTTP server on a free port answering every request with ``handle``."""

    runner: web.AppRunner | None = None
    port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


class _Throttling(_FakeServer):
    """A tiny server answering 429 (Retry-After: 0) a given number of times before 200."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.seen = 0

    async def handle(self, _request: web.Request) -> web.Response:
        self.seen += 1
        if self.seen <= self.refusals:
            return web.json_response(
                {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow down"},
                status=429,
                headers={"Retry-After": "0"},
            )
        return web.json_response({"kind": "NodeList", "items": []})


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_429_with_retry_after_is_retried_a_bounded_number_of_times(loop_thread, connect, method):
    # GETs go through aiohttp, writes through the client's own HTTP/1.1 pool: both retry alike.
    body = {"kind": "Binding"} if method == "POST" else None
    patient = _Throttling(refusals=3)
    loop_thread.run(patient.start())
    try:
        client = connect(ClientConfig(server=f"http://127.0.0.1:{patient.port}"))
        answer = loop_thread.run(client.request(method, "/api/v1/nodes", body=body))
        assert answer == {"kind": "NodeList", "items": []}
        assert patient.seen == 4
    finally:
        loop_thread.run(patient.stop())

    stubborn = _Throttling(refusals=100)
    loop_thread.run(stubborn.start())
    try:
        client = connect(ClientConfig(server=f"http://127.0.0.1:{stubborn.port}"), max_retries=2)
        with pytest.raises(TooManyRequests) as info:
            loop_thread.run(client.request(method, "/api/v1/nodes", body=body))
        assert info.value.code == 429 and info.value.retry_after == 0
        assert stubborn.seen == 3
    finally:
        loop_thread.run(stubborn.stop())


# -- the limiter ------------------------------------------------------------------------------------
def test_token_bucket_serves_a_burst_then_qps():
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    waits = [bucket.reserve() for _ in range(6)]
    assert waits == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3])
    now[0] = 10.0  # idle long enough to refill, but never above burst
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0, 0, 0, 0.1])
    unlimited = TokenBucket(qps=0, burst=0)
    assert all(unlimited.reserve() == 0 for _ in range(1000))


def test_the_limiter_bounds_a_burst_of_requests(cluster, loop_thread, connect):
    client = connect(cluster, qps=20, burst=4)

    async def burst() -> float:
        start = time.monotonic()
        await asyncio.gather(*(client.get("/api/v1/nodes") for _ in range(12)))
        return time.monotonic() - start

    elapsed = loop_thread.run(burst())
    # 4 at once, then 8 more at 20/s: the last starts no sooner than 0.4s after the first.
    assert elapsed >= 0.35
    assert client.throttled >= 0.35 and client.requests == 12


def test_loop_thread_runs_coroutines_for_other_threads():
    lt = LoopThread()
    try:

        async def double(x: int) -> int:
            await asyncio.sleep(0)
            return 2 * x

        assert lt.run(double(21)) == 42
        with pytest.raises(TimeoutError):
            lt.run(asyncio.sleep(5), timeout=0.05)

        async def fail() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            lt.run(fail())
    finally:
        lt.stop()
    assert not lt.running
    with pytest.raises(RuntimeError):
        lt.run(double(1))


# -- discovery --------------------------------------------------------------------------------------
def test_discovery_of_a_served_cluster(cluster, loop_thread, connect):
    client = connect(cluster)
    discovery = loop_thread.run(Discovery.discover(client))
    pdb = discovery.info("PodDisruptionBudget")
    assert (pdb.group_version, pdb.plural, pdb.namespaced) == ("policy/v1", "poddisruptionbudgets", True)
    queue = discovery.info("Queue")
    assert (queue.group_version, queue.namespaced) == ("scheduling.volcano.sh/v1beta1", False)
    assert (
        discovery.path("Queue", "ignored", "default") == "/apis/scheduling.volcano.sh/v1beta1/queues/default"
    )
    assert discovery.path("Pod") == "/api/v1/pods"
    hn = discovery.info("HyperNode")
    assert (hn.group_version, hn.plural, hn.namespaced) == (
        "topology.volcano.sh/v1alpha1",
        "hypernodes",
        False,
    )
    assert discovery.path("Pod", "ns1", "p", "status") == "/api/v1/namespaces/ns1/pods/p/status"
    assert discovery.path("Lease", "kube-system", "kubesched") == (
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched"
    )
    assert (
        discovery.serves("events.k8s.io/v1") and discovery.info("Event").group_version == "events.k8s.io/v1"
    )
    assert (
        discovery.path("ReplicationController", "ns1", "rc")
        == "/api/v1/namespaces/ns1/replicationcontrollers/rc"
    )
    assert not any("ReplicationController" in w for w in discovery.warnings)


def test_a_kind_the_server_does_not_serve_is_a_warning_and_nothing_to_follow():
    discovery = Discovery({"Pod": KindInfo("Pod", "", "v1", "pods", True, "v1")})
    assert not discovery.has("ReplicationController")
    with pytest.raises(NotServed):
        discovery.path("ReplicationController")


def test_a_server_without_the_hypernode_crd_is_followed_without_topology():
    discovery = Discovery({"Pod": KindInfo("Pod", "", "v1", "pods", True, "v1")})
    assert not discovery.has("HyperNode")
    note = _missing_note("HyperNode", None, KIND_VERSIONS["HyperNode"])
    assert note is not None and "topology.volcano.sh/v1alpha1 is not served" in note
    assert "without network topology" in note


def test_older_versions_are_presented_as_the_preferred_one():
    discovery = Discovery(
        {
            "PodDisruptionBudget": KindInfo(
                "PodDisruptionBudget", "policy", "v1beta1", "poddisruptionbudgets", True, "policy/v1"
            ),
            "Event": KindInfo("Event", "", "v1", "events", True, "v1"),
        }
    )
    item = {"metadata": {"name": "b"}, "spec": {"minAvailable": 1}}
    assert discovery.convert("PodDisruptionBudget", item)["apiVersion"] == "policy/v1"
    assert item["kind"] == "PodDisruptionBudget"
    assert discovery.convert("Event", {"metadata": {}})["apiVersion"] == "v1"


class _Streaming(_FakeServer):
    """A watch endpoint sending its events in awkward pieces: lines split across writes."""

    def __init__(self, payload: bytes, piece: int) -> None:
        self.payload = payload
        self.piece = piece

    async def handle(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for i in range(0, len(self.payload), self.piece):
            await resp.write(self.payload[i : i + self.piece])
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_watch_lines_split_across_reads(loop_thread, connect, piece):
    events = [
        {
            "type": "ADDED",
            "object": {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}, "pad": "x" * i * 50},
        }
        for i in range(20)
    ]
    payload = b"".join(orjson.dumps(e) + b"\n" for e in events[:-1]) + orjson.dumps(events[-1])
    server = _Streaming(payload, piece)
    loop_thread.run(server.start())
    try:
        client = connect(ClientConfig(server=f"http://127.0.0.1:{server.port}"))

        async def collect() -> list[dict[str, Any]]:
            return [e async for e in client.watch("/api/v1/pods", {"resourceVersion": "0"})]

        assert loop_thread.run(collect()) == events
    finally:
        loop_thread.run(server.stop())


def test_watch_batches_keep_order_and_stop_after_a_malformed_line(loop_thread, connect):
    """Lines read together come as one batch; a line that does not decode ends the stream as a
    lost connection, after the events before it were given."""
    events = [
        {"type": "ADDED", "object": {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}}}
        for i in range(5)
    ]
    payload = b"".join(orjson.dumps(e) + b"\n" for e in events) + b"{not json\n"
    server = _Streaming(payload, len(payload))
    loop_thread.run(server.start())
    try:
        client = connect(ClientConfig(server=f"http://127.0.0.1:{server.port}"))
        got: list[list[dict[str, Any]]] = []

        async def collect() -> None:
            async for batch in client.watch_batches("/api/v1/pods", {"resourceVersion": "0"}):
                got.append(batch)

        with pytest.raises(ApiConnectionError, match="malformed event"):
            loop_thread.run(collect())
        assert [e for batch in got for e in batch] == events
        assert len(got) == 1  # one write from the server, one batch
    finally:
        loop_thread.run(server.stop())


def test_loop_thread_run_returns_raises_and_times_out(loop_thread):
    async def answer() -> int:
        return 42

    async def refuse() -> None:
        raise RemoteNotFound(404, "NotFound", 'pods "x" not found')

    cancelled = threading.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    assert loop_thread.run(answer()) == 42
    with pytest.raises(RemoteNotFound):
        loop_thread.run(refuse())
    with pytest.raises(TimeoutError):
        loop_thread.run(hang(), timeout=0.05)
    assert cancelled.wait(5)  # the coroutine left behind is cancelled, not left running


def test_backoff_grows_with_jitter_caps_and_resets():
    now = [0.0]
    backoff = Backoff(rng=random.Random(7), clock=lambda: now[0])
    waits = []
    for _ in range(8):
        waits.append(backoff.next())
        now[0] += 1
    steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    assert all(step <= w <= 2 * step for w, step in zip(waits, steps, strict=True))
    assert len(set(waits)) == len(waits)  # jittered
    now[0] += 121  # two quiet minutes: from the start again
    assert 0.8 <= backoff.next() <= 1.6


def test_in_cluster_without_its_files_falls_back_to_the_kubeconfig(cluster, tmp_path, monkeypatch):
    _clear_env(monkeypatch, tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    missing = str(tmp_path / "no-token")
    with pytest.raises(InputError, match="in-cluster"):
        load_client_config(token_file=missing, ca_file=missing)
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    config = load_client_config(token_file=missing, ca_file=missing)
    assert config.source.startswith("kubeconfig") and config.server.endswith(str(cluster.port))
