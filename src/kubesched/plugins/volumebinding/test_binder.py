"""The volume binder: upstream ``volumebinding/binder_test.go`` (scenario names verbatim) —
``TestFindPodVolumesWithoutProvisioning``, ``...WithProvisioning``, ``...WithCSIMigration``,
``TestAssumePodVolumes``, ``TestRevertAssumedPodVolumes``, ``TestBindAPIUpdate``, ``TestCheckBindings``,
``TestCheckBindingsWithCSIMigration``, ``TestBindPodVolumes``, ``TestFindAssumeVolumes`` and
``TestCapacity``.

As upstream's test environment: the PV and claim caches are fed directly (the "cached" objects), a
fake API (:class:`Reactor`, upstream's ``VolumeReactor``) keeps the "API" objects, refuses a write
of a stale resourceVersion and echoes what it wrote back into the caches as the informer would;
nodes, pods, CSINodes, classes, drivers and capacities come from informers over a store. Upstream's
``BindPodVolumes`` polls while goroutines change the cluster 5 seconds in; here the wait runs those
changes after its first look, then looks again.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    MIGRATED_PLUGINS_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kubesched.plugins.testing import build_snapshot
from kubesched.plugins.volumebinding.assume_cache import PVAssumeCache, PVCAssumeCache, claim_key
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from kubesched.plugins.volumebinding.test_utils import (
    Obj,
    capacity,
    csi_driver,
    make_node,
    make_pod,
    storage_class,
)
from kubesched.store.base import Conflict, NotFound
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

PROVISIONER = "test-provisioner"
WAIT_CLASS = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
WAIT_CLASS_WITH_PROVISIONER = "waitClassWithProvisioner"
TOPO_MISMATCH_CLASS = "topoMismatchClass"
NODE_LABEL_KEY = "nodeKey"
NODE_LABEL_VALUE = "node1"
NAMESPACE = "testns"
POD_UID = "test-pod-uid"

UNBOUND, PREBOUND, BOUND, SELECTED_NODE = range(4)


# -- objects (upstream makeTestPVC, makeTestPV, ...) ----------------------------------------------------


def make_test_pvc(
    name: str, size: str, node: str, state: int, pv_name: str, version: str, class_name: str
) -> PersistentVolumeClaim:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": "pvc-uid",
        "resourceVersion": version,
    }
    spec: dict[str, Any] = {
        "resources": {"requests": {"storage": size}},
        "storageClassName": class_name,
        "volumeMode": "Filesystem",
    }
    if state == SELECTED_NODE:
        meta["annotations"] = {SELECTED_NODE_ANNOTATION: node}
    if state == BOUND:
        meta["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
    if state in (BOUND, PREBOUND):
        spec["volumeName"] = pv_name
    return PersistentVolumeClaim.from_dict(
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    )


def make_test_pv(
    name: str, node: str, size: str, version: str, bound_to: PersistentVolumeClaim | None, class_name: str
) -> PersistentVolume:
    meta: dict[str, Any] = {"name": name, "resourceVersion": version}
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "storageClassName": class_name,
        "volumeMode": "Filesystem",
    }
    if node:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": NODE_LABEL_KEY, "operator": "In", "values": [node]}]}
                ]
            }
        }
    if bound_to is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "resourceVersion": bound_to.resource_version,
            "name": bound_to.name,
            "namespace": bound_to.namespace,
            "uid": bound_to.uid,
        }
        meta["annotations"] = {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
    return PersistentVolume.from_dict(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": meta,
            "spec": spec,
            "status": {"phase": "Available"},
        }
    )


def make_test_pv_for_csi_migration(
    labels: dict[str, str], claim: PersistentVolumeClaim, migration: bool
) -> PersistentVolume:
    raw = copy.deepcopy(dict(make_test_pv("pv-migration-bound", "node1", "1G", "1", claim, WAIT_CLASS).raw))
    del raw["spec"]["nodeAffinity"]  # the CSI translation writes it
    raw["metadata"]["labels"] = dict(labels)
    if migration:
        raw["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4"}
    else:
        raw["spec"]["rbd"] = {"image": "test-disk"}
    return PersistentVolume.from_dict(raw)


def make_generic_ephemeral_pvc(volume_name: str, owned: bool) -> PersistentVolumeClaim:
    claim = make_test_pvc(f"test-pod-{volume_name}", "1G", "", BOUND, "pv-bound", "1", IMMEDIATE_CLASS)
    raw = copy.deepcopy(dict(claim.raw))
    if owned:
        raw["metadata"]["ownerReferences"] = [{"name": "test-pod", "uid": POD_UID, "controller": True}]
    return PersistentVolumeClaim.from_dict(raw)


def with_annotations(
    claim: PersistentVolumeClaim, annotations: dict[str, str] | None
) -> PersistentVolumeClaim:
    raw = copy.deepcopy(dict(claim.raw))
    if annotations is None:
        raw["metadata"].pop("annotations", None)
    else:
        raw["metadata"]["annotations"] = annotations
    return PersistentVolumeClaim.from_dict(raw)


def pvc_set_selected_node(claim: PersistentVolumeClaim, node: str) -> PersistentVolumeClaim:
    return with_annotations(claim, {**claim.annotations, SELECTED_NODE_ANNOTATION: node})


def pvc_set_empty_annotations(claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
    return with_annotations(claim, {})


def add_provision_ann(claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
    return pvc_set_selected_node(claim, NODE_LABEL_VALUE)


def pv_remove_claim_uid(pv: PersistentVolume) -> PersistentVolume:
    raw = copy.deepcopy(dict(pv.raw))
    raw["spec"]["claimRef"]["uid"] = ""
    return PersistentVolume.from_dict(raw)


def make_binding(claim: PersistentVolumeClaim, pv: PersistentVolume) -> BindingInfo:
    return BindingInfo(claim, pv)


def make_csi_node(name: str, migrated: str) -> Obj:
    return {
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": {MIGRATED_PLUGINS_ANNOTATION: migrated}},
        "spec": {"drivers": []},
    }


def node_obj(name: str, **labels: str) -> Obj:
    b = make_node(name)
    b.obj["metadata"]["labels"] = dict(labels)
    return b.obj


# PVCs for manual binding
unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT_CLASS)
unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT_CLASS)
prebound_pvc = make_test_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT_CLASS)
prebound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT_CLASS)
bound_pvc = make_test_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT_CLASS)
bound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", BOUND, "pv-node1a", "1", WAIT_CLASS)
immediate_unbound_pvc = make_test_pvc("immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE_CLASS)
immediate_bound_pvc = make_test_pvc(
    "immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1", IMMEDIATE_CLASS
)
# PVCs for dynamic provisioning
provisioned_pvc = make_test_pvc("provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc2 = make_test_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc_higher_version = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", UNBOUND, "", "2", WAIT_CLASS_WITH_PROVISIONER
)
provisioned_pvc_bound = make_test_pvc(
    "provisioned-pvc", "1Gi", "", BOUND, "pv-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)
no_provisioner_pvc = make_test_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS)
topo_mismatch_pvc = make_test_pvc("topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH_CLASS)
selected_node_pvc = make_test_pvc(
    "provisioned-pvc", "1Gi", NODE_LABEL_VALUE, SELECTED_NODE, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
# PVCs for CSI migration
bound_migration_pvc = make_test_pvc(
    "pvc-migration-bound", "1G", "", BOUND, "pv-migration-bound", "1", WAIT_CLASS
)
prov_migration_pvc_bound = make_test_pvc(
    "pvc-migration-provisioned", "1Gi", "", BOUND, "pv-migration-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)
# PVCs and PV for GenericEphemeralVolume
conflicting_generic_pvc = make_generic_ephemeral_pvc("test-volume", False)
correct_generic_pvc = make_generic_ephemeral_pvc("test-volume", True)
pv_bound_generic = make_test_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT_CLASS)
# PVs for manual binding
pv_node1a = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
pv_node1b = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
pv_node1c = make_test_pv("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
pv_node2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
pv_bound = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
pv_node1a_bound = make_test_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT_CLASS)
pv_node1b_bound = make_test_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT_CLASS)
pv_node1b_bound_higher_version = make_test_pv("pv-node1b", "node1", "10G", "2", unbound_pvc2, WAIT_CLASS)
pv_bound_immediate = make_test_pv(
    "pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)
pv_bound_immediate_node2 = make_test_pv(
    "pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)
# PVs for CSI migration
ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}
migration_pv_bound = make_test_pv_for_csi_migration(ZONE1_LABELS, bound_migration_pvc, True)
migration_pv_bound_to_unbound = make_test_pv_for_csi_migration(ZONE1_LABELS, unbound_pvc, True)
nonmigration_pv_bound_to_unbound = make_test_pv_for_csi_migration(ZONE1_LABELS, unbound_pvc, False)
# nodes
node1 = node_obj("node1", nodeKey="node1")
node2 = node_obj("node2", nodeKey="node2")
node1_no_labels = node_obj("node1")
node1_zone1 = node_obj("node1", **{"topology.gke.io/zone": "us-east-1"})
node1_zone2 = node_obj("node1", **{"topology.gke.io/zone": "us-east-2"})
# CSINodes
csi_node1_migrated = make_csi_node("node1", "kubernetes.io/gce-pd")
csi_node1_not_migrated = make_csi_node("node1", "")
# CSIStorageCapacities (all named alike: a later one replaces an earlier one, as in upstream's indexer)
network_attached_capacity = capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi")
node1_capacity = capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Gi")
node2_capacity = capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node2"}, "1Gi")

CLASSES = [
    storage_class(
        WAIT_CLASS_WITH_PROVISIONER,
        "WaitForFirstConsumer",
        PROVISIONER,
        allowedTopologies=[
            {
                "matchLabelExpressions": [
                    {"key": NODE_LABEL_KEY, "values": [NODE_LABEL_VALUE, "reference-value"]}
                ]
            }
        ],
    ),
    storage_class(IMMEDIATE_CLASS, "Immediate"),
    storage_class(WAIT_CLASS, "WaitForFirstConsumer"),
    storage_class(
        TOPO_MISMATCH_CLASS,
        "WaitForFirstConsumer",
        PROVISIONER,
        allowedTopologies=[
            {"matchLabelExpressions": [{"key": NODE_LABEL_KEY, "values": ["reference-value"]}]}
        ],
    ),
]


# -- the test environment -------------------------------------------------------------------------------


def _bump(raw: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    out["metadata"]["resourceVersion"] = str(int(out["metadata"].get("resourceVersion") or 0) + 1)
    return out


class Reactor:
    """The API objects: a write must carry the stored resourceVersion, and bumps it."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.pvs: dict[str, dict[str, Any]] = {}
        self.pvcs: dict[str, dict[str, Any]] = {}

    def add_volume(self, pv: PersistentVolume) -> None:
        self.pvs[pv.name] = copy.deepcopy(dict(pv.raw))

    def add_claim(self, claim: PersistentVolumeClaim) -> None:
        self.pvcs[claim_key(claim)] = copy.deepcopy(dict(claim.raw))

    def _write(self, objects: dict[str, dict[str, Any]], key: str, obj: Any) -> dict[str, Any]:
        stored = objects.get(key)
        if stored is None:
            raise NotFound(f"{key} not found")
        if obj["metadata"].get("resourceVersion") != stored["metadata"].get("resourceVersion"):
            raise Conflict(f"{key}: the object has been modified")
        objects[key] = _bump(dict(obj))
        return copy.deepcopy(objects[key])

    def update_persistent_volume(self, obj: Any) -> Any:
        written = self._write(self.pvs, obj["metadata"]["name"], obj)
        self.env.pv_cache.add(PersistentVolume.from_dict(written))  # the informer's echo
        return written

    def update_persistent_volume_claim(self, obj: Any) -> Any:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        written = self._write(self.pvcs, key, obj)
        self.env.pvc_cache.add(PersistentVolumeClaim.from_dict(written))
        return written

    def create_persistent_volume(self, pv: PersistentVolume) -> None:
        self.pvs[pv.name] = copy.deepcopy(dict(pv.raw))
        self.env.pv_cache.add(pv)


