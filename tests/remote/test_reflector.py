"""Reflectors against a served cluster: the mirror follows the server through creates, updates and
deletes, cut streams, a restarted server, an expired resourceVersion and a slow network, applying
every change exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from tests.remote.conftest import pod

from kubesched.api.pdb import PodDisruptionBudget
from kubesched.framework.config import default_config
from kubesched.plugins import default_registry
from kubesched.remote.client import ApiConnectionError, ApiError, Gone
from kubesched.remote.config import load_client_config
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery, KindInfo
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.reflector import Backoff, Reflector, ReflectorSet
from kubesched.runtime.driver import RealTimeDriver
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import WatchEvent
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import Ports
from kubesched.store.sqlite import SqliteStore

from .refcp import RefCluster, needs_refcp

PODS = "/api/v1/namespaces/default/pods"
KINDS = ("Namespace", "Node", "Pod", "Queue")


class Harness:
    """Reflectors of ``kinds`` into a mirror, with a record of every change the mirror delivered."""

    def __init__(self, cluster, loop_thread, connect, target=None, kinds=KINDS, **options: Any) -> None:
        self.cluster = cluster
        self.loop = loop_thread
        self.client = connect(target or cluster)
        self.discovery = loop_thread.run(Discovery.discover(self.client))
        self.mirror = MirrorStore()
        self.watch = self.mirror.watch()
        self.delivered: list[WatchEvent] = []
        options.setdefault("backoff", Backoff(initial=0.05, cap=0.2))
        self.reflectors = ReflectorSet(self.client, self.discovery, self.mirror, kinds, **options)
        self.kinds = kinds
        loop_thread.run(self.reflectors.start())
        assert self.reflectors.synced.wait(15), "the reflectors did not sync"
        assert self.reflectors.has_synced()

    def drain(self) -> list[WatchEvent]:
        fresh = list(self.watch.drain())
        self.delivered += fresh
        return fresh

    def server_state(self, kind: str) -> dict[tuple[str, str], str]:
        return {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for o in self.cluster.store.list(kind)
        }

    def mirror_state(self, kind: str) -> dict[tuple[str, str], str]:
        return {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for o in self.mirror.list(kind)
        }

    def settle(self, timeout: float = 20.0) -> None:
        """Wait until the mirror holds what the server holds, for every followed kind."""
        deadline = time.monotonic() + timeout
        while True:
            if all(self.mirror_state(k) == self.server_state(k) for k in self.kinds):
                self.drain()
                return
            if time.monotonic() > deadline:
                for k in self.kinds:
                    assert self.mirror_state(k) == self.server_state(k), k
            time.sleep(0.02)

    def assert_each_change_once(self) -> None:
        seen = Counter(
            (
                e.kind,
                e.obj["metadata"].get("namespace", ""),
                e.obj["metadata"]["name"],
                e.obj["metadata"]["resourceVersion"],
                e.type.value,
            )
            for e in self.delivered
        )
        twice = [k for k, n in seen.items() if n > 1]
        assert not twice, f"applied more than once: {twice}"

    def stop(self) -> None:
        self.loop.run(self.reflectors.stop(), timeout=10)


def _write(cluster, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    status, data, _ = cluster.request(method, path, body, **kw)
    assert status < 300, (status, data)
    return data


def _churn(cluster, prefix: str, n: int, updates: int = 2, deletes: int = 2) -> None:
    """Create ``n`` pods, relabel the first few ``updates`` times, delete the last ``deletes``."""
    for i in range(n):
        _write(cluster, "POST", PODS, pod(f"{prefix}-{i}"))
    for u in range(updates):
        for i in range(min(3, n)):
            _write(
                cluster,
                "PATCH",
                f"{PODS}/{prefix}-{i}",
                {"metadata": {"labels": {"round": str(u)}}},
                content_type="application/merge-patch+json",
            )
    for i in range(n - deletes, n):
        _write(cluster, "DELETE", f"{PODS}/{prefix}-{i}")


def test_list_then_watch_follows_creates_updates_and_deletes(make_cluster, loop_thread, connect):
    cluster = make_cluster(nodes=3, bookmark_interval=0.2)
    for i in range(12):
        _write(cluster, "POST", PODS, pod(f"early-{i}"))
    h = Harness(cluster, loop_thread, connect, page_size=5)
    try:
        # The initial list came in pages and every object arrived as one ADDED.
        first = h.drain()
        assert Counter(e.type.value for e in first if e.kind == "Pod") == {"ADDED": 12}
        assert h.reflectors.reflectors["Pod"].stats.lists == 1
        assert len(h.mirror.list("Node")) == 3
        # List items carry apiVersion and kind.
        assert all(o["kind"] == "Pod" and o["apiVersion"] == "v1" for o in h.mirror.list("Pod"))
        assert {o["apiVersion"] for o in h.mirror.list("Queue")} == {"scheduling.volcano.sh/v1beta1"}

        _churn(cluster, "web", 8)
        _write(
            cluster,
            "PATCH",
            "/api/v1/nodes/node-1",
            {"spec": {"unschedulable": True}},
            content_type="application/merge-patch+json",
        )
        h.settle()
        assert h.mirror.get("Node", None, "node-1")["spec"]["unschedulable"] is True
        types = Counter(e.type.value for e in h.delivered if e.kind == "Pod")
        assert types == {"ADDED": 12 + 8, "MODIFIED": 6, "DELETED": 2}
        h.assert_each_change_once()
        # Bookmarks keep a quiet kind's version moving with the server's.
        deadline = time.monotonic() + 10
        node_reflector = h.reflectors.reflectors["Node"]
        while node_reflector.stats.bookmarks == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert node_reflector.stats.bookmarks > 0
        assert int(node_reflector.resource_version) >= int(max(h.server_state("Pod").values()))
        assert h.reflectors.reflectors["Pod"].stats.relists == 0
    finally:
        h.stop()


def test_a_cut_stream_resumes_from_its_resource_version(make_cluster, make_proxy, loop_thread, connect):
    cluster = make_cluster(nodes=2)
    proxy = make_proxy(cluster)
    h = Harness(cluster, loop_thread, connect, target=proxy.config(cluster))
    try:
        _churn(cluster, "before", 4)
        h.settle()
        proxy.cut()  # every watch stream drops; reconnects are refused for now
        _churn(cluster, "during", 5)
        time.sleep(0.3)
        proxy.resume()
        _churn(cluster, "after", 3)
        h.settle()
        h.assert_each_change_once()
        pods = h.reflectors.reflectors["Pod"]
        # Resumed from its version (the server still had the history): no relist, and every single
        # change made while it was away was delivered, each once.
        assert pods.stats.relists == 0 and pods.stats.backoffs > 0
        during = Counter(e.type.value for e in h.delivered if e.obj["metadata"]["name"].startswith("during-"))
        assert during == {"ADDED": 5, "MODIFIED": 6, "DELETED": 2}
    finally:
        h.stop()


def test_a_restarted_server_is_followed_without_double_applies(make_cluster, loop_thread, connect, tmp_path):
    cluster = make_cluster(nodes=2, bookmark_interval=0.2)
    port = cluster.port
    h = Harness(cluster, loop_thread, connect)
    try:
        _churn(cluster, "one", 4)
        h.settle()
        cluster.stop()
        # While it is down, the data changes behind the server's back (as etcd would under another
        # apiserver): the restarted server has no history before these, so the watch is told 410.
        store = SqliteStore(tmp_path / "data" / "cluster.db")
        store.delete("Pod", "default", "one-0")
        store.create(pod("offline"))
        store.close()
        restarted = make_cluster(nodes=2, port=port, bookmark_interval=0.2)
        h.cluster = restarted
        _churn(restarted, "two", 3)
        h.settle()
        h.assert_each_change_once()
        assert h.mirror.get("Pod", "default", "one-0") is None
        assert h.mirror.get("Pod", "default", "offline") is not None
    finally:
        h.stop()


def test_an_expired_version_relists_and_emits_only_differences(
    make_cluster, make_proxy, loop_thread, connect
):
    cluster = make_cluster(nodes=2, history=5)
    proxy = make_proxy(cluster)
    h = Harness(cluster, loop_thread, connect, target=proxy.config(cluster))
    try:
        for i in range(6):
            _write(cluster, "POST", PODS, pod(f"old-{i}"))
        h.settle()
        proxy.cut()
        # Far more changes than the server keeps: the watch cannot resume from its version.
        for i in range(10):
            _write(cluster, "POST", PODS, pod(f"new-{i}"))
        for u in range(4):
            for i in range(2):
                _write(
                    cluster,
                    "PATCH",
                    f"{PODS}/old-{i}",
                    {"metadata": {"labels": {"u": str(u)}}},
                    content_type="application/merge-patch+json",
                )
        for i in range(3, 6):
            _write(cluster, "DELETE", f"{PODS}/old-{i}")
        _write(cluster, "POST", PODS, pod("brief"))
        _write(cluster, "DELETE", f"{PODS}/brief")
        h.drain()
        before = len(h.delivered)
        proxy.resume()
        h.settle()
        pods = h.reflectors.reflectors["Pod"]
        assert pods.stats.gone >= 1 and pods.stats.relists >= 1
        # Only the differences: each updated pod once (not four times), a pod created and deleted
        # while away not at all.
        after = Counter((e.type.value, e.obj["metadata"]["name"]) for e in h.delivered[before:])
        expected = Counter(
            [("ADDED", f"new-{i}") for i in range(10)]
            + [("MODIFIED", f"old-{i}") for i in range(2)]
            + [("DELETED", f"old-{i}") for i in range(3, 6)]
        )
        assert after == expected
        h.assert_each_change_once()
    finally:
        h.stop()


@pytest.mark.parametrize("delay", [0.02])
def test_a_slow_network_loses_no_event(make_cluster, make_proxy, loop_thread, connect, delay):
    cluster = make_cluster(nodes=2)
    proxy = make_proxy(cluster, delay=delay)
    h = Harness(cluster, loop_thread, connect, target=proxy.config(cluster))
    try:
        _churn(cluster, "slow", 15, updates=3, deletes=5)
        h.settle()
        h.assert_each_change_once()
        types = Counter(e.type.value for e in h.delivered if e.obj["metadata"]["name"].startswith("slow-"))
        assert types == {"ADDED": 15, "MODIFIED": 9, "DELETED": 5}
    finally:
        h.stop()


# -- a real kube-apiserver (v1.20.2, refcp) -------------------------------------------------------------
@pytest.fixture(scope="module")
def refcp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The kubeconfig of a private kube-apiserver (its own directory and free ports)."""
    ref = RefCluster(tmp_path_factory.mktemp("refcp"))
    try:
        yield ref.kubeconfig
    finally:
        ref.stop()


