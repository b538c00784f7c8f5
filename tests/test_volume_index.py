"""The cache's volume index follows every pod change the cache sees: assumed, confirmed, forgotten,
moved to another node, removed — what VolumeRestrictions reads instead of scanning all pods."""

from __future__ import annotations

from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.plugins.testing import make_node
from kubesched.plugins.testing_volumes import claim_volume, pod_with_volumes, volume

DISK = volume("d", "gcePersistentDisk", {"pdName": "pd-1"})


def cache_with(*nodes: str) -> SchedulerCache:
    cache = SchedulerCache()
    for name in nodes:
        cache.add_node(make_node(name, {"cpu": "4", "memory": "8Gi", "pods": "110"}))
    return cache


def slots_of(cache: SchedulerCache, *names: str) -> dict[str, int]:
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return {n: snapshot.table.slot_of[n] for n in names}


def test_claim_users_follow_assume_confirm_forget() -> None:
    cache = cache_with("a", "b")
    slot = slots_of(cache, "a", "b")
    index = cache.volume_index
    pod = pod_with_volumes("p", [claim_volume("data"), claim_volume("logs")], uid="u1")
    cache.assume_pod(pod, "a")
    assert dict(index.claim_users("default", "data")) == {slot["a"]: 1}
    bound = pod_with_volumes("p", [claim_volume("data"), claim_volume("logs")], uid="u1", node_name="a")
    cache.add_pod(bound)  # the informer confirms the assumption
    assert dict(index.claim_users("default", "data")) == {slot["a"]: 1}
    other = pod_with_volumes("q", [claim_volume("data")], uid="u2", node_name="b")
    cache.add_pod(other)
    assert dict(index.claim_users("default", "data")) == {slot["a"]: 1, slot["b"]: 1}
    assert dict(index.claim_users("other-namespace", "data")) == {}
    cache.remove_pod(bound)
    assert dict(index.claim_users("default", "data")) == {slot["b"]: 1}
    assert dict(index.claim_users("default", "logs")) == {}
    forgotten = pod_with_volumes("r", [claim_volume("data")], uid="u3")
    cache.assume_pod(forgotten, "b")
    assert dict(index.claim_users("default", "data")) == {slot["b"]: 2}
    cache.forget_pod(forgotten)
    assert dict(index.claim_users("default", "data")) == {slot["b"]: 1}


def test_inline_disk_pods_follow_moves_and_removals() -> None:
    cache = cache_with("a", "b")
    slot = slots_of(cache, "a", "b")
    index = cache.volume_index
    cache.add_pod(pod_with_volumes("plain", uid="u0", node_name="a"))
    cache.add_pod(pod_with_volumes("cfg", [volume("c", "configMap", {"name": "c"})], uid="u1", node_name="a"))
    assert list(index.disk_pods()) == []
    pod = pod_with_volumes("p", [DISK], uid="u2", node_name="a")
    cache.add_pod(pod)
    assert [(s, p.name) for s, p in index.disk_pods()] == [(slot["a"], "p")]
    # Seen again on another node (the informer is the truth): the index moves with it.
    moved = pod_with_volumes("p", [DISK], uid="u2", node_name="b")
    cache.update_pod(moved)
    assert [(s, p.name) for s, p in index.disk_pods()] == [(slot["b"], "p")]
    cache.remove_pod(moved)
    assert list(index.disk_pods()) == []