class Env:
    def __init__(self) -> None:
        self.store = MemoryStore()
        for obj in CLASSES:
            self.store.create(dict(obj))
        self.informers = informer_factory(self.store)
        self.pv_cache = PVAssumeCache(None)
        self.pvc_cache = PVCAssumeCache(None)
        self.reactor = Reactor(self)
        #: Cluster changes the wait makes happen after its first look.
        self.later: list[Callable[[], None]] = []
        self.binder = VolumeBinder(
            self.informers, self.reactor, self.pv_cache, self.pvc_cache, 10.0, self.wait
        )

    def wait(self, condition: Callable[[], bool], timeout: float) -> bool:
        if condition():
            return True
        later, self.later = self.later, []
        for change in later:
            change()
        self.informers.pump()
        return condition()

    def create(self, *objs: Obj) -> None:
        for obj in objs:
            existing = self.store.get(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
            if existing is None:
                self.store.create(copy.deepcopy(obj))
            else:
                self.store.update(copy.deepcopy(obj))
        self.informers.pump()

    def add_pod(self, pod: Pod) -> None:
        self.create(copy.deepcopy(dict(pod.raw)))

    def init_volumes(
        self, cached: Sequence[PersistentVolume], api: Sequence[PersistentVolume] | None
    ) -> None:
        for pv in cached:
            self.pv_cache.add(pv)
        for pv in cached if api is None else api:
            self.reactor.add_volume(pv)

    def init_claims(
        self, cached: Sequence[PersistentVolumeClaim], api: Sequence[PersistentVolumeClaim] | None
    ) -> None:
        for claim in cached:
            self.pvc_cache.add(claim)
        for claim in cached if api is None else api:
            self.reactor.add_claim(claim)

    def update_volumes(self, pvs: Sequence[PersistentVolume]) -> None:
        for pv in pvs:
            self.reactor.update_persistent_volume(dict(pv.raw))

    def update_claims(self, claims: Sequence[PersistentVolumeClaim]) -> None:
        for claim in claims:
            self.reactor.update_persistent_volume_claim(dict(claim.raw))

    def assume_volumes(
        self, bindings: Sequence[BindingInfo], provisionings: Sequence[PersistentVolumeClaim]
    ) -> None:
        for binding in bindings:
            self.pv_cache.assume(binding.pv)
        for claim in provisionings:
            self.pvc_cache.assume(claim)

    def find_pod_volumes(self, pod: Pod, node: Obj) -> tuple[PodVolumes, list[str]]:
        claims = self.binder.get_pod_volume_claims(pod)
        if claims.unbound_claims_immediate:
            raise BinderError("pod has unbound immediate PersistentVolumeClaims")
        snapshot = build_snapshot([Node.from_dict(node)])
        outcome = self.binder.find_pod_volumes(pod, claims, snapshot.table)
        slot = snapshot.table.slot_of[node["metadata"]["name"]]
        return outcome.pod_volumes(slot), outcome.reasons(slot)


def make_test_pod(pvcs: Sequence[PersistentVolumeClaim] = ()) -> Pod:
    return (
        make_pod("test-pod")
        .with_namespace(NAMESPACE)
        .with_uid(POD_UID)
        .with_node_name("node1")
        .with_pvcs_volume(pvcs)
        .pod
    )


def pv_id(pv: PersistentVolume) -> tuple[Any, ...]:
    ref = pv.claim_ref
    return (
        pv.name,
        None if ref is None else (ref.namespace, ref.name, ref.uid),
        pv.annotations.get(BOUND_BY_CONTROLLER_ANNOTATION),
        pv.capacity,
    )


def pvc_id(claim: PersistentVolumeClaim) -> tuple[Any, ...]:
    return (claim_key(claim), claim.annotations.get(SELECTED_NODE_ANNOTATION), claim.volume_name)


def cap_name(cap: CSIStorageCapacity | None) -> str | None:
    return None if cap is None else f"{cap.name}:{sorted(r.values for r in cap.node_topology.requirements)}"


def validate_pod_cache(
    volumes: PodVolumes | None,
    bindings: Sequence[BindingInfo] | None,
    provisions: Sequence[DynamicProvision] | None,
) -> None:
    got_b = volumes.static_bindings if volumes is not None else None
    got_p = volumes.dynamic_provisions if volumes is not None else None
    assert (got_b is None) == (bindings is None), (got_b, bindings)
    assert [(pvc_id(b.pvc), pv_id(b.pv)) for b in got_b or []] == [
        (pvc_id(b.pvc), pv_id(b.pv)) for b in bindings or []
    ]
    assert (got_p is None) == (provisions is None), (got_p, provisions)
    assert [(pvc_id(p.pvc), cap_name(p.node_capacity)) for p in got_p or []] == [
        (pvc_id(p.pvc), cap_name(p.node_capacity)) for p in provisions or []
    ]


def validate_assume(
    env: Env, bindings: Sequence[BindingInfo], provisionings: Sequence[PersistentVolumeClaim]
) -> None:
    for b in bindings:
        pv = env.pv_cache.get_pv(b.pv.name)
        assert pv.claim_ref is not None
        assert (pv.claim_ref.name, pv.claim_ref.namespace) == (b.pvc.name, b.pvc.namespace)
    for claim in provisionings:
        assert (
            env.pvc_cache.get_pvc(claim_key(claim)).annotations.get(SELECTED_NODE_ANNOTATION)
            == NODE_LABEL_VALUE
        )


def validate_cache_restored(
    env: Env, bindings: Sequence[BindingInfo], provisionings: Sequence[PersistentVolumeClaim]
) -> None:
    for b in bindings:
        try:
            pv = env.pv_cache.get_pv(b.pv.name)
        except Exception:
            continue  # missing from the cache
        assert pv is env.pv_cache.get_api_pv(b.pv.name), b.pv.name
    for claim in provisionings:
        assert SELECTED_NODE_ANNOTATION not in env.pvc_cache.get_pvc(claim_key(claim)).annotations


def run_find(env: Env, pod: Pod, node: Obj, should_fail: bool) -> tuple[PodVolumes | None, list[str]]:
    if should_fail:
        with pytest.raises(BinderError):
            env.find_pod_volumes(pod, node)
        return None, []
    return env.find_pod_volumes(pod, node)


TEST_NODE = node_obj("node1", nodeKey="node1")
CSI_DRIVERS: dict[str, Obj | None] = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": csi_driver(PROVISIONER, False),
}