def _client_certificate(pki: Path, cn: str, group: str) -> tuple[bytes, bytes]:
    """A client certificate signed by refcp's CA (PEM certificate, PEM key)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@needs_refcp
def test_client_certificates_against_kube_apiserver(refcp, tmp_path, loop_thread, connect):
    import base64

    import yaml

    cert, key = _client_certificate(Path(refcp).parent / "pki", "kubesched-test", "system:masters")
    config = yaml.safe_load(Path(refcp).read_text())
    config["users"] = [
        {
            "name": "admin",
            "user": {
                "client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key).decode(),
            },
        }
    ]
    inline = tmp_path / "inline.yaml"
    inline.write_text(yaml.safe_dump(config))
    listed = loop_thread.run(connect(load_client_config(str(inline))).get("/api/v1/namespaces"))
    assert any(ns["metadata"]["name"] == "default" for ns in listed["items"])
    # The same as files named relative to the kubeconfig.
    (tmp_path / "me.crt").write_bytes(cert)
    (tmp_path / "me.key").write_bytes(key)
    config["users"] = [{"name": "admin", "user": {"client-certificate": "me.crt", "client-key": "me.key"}}]
    by_file = tmp_path / "files.yaml"
    by_file.write_text(yaml.safe_dump(config))
    listed = loop_thread.run(connect(load_client_config(str(by_file))).get("/api/v1/namespaces"))
    assert any(ns["metadata"]["name"] == "default" for ns in listed["items"])
    # Without any credential the request is refused as anonymous.
    config["users"] = [{"name": "admin", "user": {}}]
    anonymous = tmp_path / "anon.yaml"
    anonymous.write_text(yaml.safe_dump(config))
    with pytest.raises(ApiError) as info:
        loop_thread.run(connect(load_client_config(str(anonymous))).get("/api/v1/namespaces"))
    assert info.value.code in (401, 403)


def _ref_node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@needs_refcp
def test_against_kube_apiserver_1_20(refcp, loop_thread, connect):
    client = connect(load_client_config(str(refcp)))
    run = loop_thread.run
    discovery = run(Discovery.discover(client))
    # v1.20 serves PDBs as policy/v1beta1 only, and has no Volcano CRDs: warned, not fatal.
    pdb = discovery.info("PodDisruptionBudget")
    assert (pdb.group_version, pdb.preferred) == ("policy/v1beta1", "policy/v1")
    assert not discovery.has("PodGroup") and not discovery.has("Queue")
    notes = "\n".join(discovery.warnings)
    assert "policy/v1beta1" in notes and "PodGroup" in notes and "Queue" in notes
    assert "restart kubesched after installing the CRDs" in notes
    assert discovery.info("Event").group_version == "events.k8s.io/v1"
    assert discovery.path("Pod", "default", "p", "binding") == "/api/v1/namespaces/default/pods/p/binding"
    # The storage kinds are all v1 there but CSIStorageCapacity (v1alpha1, off unless enabled).
    for kind in (
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
    ):
        assert discovery.info(kind).group_version.endswith("v1"), kind
    assert not discovery.has("CSIStorageCapacity") and "CSIStorageCapacity: not served" in notes
    # Nor the workload API of scheduling.k8s.io: warned, and its informers stay empty.
    assert not discovery.has("Workload") and not discovery.has("PodGroup.scheduling.k8s.io")
    assert (
        "PodGroup: scheduling.k8s.io/v1alpha2 is not served (the server's GenericWorkload gate is off)"
        in notes
    )

    for name in ("ref-a", "ref-b"):
        run(client.request("POST", "/api/v1/nodes", body=_ref_node(name)))
    for i in range(3):
        run(client.request("POST", PODS, body=pod(f"early-{i}")))
    run(
        client.request(
            "POST",
            "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets",
            body={
                "metadata": {"name": "budget"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "early"}}},
            },
        )
    )
    mirror = MirrorStore()
    reflectors = ReflectorSet(
        client, discovery, mirror, FOLLOWED_KINDS, backoff=Backoff(initial=0.05, cap=0.2)
    )
    # v1.20 serves no resource.k8s.io group: the DRA kinds are skipped too.
    assert reflectors.skipped == [
        "Queue",
        "PodGroup",
        "HyperNode",
        "Workload",
        "PodGroup.scheduling.k8s.io",
        "CSIStorageCapacity",
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaimTemplate",
        "ResourceClaim",
    ]
    run(reflectors.start())
    try:
        assert reflectors.synced.wait(30)
        for i in range(4):
            run(client.request("POST", PODS, body=pod(f"late-{i}")))
        run(client.request("DELETE", f"{PODS}/early-0", body={"gracePeriodSeconds": 0}))
        run(
            client.request(
                "PATCH",
                "/api/v1/nodes/ref-b",
                body={"spec": {"unschedulable": True}},
                content_type="application/merge-patch+json",
            )
        )

        def server(kind_path: str) -> dict[str, str]:
            listed = run(client.get(kind_path))
            return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed["items"]}

        def mirrored(kind: str, namespace: str | None = None) -> dict[str, str]:
            return {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in mirror.list(kind)
                if namespace is None or o["metadata"].get("namespace") == namespace
            }

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if mirrored("Pod", "default") == server(PODS) and mirrored("Node") == server("/api/v1/nodes"):
                break
            time.sleep(0.05)
        assert mirrored("Pod", "default") == server(PODS)
        assert mirrored("Node") == server("/api/v1/nodes")
        assert mirror.get("Node", None, "ref-b")["spec"]["unschedulable"] is True
        budget = mirror.get("PodDisruptionBudget", "default", "budget")
        assert budget["apiVersion"] == "policy/v1" and budget["kind"] == "PodDisruptionBudget"
        assert PodDisruptionBudget.from_dict(budget).min_available is not None
        assert mirror.list("Queue") == [] and mirror.list("PodGroup") == []
    finally:
        run(reflectors.stop(), timeout=10)


class _BindingPorts:
    """Binds through the API server; every other side effect is only recorded."""

    def __init__(self, client, loop_thread) -> None:
        self.client = client
        self.loop = loop_thread
        self.binds: list[str] = []
        self.recorded: list[Any] = []

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self.loop.run(
            self.client.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)
        )
        self.binds.append(name)

    def evict(self, *args: Any) -> bool:
        self.recorded.append(("evict", args))
        return False

    def set_pod_condition(self, *args: Any, **kw: Any) -> None:
        self.recorded.append(("condition", args))

    def update_pod_group_status(self, *args: Any) -> None:
        self.recorded.append(("pg", args))

    def create_pod_group(self, obj: Any) -> Any:
        return obj

    def record(self, *args: Any, **kw: Any) -> None:
        self.recorded.append(("event", args))

    def set_pod_annotations(self, *args: Any) -> None:
        return None


def test_the_scheduler_runs_over_the_mirror(make_cluster, loop_thread, connect):
    cluster = make_cluster(nodes=2)
    h = Harness(cluster, loop_thread, connect, kinds=FOLLOWED_KINDS)
    ports_impl = _BindingPorts(h.client, loop_thread)
    ports = Ports(ports_impl, ports_impl, ports_impl, ports_impl, ports_impl, ports_impl)
    informers = informer_factory(h.mirror)
    registry = default_registry()
    scheduler = Scheduler(informers, ports, default_config(registry), registry, now=time.time, seed=0)
    driver = RealTimeDriver(informers, scheduler, h.mirror, max_idle=0.05)
    driver.start()
    try:
        for i in range(6):
            _write(cluster, "POST", PODS, pod(f"job-{i}"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            bound = [p for p in h.mirror.list("Pod") if p["spec"].get("nodeName")]
            if len(bound) == 6:
                break
            time.sleep(0.05)
        assert sorted(ports_impl.binds) == [f"job-{i}" for i in range(6)]
        h.settle()
        assert all(p["spec"]["nodeName"] in ("node-0", "node-1") for p in cluster.store.list("Pod"))
    finally:
        driver.stop()
        informers.close()
        h.stop()


# -- the reflector's protocol, against a scripted server ------------------------------------------------
class _Scripted:
    """A client whose list pages and watch streams are given in order; records what was asked."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.asked: list[tuple[str, dict[str, str]]] = []
        self.done = asyncio.Event()

    async def get(self, path: str, params: Any = None) -> Any:
        self.asked.append(("list", dict(params or {})))
        answer = self.lists.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def watch(self, path: str, params: Any) -> AsyncGenerator[dict[str, Any], None]:
        self.asked.append(("watch", dict(params)))
        if not self.watches:
            self.done.set()
            await asyncio.Event().wait()
        answer = self.watches.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        for event in answer:
            if isinstance(event, BaseException):
                raise event
            yield event

    async def watch_batches(self, path: str, params: Any) -> AsyncGenerator[list[dict[str, Any]], None]:
        """The scripted stream one event per batch (the reflector reads batches)."""
        async for event in self.watch(path, params):
            yield [event]


