"""Reflectors against a served cluster: the mirror follows the server through creates, updates and
deletes, cut streams, a restarted server, an expired resourceVersion and a slow network, applying
every change exactly once."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from tests.remote.conftest import pod

from kubesched.remote.discovery import Discovery
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.reflector import Backoff, ReflectorSet
from kubesched.store.base import WatchEvent
from kubesched.store.sqlite import SqliteStore

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