# -- FindPodVolumes -------------------------------------------------------------------------------------


@dataclass
class FindScenario:
    pvs: list[PersistentVolume] = field(default_factory=list)
    pod_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    cache_pvcs: list[PersistentVolumeClaim] | None = None
    pod: Pod | None = None
    expected_bindings: list[BindingInfo] | None = None
    expected_provisions: list[DynamicProvision] | None = None
    reasons: list[str] = field(default_factory=list)
    should_fail: bool = False
    needs_capacity: bool = False


WITHOUT_PROVISIONING: dict[str, FindScenario] = {
    "no-volumes": FindScenario(
        pod=make_pod("test-pod").with_namespace(NAMESPACE).with_node_name("node1").pod
    ),
    "no-pvcs": FindScenario(
        pod=make_pod("test-pod").with_namespace(NAMESPACE).with_node_name("node1").with_empty_dir_volume().pod
    ),
    "pvc-not-found": FindScenario(cache_pvcs=[], pod_pvcs=[bound_pvc], should_fail=True),
    "bound-pvc": FindScenario(pod_pvcs=[bound_pvc], pvs=[pv_bound]),
    "bound-pvc,pv-not-exists": FindScenario(pod_pvcs=[bound_pvc], reasons=[ERR_REASON_PV_NOT_EXIST]),
    "prebound-pvc": FindScenario(pod_pvcs=[prebound_pvc], pvs=[pv_node1a_bound], should_fail=True),
    "unbound-pvc,pv-same-node": FindScenario(
        pod_pvcs=[unbound_pvc],
        pvs=[pv_node2, pv_node1a, pv_node1b],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a)],
    ),
    "unbound-pvc,pv-different-node": FindScenario(
        pod_pvcs=[unbound_pvc], pvs=[pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "two-unbound-pvcs": FindScenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a, pv_node1b],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a), make_binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,order-by-size": FindScenario(
        pod_pvcs=[unbound_pvc2, unbound_pvc],
        pvs=[pv_node1a, pv_node1b],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a), make_binding(unbound_pvc2, pv_node1b)],
    ),
    "two-unbound-pvcs,partial-match": FindScenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a)],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-bound,one-unbound": FindScenario(
        pod_pvcs=[unbound_pvc, bound_pvc],
        pvs=[pv_bound, pv_node1a],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a)],
    ),
    "one-bound,one-unbound,no-match": FindScenario(
        pod_pvcs=[unbound_pvc, bound_pvc], pvs=[pv_bound, pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "one-prebound,one-unbound": FindScenario(
        pod_pvcs=[unbound_pvc, prebound_pvc], pvs=[pv_node1a, pv_node1b], should_fail=True
    ),
    "immediate-bound-pvc": FindScenario(pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate]),
    "immediate-bound-pvc-wrong-node": FindScenario(
        pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate_node2], reasons=[ERR_REASON_NODE_CONFLICT]
    ),
    "immediate-unbound-pvc": FindScenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": FindScenario(
        pod_pvcs=[immediate_unbound_pvc, bound_pvc], pvs=[pv_bound], should_fail=True
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": FindScenario(
        pod_pvcs=[immediate_unbound_pvc, unbound_pvc], should_fail=True
    ),
    "generic-ephemeral,no-pvc": FindScenario(
        pod=make_pod("test-pod")
        .with_namespace(NAMESPACE)
        .with_uid(POD_UID)
        .with_node_name("node1")
        .with_generic_ephemeral_volume("no-such-pvc")
        .pod,
        should_fail=True,
    ),
    "generic-ephemeral,with-pvc": FindScenario(
        pod=make_pod("test-pod")
        .with_namespace(NAMESPACE)
        .with_uid(POD_UID)
        .with_node_name("node1")
        .with_generic_ephemeral_volume("test-volume")
        .pod,
        cache_pvcs=[correct_generic_pvc],
        pvs=[pv_bound_generic],
    ),
    "generic-ephemeral,wrong-pvc": FindScenario(
        pod=make_pod("test-pod")
        .with_namespace(NAMESPACE)
        .with_uid(POD_UID)
        .with_node_name("node1")
        .with_generic_ephemeral_volume("test-volume")
        .pod,
        cache_pvcs=[conflicting_generic_pvc],
        pvs=[pv_bound_generic],
        should_fail=True,
    ),
}