def _obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "uid": name}}


def _run_until_scripted_out(reflector: Reflector, client: Any) -> None:
    """Run the reflector until the scripted client has given every answer it had, then stop it."""

    async def scenario() -> None:
        task = asyncio.create_task(reflector.run())
        await asyncio.wait_for(client.done.wait(), 10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def _page(items: list[dict[str, Any]], rv: str, token: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    return {"kind": "ConfigMapList", "metadata": meta, "items": items}


def test_reflector_protocol_step_by_step():
    status_410 = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    status_500 = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd hiccup"}
    client = _Scripted(
        lists=[
            _page([_obj("a", "1"), _obj("b", "2")], "5", token="t1"),
            Gone(410, "Expired", "the continue token expired"),
            _page([_obj("a", "1"), _obj("b", "2"), _obj("c", "3")], "10"),
            _page([_obj("a", "12"), _obj("c", "3"), _obj("d", "11"), _obj("e", "19")], "20"),
            _page([_obj("a", "12"), _obj("c", "3"), _obj("d", "11"), _obj("e", "19")], "21"),
        ],
        watches=[
            [
                {"type": "ADDED", "object": _obj("d", "11")},
                {"type": "ADDED", "object": _obj("d", "11")},  # a replay: skipped
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            ],
            [{"type": "ERROR", "object": status_410}],
            ApiConnectionError("connection refused"),
            [{"type": "MODIFIED", "object": _obj("c", "20")}, ApiConnectionError("reset")],
            [{"type": "ERROR", "object": status_500}],
        ],
    )
    kinds = {"Pod": KindInfo("Pod", "", "v1", "pods", True, "v1")}
    mirror = MirrorStore()
    watch = mirror.watch()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    reflector = Reflector(
        client,  # type: ignore[arg-type]
        Discovery(kinds),
        "Pod",
        mirror,
        page_size=2,
        rng=random.Random(3),
        sleep=sleep,
    )

    _run_until_scripted_out(reflector, client)
    asked = [(what, {k: v for k, v in p.items() if k != "timeoutSeconds"}) for what, p in client.asked]
    watch_params = {"allowWatchBookmarks": "true"}
    assert asked == [
        ("list", {"limit": "2"}),
        ("list", {"limit": "2", "continue": "t1"}),
        ("list", {}),  # the continue token expired: one unpaged list
        ("watch", {"resourceVersion": "10", **watch_params}),
        ("watch", {"resourceVersion": "15", **watch_params}),  # from the bookmark
        ("list", {"limit": "2"}),  # 410: relist
        ("watch", {"resourceVersion": "20", **watch_params}),  # refused: back off, same version
        ("watch", {"resourceVersion": "20", **watch_params}),
        ("watch", {"resourceVersion": "20", **watch_params}),  # cut after an event: resumes from it
        ("list", {"limit": "2"}),  # another error event: back off, relist
        ("watch", {"resourceVersion": "21", **watch_params}),
    ]
    assert all(300 <= int(p["timeoutSeconds"]) <= 600 for what, p in client.asked if what == "watch")
    delivered = [
        (e.type.value, e.obj["metadata"]["name"], e.obj["metadata"]["resourceVersion"]) for e in watch.drain()
    ]
    assert delivered == [
        ("ADDED", "a", "1"),
        ("ADDED", "b", "2"),
        ("ADDED", "c", "3"),
        ("ADDED", "d", "11"),
        ("DELETED", "b", "2"),
        ("MODIFIED", "a", "12"),
        ("ADDED", "e", "19"),
        ("MODIFIED", "c", "20"),
        # The relist after the error event holds c at 3 (older than the copy): kept, not delivered.
    ]
    assert reflector.synced.is_set()
    assert all(o["kind"] == "Pod" and o["apiVersion"] == "v1" for o in mirror.list("Pod"))
    # Three waits (refused, reset, error event), growing from 0.8 s with jitter.
    assert len(slept) == 3 and 0.8 <= slept[0] <= 1.6 and 1.6 <= slept[1] <= 3.2
    assert reflector.stats.gone == 1 and reflector.stats.bookmarks == 1 and reflector.stats.relists == 2


def test_a_410_right_after_a_list_backs_off_instead_of_spinning():
    status_410 = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    client = _Scripted(
        lists=[_page([_obj("a", "1")], "5"), _page([_obj("a", "1")], "6"), _page([_obj("a", "1")], "7")],
        watches=[[{"type": "ERROR", "object": status_410}], [{"type": "ERROR", "object": status_410}]],
    )
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    kinds = {"Pod": KindInfo("Pod", "", "v1", "pods", True, "v1")}
    reflector = Reflector(client, Discovery(kinds), "Pod", MirrorStore(), sleep=sleep)  # type: ignore[arg-type]

    _run_until_scripted_out(reflector, client)
    assert [what for what, _ in client.asked] == ["list", "watch", "list", "watch", "list", "watch"]
    assert len(slept) == 2 and slept[1] >= 1.6
