"""The PV and claim assume caches: upstream ``volumebinding/assume_cache_test.go`` (case names
verbatim), plus the caches following the shared informers."""

from __future__ import annotations

import pytest

from kubesched.api.storage import SELECTED_NODE_ANNOTATION, PersistentVolume, PersistentVolumeClaim
from kubesched.plugins.helper.assume_cache import AssumeCacheError
from kubesched.plugins.volumebinding.assume_cache import PVAssumeCache, PVCAssumeCache, claim_key
from kubesched.plugins.volumebinding.test_utils import make_pv
from kubesched.plugins.volumebinding.volume_helpers import claim_with_selected_node, get_bind_volume_to_claim
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory


def pv(name: str, class_name: str, version: str) -> PersistentVolume:
    return make_pv(name, class_name).with_version(version).pv


def claim(name: str, version: str, namespace: str) -> PersistentVolumeClaim:
    return PersistentVolumeClaim.from_dict(
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": version, "annotations": {}},
        }
    )


def verify_list_pvs(cache: PVAssumeCache, expected: dict[str, PersistentVolume], class_name: str) -> None:
    got = cache.list_pvs(class_name)
    assert len(got) == len(expected)
    for volume in got:
        assert expected[volume.name] is volume


ASSUME_PV: list[tuple[str, PersistentVolume, PersistentVolume, bool]] = [
    ("success-same-version", pv("pv1", "", "5"), pv("pv1", "", "5"), True),
    ("success-storageclass-same-version", pv("pv1", "class1", "5"), pv("pv1", "class1", "5"), True),
    ("success-new-higher-version", pv("pv1", "", "5"), pv("pv1", "", "6"), True),
    ("fail-old-not-found", pv("pv2", "", "5"), pv("pv1", "", "5"), False),
    ("fail-new-lower-version", pv("pv1", "", "5"), pv("pv1", "", "4"), False),
    ("fail-new-bad-version", pv("pv1", "", "5"), pv("pv1", "", "a"), False),
    ("fail-old-bad-version", pv("pv1", "", "a"), pv("pv1", "", "5"), False),
]


@pytest.mark.parametrize(("name", "old", "new", "ok"), ASSUME_PV, ids=[c[0] for c in ASSUME_PV])
def test_assume_pv(name: str, old: PersistentVolume, new: PersistentVolume, ok: bool) -> None:
    cache = PVAssumeCache(None)
    cache.add(old)
    assert cache.get_pv(old.name) is old
    if ok:
        cache.assume(new)
    else:
        with pytest.raises(AssumeCacheError):
            cache.assume(new)
    assert cache.get_pv(old.name) is (new if ok else old)


def test_restore_pv() -> None:
    cache = PVAssumeCache(None)
    old, new = pv("pv1", "", "5"), pv("pv1", "", "5")
    cache.restore("nothing")
    cache.add(old)
    assert cache.get_pv("pv1") is old
    cache.restore("pv1")
    assert cache.get_pv("pv1") is old
    cache.assume(new)
    assert cache.get_pv("pv1") is new
    cache.restore("pv1")
    assert cache.get_pv("pv1") is old


def test_basic_pv_cache() -> None:
    cache = PVAssumeCache(None)
    with pytest.raises(AssumeCacheError):
        cache.get_pv("nothere")
    pvs = {f"test-pv{i}": pv(f"test-pv{i}", "", "1") for i in range(10)}
    for volume in pvs.values():
        cache.add(volume)
    verify_list_pvs(cache, pvs, "")
    updated = pv("test-pv3", "", "2")
    pvs[updated.name] = updated
    cache.update(None, updated)
    verify_list_pvs(cache, pvs, "")
    deleted = pvs.pop("test-pv7")
    cache.delete(deleted)
    verify_list_pvs(cache, pvs, "")


def test_pv_cache_with_storage_classes() -> None:
    cache = PVAssumeCache(None)
    pvs1 = {f"test-pv{i}": pv(f"test-pv{i}", "class1", "1") for i in range(10)}
    pvs2 = {f"test2-pv{i}": pv(f"test2-pv{i}", "class2", "1") for i in range(10)}
    for volume in [*pvs1.values(), *pvs2.values()]:
        cache.add(volume)
    verify_list_pvs(cache, pvs1, "class1")
    verify_list_pvs(cache, pvs2, "class2")
    updated = pv("test-pv3", "class1", "2")
    pvs1[updated.name] = updated
    cache.update(None, updated)
    verify_list_pvs(cache, pvs1, "class1")
    verify_list_pvs(cache, pvs2, "class2")
    deleted = pvs1.pop("test-pv7")
    cache.delete(deleted)
    verify_list_pvs(cache, pvs1, "class1")
    verify_list_pvs(cache, pvs2, "class2")