def _find_env(scenario: FindScenario, driver: Obj | None) -> tuple[Env, Pod]:
    env = Env()
    env.init_volumes(scenario.pvs, scenario.pvs)
    if driver is not None:
        env.create(driver)
    cached = scenario.pod_pvcs if scenario.cache_pvcs is None else scenario.cache_pvcs
    env.init_claims(cached, cached)
    return env, scenario.pod or make_test_pod(scenario.pod_pvcs)


@pytest.mark.parametrize("driver", list(CSI_DRIVERS))
@pytest.mark.parametrize("name", list(WITHOUT_PROVISIONING))
def test_find_pod_volumes_without_provisioning(driver: str, name: str) -> None:
    scenario = WITHOUT_PROVISIONING[name]
    env, pod = _find_env(scenario, CSI_DRIVERS[driver])
    volumes, reasons = run_find(env, pod, TEST_NODE, scenario.should_fail)
    assert sorted(reasons) == sorted(scenario.reasons)
    if volumes is not None:
        validate_pod_cache(volumes, scenario.expected_bindings, None)


WITH_PROVISIONING: dict[str, FindScenario] = {
    "one-provisioned": FindScenario(
        pod_pvcs=[provisioned_pvc],
        expected_provisions=[DynamicProvision(provisioned_pvc)],
        needs_capacity=True,
    ),
    "two-unbound-pvcs,one-matched,one-provisioned": FindScenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc],
        pvs=[pv_node1a],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a)],
        expected_provisions=[DynamicProvision(provisioned_pvc)],
        needs_capacity=True,
    ),
    "one-bound,one-provisioned": FindScenario(
        pod_pvcs=[bound_pvc, provisioned_pvc],
        pvs=[pv_bound],
        expected_provisions=[DynamicProvision(provisioned_pvc)],
        needs_capacity=True,
    ),
    "one-binding,one-selected-node": FindScenario(
        pod_pvcs=[bound_pvc, selected_node_pvc],
        pvs=[pv_bound],
        expected_provisions=[DynamicProvision(selected_node_pvc)],
        needs_capacity=True,
    ),
    "immediate-unbound-pvc": FindScenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "one-immediate-bound,one-provisioned": FindScenario(
        pod_pvcs=[immediate_bound_pvc, provisioned_pvc],
        pvs=[pv_bound_immediate],
        expected_provisions=[DynamicProvision(provisioned_pvc)],
        needs_capacity=True,
    ),
    "invalid-provisioner": FindScenario(pod_pvcs=[no_provisioner_pvc], reasons=[ERR_REASON_BIND_CONFLICT]),
    "volume-topology-unsatisfied": FindScenario(
        pod_pvcs=[topo_mismatch_pvc], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
}


