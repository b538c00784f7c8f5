"""VolumeRestrictions: upstream's volume_restrictions_test.go tables (TestGCEDiskConflicts,
TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts,
Test_isSchedulableAfterPodDeleted, Test_isSchedulableAfterPersistentVolumeClaimChange), case names
verbatim, kube-scheduler v1.35 semantics; then what the vectorized plugin adds: preemption's
``add_pod`` / ``remove_pod``, several nodes at once, and runs through the simulation.

Differences from the Go tables, none of them in what is checked:

* upstream's Filter gets a bare NodeInfo of the existing pods; here those pods run on a node
  ``node-1`` of a real snapshot, and the pods are named (the simulation's store needs names);
* a missing claim is worded as kube-scheduler's informer lister words it
  (``persistentvolumeclaim "x" not found``), which the Go test's fake lister also produces here;
* the hint tables' "wrong object" cases have no counterpart: hints get parsed objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.storage import READ_WRITE_MANY, READ_WRITE_ONCE_POD
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueueingHint
from kubesched.plugins import default_registry
from kubesched.plugins.testing import build_snapshot, make_node, node_statuses
from kubesched.plugins.testing_volumes import (
    bound_claim,
    claim_dict,
    claim_volume,
    create_all,
    handle_with,
    pod_with_volumes,
    volume,
)
from kubesched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from kubesched.sim.simulation import Simulation

SKIP = Status(Code.SKIP)
DISK_CONFLICT = Status(Code.UNSCHEDULABLE, [ERR_REASON_DISK_CONFLICT])
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, [ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT])
Q, QSKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

NODE = "node-1"


def pod(*volumes: Mapping[str, Any], name: str = "p", namespace: str = "default", node: str = "") -> Pod:
    return pod_with_volumes(name, volumes, namespace=namespace, node_name=node)


def run(
    plugin_pod: Pod, existing: Sequence[Pod] = (), claims: Sequence[Mapping[str, Any]] = ()
) -> tuple[Status | None, Status | None]:
    """PreFilter, then (when it succeeded) Filter on ``node-1`` holding ``existing``."""
    snapshot = build_snapshot([make_node(NODE, {"cpu": "4", "memory": "8Gi", "pods": "110"})], existing)
    plugin = VolumeRestrictions(None, handle_with(claims, snapshot))
    state = CycleState()
    _, pre = plugin.pre_filter(state, plugin_pod, snapshot)
    if pre is not None and not pre.ok:
        return pre, None
    return pre, node_statuses(plugin.filter_nodes(state, plugin_pod, snapshot.table), snapshot)[NODE]


@dataclass
class DiskCase:
    name: str
    pod: list[dict[str, Any]]
    existing: list[dict[str, Any]]
    pre_filter: Status | None
    want: Status | None


def disk_cases(vol: dict[str, Any], vol2: dict[str, Any]) -> list[DiskCase]:
    """The four cases every disk table has."""
    return [
        DiskCase("nothing", [], [], SKIP, None),
        DiskCase("one state", [], [vol], SKIP, None),
        DiskCase("same state", [vol], [vol], None, DISK_CONFLICT),
        DiskCase("different state", [vol2], [vol], None, None),
    ]


def check_disk_case(case: DiskCase) -> None:
    existing = [pod(*case.existing, name="existing", node=NODE)] if case.existing else []
    pre, got = run(pod(*case.pod), existing)
    assert pre == case.pre_filter
    if pre is None:
        assert got == case.want


GCE = volume("v", "gcePersistentDisk", {"pdName": "foo"})
GCE2 = volume("v", "gcePersistentDisk", {"pdName": "bar"})
GCE_CASES = [
    *disk_cases(GCE, GCE2),
    DiskCase(
        "pod with a volume that doesn't have restrictions",
        [volume("volume with no restriction", "emptyDir")],
        [],
        SKIP,
        None,
    ),
]


@pytest.mark.parametrize("case", GCE_CASES, ids=[c.name for c in GCE_CASES])
def test_gce_disk_conflicts(case: DiskCase) -> None:
    check_disk_case(case)


AWS_CASES = disk_cases(
    volume("v", "awsElasticBlockStore", {"volumeID": "foo"}),
    volume("v", "awsElasticBlockStore", {"volumeID": "bar"}),
)


@pytest.mark.parametrize("case", AWS_CASES, ids=[c.name for c in AWS_CASES])
def test_aws_disk_conflicts(case: DiskCase) -> None:
    check_disk_case(case)


RBD = volume("v", "rbd", {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"})
RBD2 = volume("v", "rbd", {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"})
RBD_CASES = disk_cases(RBD, RBD2)


@pytest.mark.parametrize("case", RBD_CASES, ids=[c.name for c in RBD_CASES])
def test_rbd_disk_conflicts(case: DiskCase) -> None:
    check_disk_case(case)


def iscsi(iqn: str) -> dict[str, Any]:
    return volume("v", "iscsi", {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "fsType": "ext4", "lun": 0})


ISCSI = iscsi("iqn.2016-12.server:storage.target01")
ISCSI2 = iscsi("iqn.2017-12.server:storage.target01")
ISCSI_CASES = disk_cases(ISCSI, ISCSI2)


@pytest.mark.parametrize("case", ISCSI_CASES, ids=[c.name for c in ISCSI_CASES])
def test_iscsi_disk_conflicts(case: DiskCase) -> None:
    check_disk_case(case)


# -- read-only mounts (the rules' "unless all are read-only" halves) -------------------------------


def read_only(vol: dict[str, Any], flag: bool = True) -> dict[str, Any]:
    (kind,) = (k for k in vol if k != "name")
    return {"name": vol["name"], kind: {**vol[kind], "readOnly": flag}}


@pytest.mark.parametrize(
    ("vol", "both_read_only_conflict"),
    [
        (GCE, False),
        (RBD, False),
        (ISCSI, False),
        (volume("v", "awsElasticBlockStore", {"volumeID": "x"}), True),
    ],
    ids=["gce", "rbd", "iscsi", "aws"],
)
def test_read_only_mounts(vol: dict[str, Any], both_read_only_conflict: bool) -> None:
    """Two read-only mounts share a GCE PD, an RBD image or an iSCSI target; one read-write mount
    conflicts. An AWS EBS volume conflicts whatever the mode."""
    existing = [pod(read_only(vol), name="existing", node=NODE)]
    _, both = run(pod(read_only(vol)), existing)
    assert both == (DISK_CONFLICT if both_read_only_conflict else None)
    _, one = run(pod(read_only(vol, False)), existing)
    assert one == DISK_CONFLICT


def test_rbd_needs_one_shared_monitor_and_defaults_the_pool() -> None:
    """Monitors need only overlap; an unset pool is the API default ``rbd``."""
    existing = [pod(volume("v", "rbd", {"monitors": ["a", "b"], "image": "img"}), name="existing", node=NODE)]
    _, got = run(pod(volume("v", "rbd", {"monitors": ["b", "c"], "pool": "rbd", "image": "img"})), existing)
    assert got == DISK_CONFLICT
    _, got = run(pod(volume("v", "rbd", {"monitors": ["b"], "pool": "other", "image": "img"})), existing)
    assert got is None


# -- TestAccessModeConflicts -----------------------------------------------------------------------

RWOP_1 = claim_dict("claim-with-rwop-1", access_modes=[READ_WRITE_ONCE_POD])
RWOP_2 = claim_dict("claim-with-rwop-2", access_modes=[READ_WRITE_ONCE_POD])
RWX = claim_dict("claim-with-rwx", access_modes=[READ_WRITE_MANY])


def claims_pod(name: str, *claims: str) -> Pod:
    return pod(*(claim_volume(c) for c in claims), name=name, node=NODE)


POD_WITH_ONE_PVC = claims_pod("pod-with-one-pvc", "claim-with-rwop-1")
POD_WITH_TWO_PVCS = claims_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
POD_WITH_ONE_CONFLICT = claims_pod("pod-with-one-conflict", "claim-with-rwop-1")
POD_WITH_TWO_CONFLICTS = claims_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2")
POD_WITH_RWX = claims_pod("pod-with-rwx", "claim-with-rwx")


def pending(p: Pod) -> Pod:
    """The same pod, not bound (the pod being scheduled)."""
    raw = dict(p.raw)
    raw["spec"] = {k: v for k, v in raw["spec"].items() if k != "nodeName"}
    return Pod.from_dict(raw)


@dataclass
class AccessCase:
    name: str
    pod: Pod
    existing: list[Pod] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    pre_filter: Status | None = None
    want: Status | None = None


ACCESS_CASES = [
    AccessCase("nothing", pod(), pre_filter=SKIP),
    AccessCase(
        "failed to get PVC",
        pending(POD_WITH_ONE_PVC),
        pre_filter=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ['persistentvolumeclaim "claim-with-rwop-1" not found']
        ),
    ),
    AccessCase(
        "no access mode conflict",
        pending(POD_WITH_ONE_PVC),
        [POD_WITH_RWX],
        [RWOP_1, RWX],
        pre_filter=SKIP,
    ),
    AccessCase(
        "access mode conflict, unschedulable",
        pending(POD_WITH_ONE_CONFLICT),
        [POD_WITH_ONE_PVC, POD_WITH_RWX],
        [RWOP_1, RWX],
        want=RWOP_CONFLICT,
    ),
    AccessCase(
        "two conflicts, unschedulable",
        pending(POD_WITH_TWO_CONFLICTS),
        [POD_WITH_TWO_PVCS, POD_WITH_RWX],
        [RWOP_1, RWOP_2, RWX],
        want=RWOP_CONFLICT,
    ),
]


@pytest.mark.parametrize("case", ACCESS_CASES, ids=[c.name for c in ACCESS_CASES])
def test_access_mode_conflicts(case: AccessCase) -> None:
    pre, got = run(case.pod, case.existing, case.claims)
    assert pre == case.pre_filter
    if pre is None:
        assert got == case.want


def test_disk_conflict_is_reported_before_the_claim() -> None:
    """A node with a disk conflict says so; the claim in use rejects the other nodes."""
    disk = volume("d", "gcePersistentDisk", {"pdName": "foo"})
    nodes = [make_node(n, {"cpu": "4", "memory": "8Gi", "pods": "110"}) for n in ("node-1", "node-2")]
    holder = pod(disk, name="holder", node="node-1")
    user = pod(claim_volume("claim-with-rwop-1"), name="user", node="node-2")
    snapshot = build_snapshot(nodes, [holder, user])
    plugin = VolumeRestrictions(None, handle_with([RWOP_1], snapshot))
    incoming = pod(disk, claim_volume("claim-with-rwop-1"))
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snapshot)[1] is None
    got = node_statuses(plugin.filter_nodes(state, incoming, snapshot.table), snapshot)
    assert got == {"node-1": DISK_CONFLICT, "node-2": RWOP_CONFLICT}


def test_add_and_remove_pod_follow_preemption() -> None:
    """Removing the pod that holds the disk or the claim (a preemption victim) frees the node;
    adding it back (a reprieve, a nominated pod) rejects it again."""
    disk = volume("d", "awsElasticBlockStore", {"volumeID": "vol-1"})
    nodes = [make_node(n, {"cpu": "4", "memory": "8Gi", "pods": "110"}) for n in ("node-1", "node-2")]
    holder = pod(disk, claim_volume("claim-with-rwop-1"), name="holder", node="node-1")
    snapshot = build_snapshot(nodes, [holder])
    plugin = VolumeRestrictions(None, handle_with([RWOP_1], snapshot))
    incoming = pod(disk, claim_volume("claim-with-rwop-1"))
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snapshot)[1] is None
    slot = snapshot.table.slot_of["node-1"]
    what_if = state.clone()
    plugin.remove_pod(what_if, incoming, holder, slot)
    statuses = node_statuses(plugin.filter_nodes(what_if, incoming, snapshot.table), snapshot)
    assert statuses == {"node-1": None, "node-2": None}
    # The clone did not change the cycle's state.
    statuses = node_statuses(plugin.filter_nodes(state, incoming, snapshot.table), snapshot)
    assert statuses == {"node-1": DISK_CONFLICT, "node-2": RWOP_CONFLICT}
    plugin.add_pod(what_if, incoming, holder, snapshot.table.slot_of["node-2"])
    statuses = node_statuses(plugin.filter_nodes(what_if, incoming, snapshot.table), snapshot)
    assert statuses == {"node-1": RWOP_CONFLICT, "node-2": DISK_CONFLICT}


def test_claims_of_assumed_pods_count() -> None:
    """A claim in use only by a pod the cache assumed (bound a moment ago) is in use."""
    cache = SchedulerCache()
    cache.add_node(make_node(NODE, {"cpu": "4", "memory": "8Gi", "pods": "110"}))
    cache.assume_pod(pending(POD_WITH_ONE_PVC), NODE)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    plugin = VolumeRestrictions(None, handle_with([RWOP_1], snapshot))
    _, status = plugin.pre_filter(CycleState(), pending(POD_WITH_ONE_CONFLICT), snapshot)
    assert status is None
    cache.forget_pod(pending(POD_WITH_ONE_PVC))
    cache.update_snapshot(snapshot)
    assert plugin.pre_filter(CycleState(), pending(POD_WITH_ONE_CONFLICT), snapshot)[1] == SKIP


# -- Test_isSchedulableAfterPodDeleted -------------------------------------------------------------

AWS = volume("v", "awsElasticBlockStore", {"volumeID": "foo"})
AWS2 = volume("v", "awsElasticBlockStore", {"volumeID": "bar"})
POD_DELETED_CASES: list[tuple[str, Pod, Pod, QueueingHint]] = [
    ("queue-new-object-gcedisk-conflict", pod(GCE), pod(GCE, name="o"), Q),
    ("skip-new-object-gcedisk-no-conflict", pod(GCE), pod(GCE2, name="o"), QSKIP),
    ("queue-new-object-awsdisk-conflict", pod(AWS), pod(AWS, name="o"), Q),
    ("skip-new-object-awsdisk-no-conflict", pod(AWS), pod(AWS2, name="o"), QSKIP),
    ("queue-new-object-rbddisk-conflict", pod(RBD), pod(RBD, name="o"), Q),
    ("skip-new-object-rbddisk-no-conflict", pod(RBD), pod(RBD2, name="o"), QSKIP),
    ("queue-new-object-iscsidisk-conflict", pod(ISCSI), pod(ISCSI, name="o"), Q),
    ("skip-new-object-iscsidisk-no-conflict", pod(ISCSI), pod(ISCSI2, name="o"), QSKIP),
    (
        "queue-has-same-claim",
        pod(claim_volume("claim-rwop"), name="pod1"),
        claims_pod("pod2", "claim-rwop"),
        Q,
    ),
    (
        "skip-no-same-claim",
        pod(claim_volume("claim-1-rwop"), name="pod1"),
        claims_pod("pod2", "claim-2-rwop"),
        QSKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "deleted", "want"), POD_DELETED_CASES, ids=[c[0] for c in POD_DELETED_CASES]
)
def test_is_schedulable_after_pod_deleted(name: str, target: Pod, deleted: Pod, want: QueueingHint) -> None:
    plugin = VolumeRestrictions(None, handle_with([]))
    assert plugin.is_schedulable_after_pod_deleted(target, deleted, None) == want


def test_pod_deleted_in_another_namespace_is_skipped() -> None:
    plugin = VolumeRestrictions(None, handle_with([]))
    assert (
        plugin.is_schedulable_after_pod_deleted(pod(GCE), pod(GCE, name="o", namespace="other"), None)
        == QSKIP
    )


# -- Test_isSchedulableAfterPersistentVolumeClaimChange --------------------------------------------

RWX_1 = claim_dict("claim-with-rwx-1", access_modes=[READ_WRITE_MANY])
RWX_2 = claim_dict("claim-with-rwx-2", access_modes=[READ_WRITE_MANY])
ONE_PVC = claims_pod("pod-with-one-pvc", "claim-with-rwx-1")
TWO_PVCS = claims_pod("pod-with-two-pvcs", "claim-with-rwx-1", "claim-with-rwx-2")
OTHER_NAMESPACE = pod(claim_volume("claim-with-rwx-1"), name="pod-with-one-pvc", namespace="kube-system")
CLAIM_CASES: list[tuple[str, Pod, dict[str, Any], QueueingHint]] = [
    ("queue-new-object-pvc-belong-pod", TWO_PVCS, RWX_1, Q),
    ("skip-new-object-unused", ONE_PVC, RWX_2, QSKIP),
    ("skip-nil-old-object", ONE_PVC, RWX_2, QSKIP),
    ("skip-new-object-not-belong-pod", ONE_PVC, RWX_2, QSKIP),
    ("skip-new-object-namespace-not-equal-pod", OTHER_NAMESPACE, RWX_1, QSKIP),
]


@pytest.mark.parametrize(("name", "target", "new", "want"), CLAIM_CASES, ids=[c[0] for c in CLAIM_CASES])
def test_is_schedulable_after_persistent_volume_claim_change(
    name: str, target: Pod, new: dict[str, Any], want: QueueingHint
) -> None:
    handle = handle_with([new])
    added = handle.informers.informer("PersistentVolumeClaim").get("default", new["metadata"]["name"])
    plugin = VolumeRestrictions(None, handle)
    assert plugin.is_schedulable_after_persistent_volume_claim_added(target, None, added) == want


# -- signatures ------------------------------------------------------------------------------------


def test_sign_pod() -> None:
    plugin = VolumeRestrictions()
    assert plugin.sign_pod(pod()) == ((), None)
    assert plugin.sign_pod(pod(volume("cfg", "configMap", {"name": "c"}))) == ((), None)
    for vol in (GCE, claim_volume("c")):
        fragments, status = plugin.sign_pod(pod(vol))
        assert fragments == () and status is not None and not status.ok


# -- through the simulation ------------------------------------------------------------------------


def sim_pod(name: str, *volumes: Mapping[str, Any]) -> dict[str, Any]:
    raw = dict(pod_with_volumes(name, volumes).raw)
    raw["metadata"] = {k: v for k, v in raw["metadata"].items() if k != "uid"}
    return raw


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def test_read_write_once_pod_claim_through_the_simulation() -> None:
    """The second user of a ReadWriteOncePod claim waits, with upstream's message, until the first
    one is deleted (a Pod/Delete event the plugin registers)."""
    sim = Simulation(registry=default_registry())
    for n in ("n1", "n2"):
        sim.store.create(node_manifest(n))
    create_all(sim.store, bound_claim("data", "pv-data", access_modes=[READ_WRITE_ONCE_POD]))
    sim.store.create(sim_pod("first", claim_volume("data")))
    result = sim.run()
    assert [o.status for o in result.outcomes] == ["Scheduled"]
    sim.store.create(sim_pod("second", claim_volume("data")))
    result = sim.run()
    by_name = {o.name: o for o in result.outcomes}
    assert by_name["second"].status == "Unschedulable"
    assert by_name["second"].message.startswith(
        f"0/2 nodes are available: 2 {ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT}."
    )
    sim.store.delete("Pod", "default", "first")
    result = sim.run()
    assert [(o.name, o.status) for o in result.outcomes] == [("second", "Scheduled")]


def test_missing_claim_waits_for_it_through_the_simulation() -> None:
    """A pod whose claim does not exist is unschedulable with the lister's message, and is retried
    when the claim is created (a PersistentVolumeClaim/Add event)."""
    sim = Simulation(registry=default_registry())
    sim.store.create(node_manifest("n1"))
    sim.store.create(sim_pod("web", claim_volume("later")))
    result = sim.run()
    (outcome,) = result.outcomes
    assert outcome.status == "Unschedulable"
    assert 'persistentvolumeclaim "later" not found' in outcome.message
    create_all(sim.store, bound_claim("later", "pv-later"))
    result = sim.run()
    assert [(o.name, o.status) for o in result.outcomes] == [("web", "Scheduled")]


def test_preemption_takes_a_read_write_once_pod_claim() -> None:
    """The claim's user is a preemption victim: removing it (``remove_pod``) clears the conflict,
    so the more important pod evicts it and runs."""
    sim = Simulation(registry=default_registry())
    sim.store.create(node_manifest("n1"))
    create_all(sim.store, bound_claim("data", "pv-data", access_modes=[READ_WRITE_ONCE_POD]))
    low = sim_pod("low", claim_volume("data"))
    low["spec"]["priority"] = 0
    sim.store.create(low)
    assert [(o.name, o.status) for o in sim.run().outcomes] == [("low", "Scheduled")]
    high = sim_pod("high", claim_volume("data"))
    high["spec"]["priority"] = 100
    sim.store.create(high)
    result = sim.run()
    assert ("high", "Scheduled", "n1") in {(o.name, o.status, o.node) for o in result.outcomes}
    assert "default/low" in result.evicted