def test_assume_update_pv_cache() -> None:
    cache = PVAssumeCache(None)
    volume = pv("test-pv0", "", "1")
    cache.add(volume)
    assert cache.get_pv("test-pv0") is volume
    new, _ = get_bind_volume_to_claim(volume, claim("test-claim", "1", "default"))
    cache.assume(new)
    assert cache.get_pv("test-pv0") is new
    # The informer delivering the old PV again does not undo the assumption.
    cache.add(volume)
    assert cache.get_pv("test-pv0") is new


ASSUME_PVC: list[tuple[str, PersistentVolumeClaim, PersistentVolumeClaim, bool]] = [
    ("success-same-version", claim("pvc1", "5", "ns1"), claim("pvc1", "5", "ns1"), True),
    ("success-new-higher-version", claim("pvc1", "5", "ns1"), claim("pvc1", "6", "ns1"), True),
    ("fail-old-not-found", claim("pvc2", "5", "ns1"), claim("pvc1", "5", "ns1"), False),
    ("fail-new-lower-version", claim("pvc1", "5", "ns1"), claim("pvc1", "4", "ns1"), False),
    ("fail-new-bad-version", claim("pvc1", "5", "ns1"), claim("pvc1", "a", "ns1"), False),
    ("fail-old-bad-version", claim("pvc1", "a", "ns1"), claim("pvc1", "5", "ns1"), False),
]


@pytest.mark.parametrize(("name", "old", "new", "ok"), ASSUME_PVC, ids=[c[0] for c in ASSUME_PVC])
def test_assume_pvc(name: str, old: PersistentVolumeClaim, new: PersistentVolumeClaim, ok: bool) -> None:
    cache = PVCAssumeCache(None)
    cache.add(old)
    assert cache.get_pvc(claim_key(old)) is old
    if ok:
        cache.assume(new)
    else:
        with pytest.raises(AssumeCacheError):
            cache.assume(new)
    assert cache.get_pvc(claim_key(old)) is (new if ok else old)


def test_restore_pvc() -> None:
    cache = PVCAssumeCache(None)
    old, new = claim("pvc1", "5", "ns1"), claim("pvc1", "5", "ns1")
    cache.restore("nothing")
    cache.add(old)
    assert cache.get_pvc("ns1/pvc1") is old
    cache.restore("ns1/pvc1")
    assert cache.get_pvc("ns1/pvc1") is old
    cache.assume(new)
    assert cache.get_pvc("ns1/pvc1") is new
    cache.restore("ns1/pvc1")
    assert cache.get_pvc("ns1/pvc1") is old


def test_assume_update_pvc_cache() -> None:
    cache = PVCAssumeCache(None)
    pvc = claim("test-pvc0", "1", "test-ns")
    cache.add(pvc)
    assert cache.get_pvc("test-ns/test-pvc0") is pvc
    new = claim_with_selected_node(pvc, "test-node", SELECTED_NODE_ANNOTATION)
    cache.assume(new)
    assert cache.get_pvc("test-ns/test-pvc0") is new
    cache.add(pvc)
    assert cache.get_pvc("test-ns/test-pvc0") is new


def test_caches_follow_the_informers() -> None:
    store = MemoryStore()
    informers = informer_factory(store)
    store.create(make_pv("pv-1", "fast").obj)
    pvs = PVAssumeCache(informers.informer("PersistentVolume"))
    claims = PVCAssumeCache(informers.informer("PersistentVolumeClaim"))
    assert [v.name for v in pvs.list_pvs("fast")] == ["pv-1"]  # listed when subscribed
    store.create({"kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "ns"}})
    informers.pump()
    assert claims.get_pvc("ns/c").name == "c"
    assumed, dirty = get_bind_volume_to_claim(pvs.get_pv("pv-1"), claims.get_pvc("ns/c"))
    assert dirty
    pvs.assume(assumed)
    # The write of the assumed volume comes back with a newer version and replaces it.
    written = store.update(dict(assumed.raw))
    informers.pump()
    assert pvs.get_pv("pv-1").resource_version == written["metadata"]["resourceVersion"]
    assert pvs.get_api_pv("pv-1") is pvs.get_pv("pv-1")
    store.delete("PersistentVolume", None, "pv-1")
    informers.pump()
    assert pvs.list_pvs("fast") == []