@pytest.mark.parametrize("driver", list(CSI_DRIVERS))
@pytest.mark.parametrize("name", list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(driver: str, name: str) -> None:
    scenario = WITH_PROVISIONING[name]
    csi = CSI_DRIVERS[driver]
    env, pod = _find_env(scenario, csi)
    volumes, reasons = run_find(env, pod, TEST_NODE, scenario.should_fail)
    want_reasons = list(scenario.reasons)
    want_provisions = scenario.expected_provisions
    if scenario.needs_capacity and csi is not None and csi["spec"].get("storageCapacity"):
        # Without CSIStorageCapacity objects, provisioning is blocked.
        want_reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        want_provisions = None
    assert sorted(reasons) == sorted(want_reasons)
    if volumes is not None:
        validate_pod_cache(volumes, scenario.expected_bindings, want_provisions)


@dataclass
class MigrationScenario:
    pod_pvcs: list[PersistentVolumeClaim]
    pvs: list[PersistentVolume]
    nodes: list[Obj]
    csi_nodes: list[Obj] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


WITH_CSI_MIGRATION: dict[str, MigrationScenario] = {
    "pvc-bound": MigrationScenario(
        [bound_migration_pvc], [migration_pv_bound], [node1_zone1], [csi_node1_migrated]
    ),
    "pvc-bound,csinode-not-migrated": MigrationScenario(
        [bound_migration_pvc], [migration_pv_bound], [node1_zone1], [csi_node1_not_migrated]
    ),
    "pvc-bound,missing-csinode": MigrationScenario(
        [bound_migration_pvc], [migration_pv_bound], [node1_zone1]
    ),
    "pvc-bound,node-different-zone": MigrationScenario(
        [bound_migration_pvc],
        [migration_pv_bound],
        [node1_zone2],
        [csi_node1_migrated],
        [ERR_REASON_NODE_CONFLICT],
    ),
}


@pytest.mark.parametrize("name", list(WITH_CSI_MIGRATION))
def test_find_pod_volumes_with_csi_migration(name: str) -> None:
    scenario = WITH_CSI_MIGRATION[name]
    env = Env()
    env.init_volumes(scenario.pvs, scenario.pvs)
    env.create(*scenario.nodes, *scenario.csi_nodes)
    env.init_claims(scenario.pod_pvcs, scenario.pod_pvcs)
    _, reasons = env.find_pod_volumes(make_test_pod(scenario.pod_pvcs), scenario.nodes[0])
    assert reasons == scenario.reasons


# -- AssumePodVolumes, RevertAssumedPodVolumes ----------------------------------------------------------


@dataclass
class AssumeScenario:
    pod_pvcs: list[PersistentVolumeClaim]
    pvs: list[PersistentVolume]
    bindings: list[BindingInfo] = field(default_factory=list)
    dynamic: list[DynamicProvision] = field(default_factory=list)
    should_fail: bool = False
    expected_all_bound: bool = False
    expected_bindings: list[BindingInfo] | None = None
    expected_provisionings: list[DynamicProvision] | None = None


ASSUME: dict[str, AssumeScenario] = {
    "all-bound": AssumeScenario([bound_pvc], [pv_bound], expected_all_bound=True),
    "one-binding": AssumeScenario(
        [unbound_pvc],
        [pv_node1a],
        [make_binding(unbound_pvc, pv_node1a)],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[],
    ),
    "two-bindings": AssumeScenario(
        [unbound_pvc, unbound_pvc2],
        [pv_node1a, pv_node1b],
        [make_binding(unbound_pvc, pv_node1a), make_binding(unbound_pvc2, pv_node1b)],
        expected_bindings=[
            make_binding(unbound_pvc, pv_node1a_bound),
            make_binding(unbound_pvc2, pv_node1b_bound),
        ],
        expected_provisionings=[],
    ),
    "pv-already-bound": AssumeScenario(
        [unbound_pvc],
        [pv_node1a_bound],
        [make_binding(unbound_pvc, pv_node1a_bound)],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[],
    ),
    "tmpupdate-failed": AssumeScenario(
        [unbound_pvc],
        [pv_node1a],
        [make_binding(unbound_pvc, pv_node1a), make_binding(unbound_pvc2, pv_node1b)],
        should_fail=True,
    ),
    "one-binding, one-pvc-provisioned": AssumeScenario(
        [unbound_pvc, provisioned_pvc],
        [pv_node1a],
        [make_binding(unbound_pvc, pv_node1a)],
        [DynamicProvision(provisioned_pvc)],
        expected_bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        expected_provisionings=[DynamicProvision(selected_node_pvc)],
    ),
    "one-binding, one-provision-tmpupdate-failed": AssumeScenario(
        [unbound_pvc, provisioned_pvc_higher_version],
        [pv_node1a],
        [make_binding(unbound_pvc, pv_node1a)],
        [DynamicProvision(provisioned_pvc2)],
        should_fail=True,
    ),
}


@pytest.mark.parametrize("name", list(ASSUME))
def test_assume_pod_volumes(name: str) -> None:
    s = ASSUME[name]
    env = Env()
    env.init_claims(s.pod_pvcs, s.pod_pvcs)
    pod = make_test_pod(s.pod_pvcs)
    volumes = PodVolumes(list(s.bindings), list(s.dynamic))
    env.init_volumes(s.pvs, s.pvs)
    if s.should_fail:
        with pytest.raises(BinderError):
            env.binder.assume_pod_volumes(pod, "node1", volumes)
        validate_cache_restored(env, s.bindings, [d.pvc for d in s.dynamic])
        validate_pod_cache(volumes, s.bindings, s.dynamic)
        return
    all_bound = env.binder.assume_pod_volumes(pod, "node1", volumes)
    assert all_bound == s.expected_all_bound
    bindings = s.bindings if s.expected_bindings is None else s.expected_bindings
    provisions = s.dynamic if s.expected_provisionings is None else s.expected_provisionings
    validate_assume(env, bindings, [d.pvc for d in provisions])
    validate_pod_cache(volumes, bindings, provisions)


def test_revert_assumed_pod_volumes() -> None:
    env = Env()
    pod_pvcs = [unbound_pvc, provisioned_pvc]
    bindings = [make_binding(unbound_pvc, pv_node1a)]
    env.init_claims(pod_pvcs, pod_pvcs)
    volumes = PodVolumes(list(bindings), [DynamicProvision(provisioned_pvc)])
    env.init_volumes([pv_node1a], [pv_node1a])
    assert not env.binder.assume_pod_volumes(make_test_pod(pod_pvcs), "node1", volumes)
    validate_assume(env, [make_binding(unbound_pvc, pv_node1a_bound)], [selected_node_pvc])
    env.binder.revert_assumed_pod_volumes(volumes)
    validate_cache_restored(env, bindings, [provisioned_pvc])


# -- bindAPIUpdate --------------------------------------------------------------------------------------


@dataclass
class BindAPIScenario:
    bindings: list[BindingInfo] | None = None
    cached_pvs: list[PersistentVolume] = field(default_factory=list)
    api_pvs: list[PersistentVolume] | None = None
    provisioned_pvcs: list[PersistentVolumeClaim] | None = None
    cached_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    api_pvcs: list[PersistentVolumeClaim] | None = None
    should_fail: bool = False
    expected_pvs: list[PersistentVolume] = field(default_factory=list)
    expected_api_pvs: list[PersistentVolume] | None = None
    expected_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    expected_api_pvcs: list[PersistentVolumeClaim] | None = None


BIND_API: dict[str, BindAPIScenario] = {
    "nothing-to-bind-nil": BindAPIScenario(should_fail=True),
    "nothing-to-bind-bindings-nil": BindAPIScenario(provisioned_pvcs=[], should_fail=True),
    "nothing-to-bind-provisionings-nil": BindAPIScenario(bindings=[], should_fail=True),
    "nothing-to-bind-empty": BindAPIScenario(bindings=[], provisioned_pvcs=[]),
    "one-binding": BindAPIScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a],
        expected_pvs=[pv_node1a_bound],
        provisioned_pvcs=[],
    ),
    "two-bindings": BindAPIScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound), make_binding(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b],
        expected_pvs=[pv_node1a_bound, pv_node1b_bound],
        provisioned_pvcs=[],
    ),
    "api-already-updated": BindAPIScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a_bound],
        expected_pvs=[pv_node1a_bound],
        provisioned_pvcs=[],
    ),
    "api-update-failed": BindAPIScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound), make_binding(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b],
        api_pvs=[pv_node1a, pv_node1b_bound_higher_version],
        expected_pvs=[pv_node1a_bound, pv_node1b],
        expected_api_pvs=[pv_node1a_bound, pv_node1b_bound_higher_version],
        provisioned_pvcs=[],
        should_fail=True,
    ),
    "one-provisioned-pvc": BindAPIScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        cached_pvcs=[provisioned_pvc],
        expected_pvcs=[add_provision_ann(provisioned_pvc)],
    ),
    "provision-api-update-failed": BindAPIScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc), add_provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True,
    ),
    "binding-succeed, provision-api-update-failed": BindAPIScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a],
        expected_pvs=[pv_node1a_bound],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc), add_provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True,
    ),
}


@pytest.mark.parametrize("name", list(BIND_API))
def test_bind_api_update(name: str) -> None:
    s = BIND_API[name]
    env = Env()
    pod = make_pod("test-pod").with_namespace(NAMESPACE).with_node_name("node1").pod
    env.init_volumes(s.cached_pvs, s.cached_pvs if s.api_pvs is None else s.api_pvs)
    env.init_claims(s.cached_pvcs, s.cached_pvcs if s.api_pvcs is None else s.api_pvcs)
    bindings = None if s.bindings is None else [BindingInfo(b.pvc, b.pv) for b in s.bindings]
    claims = None if s.provisioned_pvcs is None else list(s.provisioned_pvcs)
    env.assume_volumes(bindings or [], claims or [])
    if s.should_fail:
        with pytest.raises(BinderError):
            env.binder.bind_api_update(pod, bindings, claims)
    else:
        env.binder.bind_api_update(pod, bindings, claims)
    # The cache may hold the written object (a newer version): compare without versions.
    assert [pv_id(env.pv_cache.get_pv(pv.name)) for pv in s.expected_pvs] == [
        pv_id(pv) for pv in s.expected_pvs
    ]
    api_pvs = s.expected_pvs if s.expected_api_pvs is None else s.expected_api_pvs
    assert [pv_id(PersistentVolume.from_dict(env.reactor.pvs[pv.name])) for pv in api_pvs] == [
        pv_id(pv) for pv in api_pvs
    ]
    assert [pvc_id(env.pvc_cache.get_pvc(claim_key(c))) for c in s.expected_pvcs] == [
        pvc_id(c) for c in s.expected_pvcs
    ]
    api_pvcs = s.expected_pvcs if s.expected_api_pvcs is None else s.expected_api_pvcs
    assert [pvc_id(PersistentVolumeClaim.from_dict(env.reactor.pvcs[claim_key(c)])) for c in api_pvcs] == [
        pvc_id(c) for c in api_pvcs
    ]


# -- checkBindings --------------------------------------------------------------------------------------


@dataclass
class CheckScenario:
    init_pvs: list[PersistentVolume] = field(default_factory=list)
    init_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    bindings: list[BindingInfo] | None = None
    provisioned_pvcs: list[PersistentVolumeClaim] | None = None
    api_pvs: list[PersistentVolume] = field(default_factory=list)
    api_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    delete_pvs: bool = False
    delete_pvcs: bool = False
    init_nodes: list[Obj] = field(default_factory=lambda: [node1])
    init_csi_nodes: list[Obj] = field(default_factory=list)
    should_fail: bool = False
    expected_bound: bool = False


CHECK: dict[str, CheckScenario] = {
    "nothing-to-bind-nil": CheckScenario(should_fail=True),
    "nothing-to-bind-bindings-nil": CheckScenario(provisioned_pvcs=[], should_fail=True),
    "nothing-to-bind-provisionings-nil": CheckScenario(bindings=[], should_fail=True),
    "nothing-to-bind": CheckScenario(bindings=[], provisioned_pvcs=[], expected_bound=True),
    "binding-bound": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        expected_bound=True,
    ),
    "binding-prebound": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[prebound_pvc_node1a],
    ),
    "binding-unbound": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[unbound_pvc],
    ),
    "binding-pvc-not-exists": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        should_fail=True,
    ),
    "binding-pv-not-exists": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        delete_pvs=True,
        should_fail=True,
    ),
    "binding-claimref-nil": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a],
        init_pvcs=[bound_pvc_node1a],
        api_pvs=[pv_node1a],
        api_pvcs=[bound_pvc_node1a],
        should_fail=True,
    ),
    "binding-claimref-uid-empty": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        api_pvs=[pv_remove_claim_uid(pv_node1a_bound)],
        api_pvcs=[bound_pvc_node1a],
        should_fail=True,
    ),
    "binding-one-bound,one-unbound": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound), make_binding(unbound_pvc2, pv_node1b_bound)],
        provisioned_pvcs=[],
        init_pvs=[pv_node1a_bound, pv_node1b_bound],
        init_pvcs=[bound_pvc_node1a, unbound_pvc2],
    ),
    "provisioning-pvc-bound": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvs=[pv_bound],
        init_pvcs=[provisioned_pvc_bound],
        api_pvcs=[add_provision_ann(provisioned_pvc_bound)],
        expected_bound=True,
    ),
    "provisioning-pvc-unbound": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[add_provision_ann(provisioned_pvc)],
    ),
    "provisioning-pvc-not-exists": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        delete_pvcs=True,
        should_fail=True,
    ),
    "provisioning-pvc-annotations-nil": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        api_pvcs=[provisioned_pvc],
        should_fail=True,
    ),
    "provisioning-pvc-selected-node-dropped": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        api_pvcs=[pvc_set_empty_annotations(provisioned_pvc)],
        should_fail=True,
    ),
    "provisioning-pvc-selected-node-wrong-node": CheckScenario(
        init_pvcs=[provisioned_pvc],
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        api_pvcs=[pvc_set_selected_node(provisioned_pvc, "wrong-node")],
        should_fail=True,
    ),
    "binding-bound-provisioning-unbound": CheckScenario(
        bindings=[make_binding(unbound_pvc, pv_node1a_bound)],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a, add_provision_ann(provisioned_pvc)],
    ),
    "tolerate-provisioning-pvc-bound-pv-not-found": CheckScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[provisioned_pvc],
        bindings=[],
        provisioned_pvcs=[add_provision_ann(provisioned_pvc)],
        api_pvcs=[add_provision_ann(provisioned_pvc_bound)],
        delete_pvs=True,
    ),
}

CHECK_WITH_CSI_MIGRATION: dict[str, CheckScenario] = {
    "provisioning-pvc-bound": CheckScenario(
        bindings=[],
        provisioned_pvcs=[add_provision_ann(prov_migration_pvc_bound)],
        init_pvs=[migration_pv_bound],
        init_pvcs=[prov_migration_pvc_bound],
        init_nodes=[node1_zone1],
        init_csi_nodes=[csi_node1_migrated],
        api_pvcs=[add_provision_ann(prov_migration_pvc_bound)],
        expected_bound=True,
    ),
    "binding-node-pv-same-zone": CheckScenario(
        bindings=[make_binding(unbound_pvc, migration_pv_bound_to_unbound)],
        provisioned_pvcs=[],
        init_pvs=[migration_pv_bound_to_unbound],
        init_pvcs=[unbound_pvc],
        init_nodes=[node1_zone1],
        init_csi_nodes=[csi_node1_migrated],
    ),
    "binding-without-csinode": CheckScenario(
        bindings=[make_binding(unbound_pvc, migration_pv_bound_to_unbound)],
        provisioned_pvcs=[],
        init_pvs=[migration_pv_bound_to_unbound],
        init_pvcs=[unbound_pvc],
        init_nodes=[node1_zone1],
    ),
    "binding-non-migrated-plugin": CheckScenario(
        bindings=[make_binding(unbound_pvc, migration_pv_bound_to_unbound)],
        provisioned_pvcs=[],
        init_pvs=[migration_pv_bound_to_unbound],
        init_pvcs=[unbound_pvc],
        init_nodes=[node1_zone1],
        init_csi_nodes=[csi_node1_not_migrated],
    ),
    "binding-node-pv-in-different-zones": CheckScenario(
        bindings=[make_binding(unbound_pvc, migration_pv_bound_to_unbound)],
        provisioned_pvcs=[],
        init_pvs=[migration_pv_bound_to_unbound],
        init_pvcs=[unbound_pvc],
        init_nodes=[node1_zone2],
        init_csi_nodes=[csi_node1_migrated],
        should_fail=True,
    ),
    "binding-node-pv-different-zones-migration-off": CheckScenario(
        bindings=[make_binding(unbound_pvc, nonmigration_pv_bound_to_unbound)],
        provisioned_pvcs=[],
        init_pvs=[nonmigration_pv_bound_to_unbound],
        init_pvcs=[unbound_pvc],
        init_nodes=[node1_zone2],
        init_csi_nodes=[csi_node1_migrated],
    ),
}


def _run_check(s: CheckScenario) -> None:
    pod = make_test_pod()
    env = Env()
    env.add_pod(pod)
    env.create(*s.init_nodes, *s.init_csi_nodes)
    env.init_volumes(s.init_pvs, None)
    env.init_claims(s.init_pvcs, None)
    env.assume_volumes(s.bindings or [], s.provisioned_pvcs or [])
    if s.delete_pvs:
        for pv in s.init_pvs:
            env.pv_cache.delete(pv)
    else:
        env.update_volumes(s.api_pvs)
    if s.delete_pvcs:
        for claim in s.init_pvcs:
            env.pvc_cache.delete(claim)
    else:
        env.update_claims(s.api_pvcs)
    if s.should_fail:
        with pytest.raises(BinderError):
            env.binder.check_bindings(pod, "node1", s.bindings, s.provisioned_pvcs)
        return
    assert env.binder.check_bindings(pod, "node1", s.bindings, s.provisioned_pvcs) == s.expected_bound


@pytest.mark.parametrize("name", list(CHECK))
def test_check_bindings(name: str) -> None:
    _run_check(CHECK[name])


@pytest.mark.parametrize("name", list(CHECK_WITH_CSI_MIGRATION))
def test_check_bindings_with_csi_migration(name: str) -> None:
    _run_check(CHECK_WITH_CSI_MIGRATION[name])


# -- BindPodVolumes -------------------------------------------------------------------------------------

Delay = Callable[[Env, Pod, list[PersistentVolume], list[PersistentVolumeClaim]], None]


def _claim_fully_bound(
    env: Env, pod: Pod, pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]
) -> None:
    current = PersistentVolumeClaim.from_dict(env.reactor.pvcs[claim_key(pvcs[0])])
    raw = copy.deepcopy(dict(current.raw))
    raw["spec"]["volumeName"] = pvs[0].name
    raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = "yes"
    env.reactor.update_persistent_volume_claim(raw)


def _dynamic_pv_provisioned(
    env: Env, pod: Pod, pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]
) -> None:
    current = PersistentVolumeClaim.from_dict(env.reactor.pvcs[claim_key(pvcs[0])])
    env.reactor.create_persistent_volume(make_test_pv("dynamic-pv", "node1", "1G", "1", current, WAIT_CLASS))
    raw = copy.deepcopy(dict(current.raw))
    raw["spec"]["volumeName"] = "dynamic-pv"
    raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = "yes"
    env.reactor.update_persistent_volume_claim(raw)


def _pod_deleted(env: Env, pod: Pod, pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]) -> None:
    env.store.delete("Pod", pod.namespace, pod.name)


def _claim_deleted(
    env: Env, pod: Pod, pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]
) -> None:
    env.pvc_cache.delete(pvcs[0])


def _bound_to_other_node(
    env: Env, pod: Pod, pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim]
) -> None:
    current = PersistentVolumeClaim.from_dict(env.reactor.pvcs[claim_key(pvcs[0])])
    raw = copy.deepcopy(dict(current.raw))
    raw["spec"]["volumeName"] = pv_node2.name
    raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = "yes"
    env.reactor.update_persistent_volume_claim(raw)


@dataclass
class BindScenario:
    bindings_nil: bool = False
    nodes: list[Obj] | None = None
    init_pvs: list[PersistentVolume] = field(default_factory=list)
    init_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    binding: BindingInfo | None = None
    claim_to_provision: PersistentVolumeClaim | None = None
    api_pv: PersistentVolume | None = None
    api_pvc: PersistentVolumeClaim | None = None
    delay: Delay | None = None
    should_fail: bool = False


BIND: dict[str, BindScenario] = {
    "nothing-to-bind-nil": BindScenario(bindings_nil=True, should_fail=True),
    "nothing-to-bind-empty": BindScenario(),
    "already-bound": BindScenario(
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
    ),
    "binding-static-pv-succeeds-after-time": BindScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        delay=_claim_fully_bound,
    ),
    "binding-dynamic-pv-succeeds-after-time": BindScenario(
        claim_to_provision=pvc_set_selected_node(provisioned_pvc, "node1"),
        init_pvcs=[provisioned_pvc],
        delay=_dynamic_pv_provisioned,
    ),
    "bound-by-pv-controller-before-bind": BindScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        api_pv=pv_node1a_bound,
        api_pvc=bound_pvc_node1a,
        should_fail=True,
    ),
    "pod-deleted-after-time": BindScenario(
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        delay=_pod_deleted,
        should_fail=True,
    ),
    "binding-times-out": BindScenario(
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        should_fail=True,
    ),
    "binding-fails": BindScenario(
        binding=make_binding(unbound_pvc2, pv_node1b_bound),
        init_pvs=[pv_node1b],
        init_pvcs=[unbound_pvc2],
        should_fail=True,
    ),
    "check-fails": BindScenario(
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        delay=_claim_deleted,
        should_fail=True,
    ),
    "node-affinity-fails": BindScenario(
        binding=make_binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        nodes=[node1_no_labels],
        should_fail=True,
    ),
    "node-affinity-fails-dynamic-provisioning": BindScenario(
        init_pvs=[pv_node1a, pv_node2],
        init_pvcs=[selected_node_pvc],
        claim_to_provision=selected_node_pvc,
        nodes=[node1, node2],
        delay=_bound_to_other_node,
        should_fail=True,
    ),
}


@pytest.mark.parametrize("name", list(BIND))
def test_bind_pod_volumes(name: str) -> None:
    s = BIND[name]
    pod = make_test_pod()
    env = Env()
    env.add_pod(pod)
    bindings: list[BindingInfo] = []
    claims: list[PersistentVolumeClaim] = []
    if not s.bindings_nil:
        if s.binding is not None:
            bindings = [BindingInfo(s.binding.pvc, s.binding.pv)]
        if s.claim_to_provision is not None:
            claims = [s.claim_to_provision]
        env.create(*(s.nodes or [node1]))
        env.init_volumes(s.init_pvs, s.init_pvs)
        env.init_claims(s.init_pvcs, s.init_pvcs)
        env.assume_volumes(bindings, claims)
    if s.api_pv is not None:
        env.reactor.update_persistent_volume(dict(s.api_pv.raw))
    if s.api_pvc is not None:
        env.reactor.update_persistent_volume_claim(dict(s.api_pvc.raw))
    delay = s.delay
    if delay is not None:
        env.later.append(lambda: delay(env, pod, s.init_pvs, s.init_pvcs))
    volumes = PodVolumes(bindings, [DynamicProvision(c) for c in claims])
    if s.should_fail:
        with pytest.raises(BinderError):
            env.binder.bind_pod_volumes(pod, "node1", volumes)
    else:
        env.binder.bind_pod_volumes(pod, "node1", volumes)


def test_bind_pod_volumes_errors_are_worded_as_upstream() -> None:
    pod = make_test_pod()
    env = Env()
    env.add_pod(pod)
    env.create(node1)
    env.init_volumes([pv_node1a], [pv_node1a])
    env.init_claims([unbound_pvc], [unbound_pvc])
    binding = make_binding(unbound_pvc, pv_node1a_bound)
    env.assume_volumes([binding], [])
    with pytest.raises(BinderError) as timed_out:
        env.binder.bind_pod_volumes(pod, "node1", PodVolumes([binding], []))
    assert str(timed_out.value) == "binding volumes: context deadline exceeded"
    env.store.delete("Pod", pod.namespace, pod.name)
    env.informers.pump()
    with pytest.raises(BinderError) as gone:
        env.binder.bind_pod_volumes(pod, "node1", PodVolumes([make_binding(unbound_pvc, binding.pv)], []))
    assert str(gone.value) == 'binding volumes: pod does not exist any more: pod "test-pod" not found'


# -- find, assume, find again ---------------------------------------------------------------------------


def test_find_assume_volumes() -> None:
    pod_pvcs = [unbound_pvc]
    pvs = [pv_node2, pv_node1a, pv_node1c]
    env = Env()
    env.init_volumes(pvs, pvs)
    env.init_claims(pod_pvcs, pod_pvcs)
    pod = make_test_pod(pod_pvcs)
    volumes, reasons = env.find_pod_volumes(pod, TEST_NODE)
    assert reasons == []
    assert not env.binder.assume_pod_volumes(pod, "node1", volumes)
    expected = list(volumes.static_bindings or [])
    validate_assume(env, expected, [])
    # The claim keeps the volume it was assumed with however often it is looked at again.
    for _ in range(5):
        again, reasons = env.find_pod_volumes(pod, TEST_NODE)
        assert reasons == []
        validate_pod_cache(again, expected, None)


# -- CSIStorageCapacity -----------------------------------------------------------------------------------


@dataclass
class CapacityScenario:
    pvcs: list[PersistentVolumeClaim]
    capacities: list[Obj] = field(default_factory=list)
    expected_provisions: list[DynamicProvision] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _provision(cap: Obj | None) -> list[DynamicProvision]:
    return [DynamicProvision(provisioned_pvc, None if cap is None else CSIStorageCapacity.from_dict(cap))]


CAPACITY_SCENARIOS: dict[str, CapacityScenario] = {
    "network-attached": CapacityScenario(
        [provisioned_pvc], [network_attached_capacity], _provision(network_attached_capacity)
    ),
    "local-storage": CapacityScenario([provisioned_pvc], [node1_capacity], _provision(node1_capacity)),
    "multiple": CapacityScenario(
        [provisioned_pvc],
        [network_attached_capacity, node2_capacity, node1_capacity],
        _provision(node1_capacity),
    ),
    "no-storage": CapacityScenario([provisioned_pvc], reasons=[ERR_REASON_NOT_ENOUGH_SPACE]),
    "wrong-node": CapacityScenario(
        [provisioned_pvc], [node2_capacity], reasons=[ERR_REASON_NOT_ENOUGH_SPACE]
    ),
    "wrong-storage-class": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS, {NODE_LABEL_KEY: "node1"}, "1Gi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-storage": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-volume-size": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Gi", "1Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-storage": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "0Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-volume-size": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "", "0Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "nil-storage": CapacityScenario(
        [provisioned_pvc],
        [capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"})],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
}


@pytest.mark.parametrize(
    "opt_in", [True, False], ids=["CSIDriver.StorageCapacity=true", "CSIDriver.StorageCapacity=false"]
)
@pytest.mark.parametrize("name", list(CAPACITY_SCENARIOS))
def test_capacity(opt_in: bool, name: str) -> None:
    s = CAPACITY_SCENARIOS[name]
    env = Env()
    env.create(csi_driver(PROVISIONER, opt_in), *s.capacities)
    env.init_claims(s.pvcs, s.pvcs)
    volumes, reasons = env.find_pod_volumes(make_test_pod(s.pvcs), TEST_NODE)
    assert reasons == (s.reasons if opt_in else [])
    if s.reasons and opt_in:
        return
    expected = s.expected_provisions if opt_in else [DynamicProvision(p.pvc) for p in s.expected_provisions]
    validate_pod_cache(volumes, None, expected or [DynamicProvision(provisioned_pvc)])
