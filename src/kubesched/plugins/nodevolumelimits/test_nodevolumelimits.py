"""NodeVolumeLimits: upstream's csi_test.go tables (TestCSILimits, TestCSILimitsQHint,
TestCSILimitsAddedPVCQHint, TestCSILimitsDeletedVolumeAttachmentQHint), case names verbatim,
kube-scheduler v1.35 semantics; then what the vectorized plugin adds (many nodes, Portworx's
migrated-plugins annotation, counts kept per node across claim changes, a preemption victim's
volumes) and runs through the simulation.

Differences from the Go tables, none of them in what is checked:

* the pods and claims of upstream's table without a namespace are in ``default``;
* a missing claim is worded as kube-scheduler's informer lister words it
  (``persistentvolumeclaim "abc-xyz" not found``; the Go test's fake lister says
  ``persistentvolumeclaims``);
* an error status (a claim not owned by its pod) is the exception the framework turns into the
  pod's scheduling error;
* ``migrationEnabled`` and ``ephemeralEnabled`` are gone from kube-scheduler (always on): those cases
  keep their names and expectations, and the CSINode carries upstream's migrated-plugins annotation;
* the hint tables' "wrong object" cases have no counterpart: hints get parsed objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.storage import CSINode, VolumeAttachment
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueueingHint
from kubesched.plugins import default_registry
from kubesched.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    VolumeError,
)
from kubesched.plugins.nodevolumelimits.translation import (
    TranslationError,
    ebs_volume_id,
    inline_volume_handle,
    pv_volume_handle,
)
from kubesched.plugins.testing import build_snapshot, make_node, node_statuses, store_handle
from kubesched.plugins.testing_volumes import (
    bound_claim,
    claim_dict,
    claim_volume,
    create_all,
    csinode_dict,
    ephemeral_volume,
    handle_with,
    pod_with_volumes,
    pv_dict,
    storage_class_dict,
    volume,
    volume_attachment_dict,
)
from kubesched.sim.simulation import Simulation
from kubesched.store.memory import MemoryStore

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"

EXCEEDED = Status(Code.UNSCHEDULABLE, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
SKIP = Status(Code.SKIP)
Q, QSKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


# -- upstream's fixtures ---------------------------------------------------------------------------


def claims_pod(*claims: str) -> Pod:
    """``st.MakePod().PVC(c)...``: one claim volume per name, named after it."""
    return pod_with_volumes("pod", [claim_volume(c) for c in claims])


def fake_pvs(volume_name: str, drivers: Sequence[str]) -> list[dict[str, Any]]:
    """``getFakeCSIPVLister``: four PVs per driver; in-tree drivers get their in-tree source."""
    out: list[dict[str, Any]] = []
    for driver in drivers:
        for j in range(4):
            handle = f"{volume_name}-{driver}-{j}"
            if driver == AWS_IN_TREE:
                out.append(pv_dict(handle, source=("awsElasticBlockStore", {"volumeID": handle})))
            elif driver == HOSTPATH_IN_TREE:
                out.append(pv_dict(handle, source=("hostPath", {"path": "/tmp"})))
            else:
                out.append(pv_dict(handle, csi=(driver, handle)))
    return out


def fake_pvcs(volume_name: str, sc_name: str, drivers: Sequence[str]) -> list[dict[str, Any]]:
    """``getFakeCSIPVCLister``: a bound claim per PV, then ``-4`` (unbound, with class), ``-5`` (no
    class) and ``-6`` (class, bound to a PV that does not exist)."""
    out = [
        claim_dict(f"{volume_name}-{driver}-{j}", volume_name=f"{volume_name}-{driver}-{j}")
        for driver in drivers
        for j in range(4)
    ]
    out.append(claim_dict(f"{volume_name}-4", storage_class=sc_name))
    out.append(claim_dict(f"{volume_name}-5"))
    out.append(claim_dict(f"{volume_name}-6", storage_class=sc_name, volume_name="missing-in-action"))
    return out


def fake_attachments(count: int, drivers: Sequence[str]) -> list[dict[str, Any]]:
    """``getFakeVolumeAttachmentLister``: ``count`` attachments per driver, of PVs ``csi-<driver>-<j>``."""
    return [
        volume_attachment_dict(f"va-{driver}-{j}".replace("/", "-"), NODE, driver, pv=f"csi-{driver}-{j}")
        for driver in drivers
        for j in range(count)
    ]


def node_csinode(limit_source: str, limit: int, drivers: Sequence[str]) -> list[dict[str, Any]]:
    """``getNodeWithPodAndVolumeLimits``'s CSINode (with ``enableMigrationOnNode`` for AWS EBS)."""
    if limit_source == "csinode":
        return [csinode_dict(NODE, dict.fromkeys(drivers, limit), migrated=[AWS_IN_TREE])]
    if limit_source == "csinode-with-no-limit":
        return [csinode_dict(NODE, dict.fromkeys(drivers), migrated=[AWS_IN_TREE])]
    if limit_source == "no-csi-driver":
        return [csinode_dict(NODE, {}, migrated=[AWS_IN_TREE])]
    return []


def ephemeral_pod(name: str, namespace: str, uid: str, *volume_names: str, extra: Sequence[Any] = ()) -> Pod:
    return pod_with_volumes(
        name, [*extra, *(ephemeral_volume(v) for v in volume_names)], namespace=namespace, uid=uid
    )


def ephemeral_claim(name: str, owner_uid: str | None) -> dict[str, Any]:
    return claim_dict(name, namespace="test", storage_class=SC_NAME, owner_uid=owner_uid)


CONFIG_MAP = volume("cm", "configMap", {"name": "cm"})
SECRET = volume("secret", "secret", {"secretName": "s"})
AWS_INLINE = volume("aws", "awsElasticBlockStore", {"volumeID": "aws-inline1"})

RUNNING_POD = claims_pod("csi-ebs.csi.aws.com-3")
PENDING_VOLUME_POD = claims_pod("csi-4")
UNBOUND_PVC_POD_2 = claims_pod("csi-4")
MISSING_PV_POD = claims_pod("csi-6")
NO_SC_PVC_POD = claims_pod("csi-5")
GCE_TWO_VOL_POD = claims_pod("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
IN_TREE_ONE_VOL_POD = claims_pod("csi-kubernetes.io/aws-ebs-0")
IN_TREE_TWO_VOL_POD = claims_pod("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2")
CSI_EBS_ONE_VOL_POD = claims_pod("csi-ebs.csi.aws.com-0")
CSI_EBS_TWO_VOL_POD = claims_pod("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
IN_TREE_NON_MIGRATABLE_ONE_VOL_POD = claims_pod("csi-kubernetes.io/hostpath-0")
EPHEMERAL_VOLUME_POD = ephemeral_pod("abc", "test", "12345", "xyz")
EPHEMERAL_CLAIM = ephemeral_claim("abc-xyz", "12345")
CONFLICTING_CLAIM = ephemeral_claim("abc-xyz", None)
EPHEMERAL_TWO_VOLUME_POD = ephemeral_pod("abc", "test", "12345II", "x", "y")
EPHEMERAL_CLAIM_X = ephemeral_claim("abc-x", "12345II")
EPHEMERAL_CLAIM_Y = ephemeral_claim("abc-y", "12345II")
IN_TREE_INLINE_VOL_POD = pod_with_volumes("pod", [AWS_INLINE])
IN_TREE_INLINE_VOL_POD_WITH_SAME_CSI_VOLUME_ID = pod_with_volumes(
    "pod", [volume("aws", "awsElasticBlockStore", {"volumeID": "csi-ebs.csi.aws.com-1"})]
)
ONLY_CONFIGMAP_AND_SECRET_VOL_POD = pod_with_volumes("pod", [CONFIG_MAP, SECRET])
PVC_POD_WITH_CONFIGMAP_AND_SECRET = pod_with_volumes(
    "pod", [CONFIG_MAP, SECRET, claim_volume("csi-ebs.csi.aws.com-0")]
)
EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET = ephemeral_pod("abc", "test", "", "xyz", extra=[CONFIG_MAP, SECRET])
INLINE_MIGRATABLE_POD_WITH_CONFIGMAP_AND_SECRET = pod_with_volumes("pod", [CONFIG_MAP, SECRET, AWS_INLINE])


def on_node(p: Pod) -> Pod:
    """The same pod, running on the test node."""
    raw = dict(p.raw)
    raw["spec"] = {**raw["spec"], "nodeName": NODE}
    return Pod.from_dict(raw)


def claim_not_found(namespace: str, name: str) -> Status:
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [f'looking up PVC {namespace}/{name}: persistentvolumeclaim "{name}" not found'],
    )


@dataclass
class Case:
    test: str
    new_pod: Pod
    driver_names: list[str]
    existing_pods: list[Pod] = field(default_factory=list)
    extra_claims: list[dict[str, Any]] = field(default_factory=list)
    max_vols: int = 0
    va_count: int = 0
    limit_source: str = ""
    want: Status | None = None
    want_pre_filter: Status | None = None
    want_error: str = ""


CSI_LIMITS_CASES = [
    Case(
        "should count VolumeAttachments towards volume limit when no pods exist",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        max_vols=2,
        va_count=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should schedule pod when VolumeAttachments count does not exceed limit",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        max_vols=2,
        va_count=1,
        limit_source="csinode",
    ),
    Case(
        "fits when node volume limit >= new pods CSI volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=4,
        limit_source="csinode",
    ),
    Case(
        "doesn't when node volume limit <= pods CSI volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should when driver does not support volume limits",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode-with-no-limit",
    ),
    Case(
        "count pending PVCs towards volume limit <= pods CSI volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [PENDING_VOLUME_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [PENDING_VOLUME_POD, UNBOUND_PVC_POD_2, CSI_EBS_TWO_VOL_POD],
        max_vols=4,
        limit_source="csinode",
    ),
    Case(
        "should count PVCs with invalid PV name but valid SC",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [MISSING_PV_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "don't count pvcs with missing SC towards volume limit",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, NO_SC_PVC_POD],
        max_vols=2,
        limit_source="csinode",
    ),
    Case(
        "count pvcs with the same type towards volume limit",
        CSI_EBS_ONE_VOL_POD,
        [EBS, GCE],
        [GCE_TWO_VOL_POD, CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "don't count pvcs with different type towards volume limit",
        GCE_TWO_VOL_POD,
        [EBS, GCE],
        [CSI_EBS_TWO_VOL_POD, RUNNING_POD],
        max_vols=2,
        limit_source="csinode",
    ),
    Case(
        "should count in-tree volumes if migration is enabled",
        IN_TREE_ONE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case("nil csi node", IN_TREE_INLINE_VOL_POD, [AWS_IN_TREE, EBS], [IN_TREE_TWO_VOL_POD]),
    Case(
        "should count unbound in-tree volumes if migration is enabled",
        PENDING_VOLUME_POD,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should not limit pod if volume used does not report limits",
        IN_TREE_ONE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode-with-no-limit",
    ),
    Case(
        "should not count non-migratable in-tree volumes",
        IN_TREE_NON_MIGRATABLE_ONE_VOL_POD,
        [HOSTPATH_IN_TREE, EBS],
        [CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
    ),
    Case(
        "should count in-tree inline volumes if migration is enabled",
        IN_TREE_INLINE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        IN_TREE_ONE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [CSI_EBS_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should count in-tree, inline and csi volumes if migration is "
        "enabled (when scheduling in-tree volumes)",
        IN_TREE_INLINE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [CSI_EBS_TWO_VOL_POD, IN_TREE_ONE_VOL_POD],
        max_vols=3,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "should not count in-tree, inline and csi volumes if migration "
        "is enabled (when scheduling in-tree volumes)",
        IN_TREE_INLINE_VOL_POD_WITH_SAME_CSI_VOLUME_ID,
        [AWS_IN_TREE, EBS],
        [CSI_EBS_TWO_VOL_POD, IN_TREE_ONE_VOL_POD],
        max_vols=3,
        limit_source="csinode",
    ),
    Case(
        "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
        CSI_EBS_ONE_VOL_POD,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "ephemeral volume missing",
        EPHEMERAL_VOLUME_POD,
        [EBS],
        limit_source="csinode-with-no-limit",
        want=claim_not_found("test", "abc-xyz"),
    ),
    Case(
        "ephemeral volume not owned",
        EPHEMERAL_VOLUME_POD,
        [EBS],
        extra_claims=[CONFLICTING_CLAIM],
        limit_source="csinode-with-no-limit",
        want_error="PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",
    ),
    Case(
        "ephemeral volume unbound",
        EPHEMERAL_VOLUME_POD,
        [EBS],
        extra_claims=[EPHEMERAL_CLAIM],
        limit_source="csinode-with-no-limit",
    ),
    Case(
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        EPHEMERAL_VOLUME_POD,
        [EBS],
        [RUNNING_POD, CSI_EBS_TWO_VOL_POD],
        [EPHEMERAL_CLAIM],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, EPHEMERAL_TWO_VOLUME_POD],
        [EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "persistent doesn't when node volume limit <= pods ephemeral CSI "
        "volume + persistent volume, ephemeral disabled",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD],
        [EPHEMERAL_CLAIM],
        max_vols=3,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD],
        [EPHEMERAL_CLAIM],
        max_vols=3,
        limit_source="csinode",
        want=EXCEEDED,
    ),
    Case(
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        CSI_EBS_ONE_VOL_POD,
        [EBS],
        [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD],
        [EPHEMERAL_CLAIM],
        max_vols=5,
        limit_source="csinode",
    ),
    Case(
        "skip Filter when the pod only uses secrets and configmaps",
        ONLY_CONFIGMAP_AND_SECRET_VOL_POD,
        [EBS],
        max_vols=2,
        limit_source="csinode",
        want_pre_filter=SKIP,
    ),
    Case(
        "don't skip Filter when the pod has pvcs",
        PVC_POD_WITH_CONFIGMAP_AND_SECRET,
        [EBS],
        max_vols=2,
        limit_source="csinode",
    ),
    Case(
        "don't skip Filter when the pod has ephemeral volumes",
        EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET,
        [EBS],
        limit_source="csinode-with-no-limit",
        want=claim_not_found("test", "abc-xyz"),
    ),
    Case(
        "don't skip Filter when the pod has inline migratable volumes",
        INLINE_MIGRATABLE_POD_WITH_CONFIGMAP_AND_SECRET,
        [AWS_IN_TREE, EBS],
        [IN_TREE_TWO_VOL_POD],
        max_vols=2,
        limit_source="csinode",
        want=EXCEEDED,
    ),
]


@pytest.mark.parametrize("case", CSI_LIMITS_CASES, ids=[c.test for c in CSI_LIMITS_CASES])
def test_csi_limits(case: Case) -> None:
    objects = [
        *fake_pvs("csi", case.driver_names),
        *fake_pvcs("csi", SC_NAME, case.driver_names),
        *case.extra_claims,
        storage_class_dict(SC_NAME, provisioner=case.driver_names[0]),
        *fake_attachments(case.va_count, case.driver_names),
        *node_csinode(case.limit_source, case.max_vols, case.driver_names),
    ]
    node = make_node(NODE, {"cpu": "4", "memory": "8Gi", "pods": "110"})
    snapshot = build_snapshot([node], [on_node(p) for p in case.existing_pods])
    plugin = NodeVolumeLimits(None, handle_with(objects, snapshot))
    state = CycleState()
    _, pre = plugin.pre_filter(state, case.new_pod, snapshot)
    assert pre == case.want_pre_filter
    if pre is not None:
        return
    if case.want_error:
        with pytest.raises(VolumeError) as info:
            plugin.filter_nodes(state, case.new_pod, snapshot.table)
        assert str(info.value) == case.want_error
        return
    got = node_statuses(plugin.filter_nodes(state, case.new_pod, snapshot.table), snapshot)
    assert got == {NODE: case.want}


# -- TestCSILimitsQHint ----------------------------------------------------------------------------

POD_EBS = claims_pod("csi-ebs.csi.aws.com-2")
QHINT_CASES: list[tuple[str, Pod, QueueingHint]] = [
    ("return a Queue when a deleted pod has a PVC", on_node(claims_pod("placeholder")), Q),
    (
        "return a Queue when a deleted pod has a inline migratable volume",
        on_node(pod_with_volumes("pod", [volume("v", "awsElasticBlockStore")])),
        Q,
    ),
    (
        "return a QueueSkip when a deleted pod doesn't have any volume",
        on_node(pod_with_volumes("pod")),
        QSKIP,
    ),
    ("return a QueueSkip when a deleted pod is not scheduled.", claims_pod("csi-ebs.csi.aws.com-0"), QSKIP),
]


@pytest.mark.parametrize(("test", "deleted", "want"), QHINT_CASES, ids=[c[0] for c in QHINT_CASES])
def test_csi_limits_qhint(test: str, deleted: Pod, want: QueueingHint) -> None:
    assert NodeVolumeLimits().is_schedulable_after_pod_deleted(POD_EBS, deleted, None) == want


# -- TestCSILimitsAddedPVCQHint --------------------------------------------------------------------


def parsed(obj: Mapping[str, Any]) -> Any:
    handle = handle_with([obj])
    meta = obj["metadata"]
    return handle.informers.informer(obj["kind"]).get(meta.get("namespace"), meta["name"])


ADDED_PVC_CASES: list[tuple[str, Pod, dict[str, Any], QueueingHint]] = [
    (
        "a pod isn't in the same namespace as an added PVC",
        pod_with_volumes("p", namespace="ns1"),
        claim_dict("c", namespace="ns2"),
        QSKIP,
    ),
    (
        "a pod is in the same namespace as an added PVC",
        pod_with_volumes("p", [claim_volume("pvc1")], namespace="ns1"),
        claim_dict("pvc1", namespace="ns1"),
        Q,
    ),
    (
        "a pod has an ephemeral volume related to an added PVC",
        pod_with_volumes("pod1", [ephemeral_volume("ephemeral")], namespace="ns1"),
        claim_dict("pod1-ephemeral", namespace="ns1"),
        Q,
    ),
    (
        "a pod doesn't have the same PVC as an added PVC",
        pod_with_volumes("p", [claim_volume("pvc1")], namespace="ns1"),
        claim_dict("pvc2", namespace="ns1"),
        QSKIP,
    ),
    (
        "a pod doesn't have any PVC attached",
        pod_with_volumes("p", namespace="ns1"),
        claim_dict("pvc2", namespace="ns1"),
        QSKIP,
    ),
]


@pytest.mark.parametrize(
    ("test", "target", "added", "want"), ADDED_PVC_CASES, ids=[c[0] for c in ADDED_PVC_CASES]
)
def test_csi_limits_added_pvc_qhint(
    test: str, target: Pod, added: dict[str, Any], want: QueueingHint
) -> None:
    assert NodeVolumeLimits().is_schedulable_after_pvc_added(target, None, parsed(added)) == want


# -- TestCSILimitsDeletedVolumeAttachmentQHint -----------------------------------------------------

AWS_TEST = volume("aws", "awsElasticBlockStore", {"volumeID": "test"})
PVC1 = claim_volume("pvc1")
VA_PV1 = volume_attachment_dict("volumeattachment1", "fake-node", "test.storage.gke.io", pv="pv1")
VA_EBS_INLINE = volume_attachment_dict("volumeattachment1", "fake-node", EBS, inline_driver=EBS)
DELETED_VA_CASES: list[tuple[str, list[dict[str, Any]], bool, dict[str, Any], QueueingHint]] = [
    ("a pod has PVC when VolumeAttachment is deleting", [PVC1], True, VA_PV1, Q),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) when "
        "VolumeAttachment (AWSEBSDriver) is deleting (match)",
        [AWS_TEST],
        False,
        VA_EBS_INLINE,
        Q,
    ),
    (
        "a pod has an Inline Migratable volume (GCEPDDriver) when "
        "VolumeAttachment (AWSEBSDriver) is deleting (no match)",
        [volume("gce", "gcePersistentDisk", {"pdName": "test"})],
        False,
        VA_EBS_INLINE,
        QSKIP,
    ),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC "
        "when VolumeAttachment (AWSEBSDriver) is deleting",
        [AWS_TEST, PVC1],
        True,
        VA_EBS_INLINE,
        Q,
    ),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC "
        "when VolumeAttachment (AWSEBSDriver)  is deleting",
        [AWS_TEST, PVC1],
        True,
        VA_PV1,
        Q,
    ),
    ("a pod has no PVC when VolumeAttachment is deleting", [], False, VA_PV1, QSKIP),
]


@pytest.mark.parametrize(
    ("test", "volumes", "with_claim", "deleted", "want"),
    DELETED_VA_CASES,
    ids=[c[0] for c in DELETED_VA_CASES],
)
def test_csi_limits_deleted_volume_attachment_qhint(
    test: str, volumes: list[dict[str, Any]], with_claim: bool, deleted: dict[str, Any], want: QueueingHint
) -> None:
    objects = [claim_dict("pvc1", namespace="ns1", volume_name="pv1")] if with_claim else []
    plugin = NodeVolumeLimits(None, handle_with(objects))
    target = pod_with_volumes("p", volumes, namespace="ns1")
    va: VolumeAttachment = parsed(deleted)
    assert plugin.is_schedulable_after_volume_attachment_deleted(target, va, None) == want


# -- CSINode updates -------------------------------------------------------------------------------


def csinode(drivers: Mapping[str, int | None], migrated: Sequence[str] = ()) -> CSINode:
    view: CSINode = parsed(csinode_dict("n", drivers, migrated=migrated))
    return view


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (csinode({EBS: 2}), csinode({EBS: 3}), Q),
        (csinode({EBS: 2}), csinode({EBS: None}), Q),
        (csinode({EBS: 2}), csinode({}), Q),
        (csinode({EBS: 2}), csinode({EBS: 2}, [AWS_IN_TREE]), Q),
        (csinode({EBS: 2}), csinode({EBS: 2}), QSKIP),
        (csinode({EBS: 2}), csinode({EBS: 1}), QSKIP),
        (csinode({EBS: None}), csinode({EBS: 5, GCE: 1}), QSKIP),
    ],
    ids=["raised", "lifted", "driver gone", "migration changed", "unchanged", "lowered", "limits added"],
)
def test_is_schedulable_after_csi_node_updated(old: CSINode, new: CSINode, want: QueueingHint) -> None:
    assert NodeVolumeLimits().is_schedulable_after_csi_node_updated(POD_EBS, old, new) == want


# -- beyond the tables -----------------------------------------------------------------------------

NODE_ALLOCATABLE = {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_filter_over_many_nodes() -> None:
    """Each node is judged against its own CSINode: nodes without one, or without a limit for the
    driver, always fit; attachments count only on their node."""
    nodes = [
        make_node(n, NODE_ALLOCATABLE) for n in ("full", "room", "no-csinode", "other-driver", "attached")
    ]
    objects = [
        *bound_claim("c-new", "pv-new", csi=(EBS, "h-new")),
        *bound_claim("c-a", "pv-a", csi=(EBS, "h-a")),
        *bound_claim("c-b", "pv-b", csi=(EBS, "h-b")),
        csinode_dict("full", {EBS: 2}),
        csinode_dict("room", {EBS: 3}),
        csinode_dict("other-driver", {GCE: 0}),
        csinode_dict("attached", {EBS: 1}),
        volume_attachment_dict("va-1", "attached", EBS, pv="pv-a"),
    ]
    existing = [
        pod_with_volumes(f"{n}-user", [claim_volume("c-a"), claim_volume("c-b")], node_name=n)
        for n in ("full", "room", "no-csinode", "other-driver")
    ]
    snapshot = build_snapshot(nodes, existing)
    plugin = NodeVolumeLimits(None, handle_with(objects, snapshot))
    incoming = pod_with_volumes("new", [claim_volume("c-new")])
    got = node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot)
    assert got == {
        "full": EXCEEDED,
        "room": None,
        "no-csinode": None,
        "other-driver": None,
        "attached": EXCEEDED,
    }
    # A volume the node's pods already use costs nothing more; one only attached still does (the
    # pod's volumes are checked against the pods' alone, as upstream).
    sharing = pod_with_volumes("sharing", [claim_volume("c-a")])
    got = node_statuses(plugin.filter_nodes(CycleState(), sharing, snapshot.table), snapshot)
    assert got["full"] is None and got["attached"] == EXCEEDED


def test_portworx_counts_only_where_its_migration_is_on() -> None:
    """Portworx volumes count where the CSINode's migrated-plugins annotation lists the plugin."""
    px = "pxd.portworx.com"
    objects = [
        csinode_dict("on", {px: 1}, migrated=["kubernetes.io/portworx-volume"]),
        csinode_dict("off", {px: 1}),
    ]
    nodes = [make_node(n, NODE_ALLOCATABLE) for n in ("on", "off")]
    existing = [
        pod_with_volumes(f"{n}-user", [volume("px", "portworxVolume", {"volumeID": f"px-{n}"})], node_name=n)
        for n in ("on", "off")
    ]
    snapshot = build_snapshot(nodes, existing)
    plugin = NodeVolumeLimits(None, handle_with(objects, snapshot))
    incoming = pod_with_volumes("new", [volume("px", "portworxVolume", {"volumeID": "px-new"})])
    got = node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot)
    assert got == {"on": EXCEEDED, "off": None}


def test_counts_follow_claim_changes() -> None:
    """A node's counted volumes are kept between cycles, and counted again when a claim changes: a
    claim that gets bound to the volume the new pod uses stops costing an extra slot."""
    store = MemoryStore()
    for obj in (
        storage_class_dict("fast", provisioner=EBS),
        claim_dict("shared", storage_class="fast"),
        *bound_claim("mine", "pv-h1", csi=(EBS, "h1")),
        csinode_dict(NODE, {EBS: 1}),
    ):
        store.create(obj)
    existing = pod_with_volumes("user", [claim_volume("shared")], node_name=NODE)
    snapshot = build_snapshot([make_node(NODE, NODE_ALLOCATABLE)], [existing])
    handle = store_handle(store, snapshot)
    handle.informers.pump()
    plugin = NodeVolumeLimits(None, handle)
    incoming = pod_with_volumes("new", [claim_volume("mine")])
    assert node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot) == {
        NODE: EXCEEDED
    }
    shared = store.get("PersistentVolumeClaim", "default", "shared")
    assert shared is not None
    store.update({**shared, "spec": {**shared["spec"], "volumeName": "pv-h1-copy"}})
    store.create(pv_dict("pv-h1-copy", csi=(EBS, "h1")))
    handle.informers.pump()
    assert node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot) == {
        NODE: None
    }


def test_removing_a_victim_frees_its_volumes() -> None:
    """Preemption's what-if NodeInfo (a victim removed) is what the plugin counts."""
    objects = [
        *bound_claim("c-a", "pv-a", csi=(EBS, "h-a")),
        *bound_claim("c-new", "pv-new", csi=(EBS, "h-new")),
        csinode_dict(NODE, {EBS: 1}),
    ]
    victim = pod_with_volumes("victim", [claim_volume("c-a")], node_name=NODE)
    snapshot = build_snapshot([make_node(NODE, NODE_ALLOCATABLE)], [victim])
    plugin = NodeVolumeLimits(None, handle_with(objects, snapshot))
    incoming = pod_with_volumes("new", [claim_volume("c-new")])
    assert node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot) == {
        NODE: EXCEEDED
    }
    original = snapshot.node_infos[NODE]
    work = original.clone()
    work.remove_pod(victim)
    snapshot.node_infos[NODE] = work
    try:
        assert node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot) == {
            NODE: None
        }
    finally:
        snapshot.node_infos[NODE] = original
    assert node_statuses(plugin.filter_nodes(CycleState(), incoming, snapshot.table), snapshot) == {
        NODE: EXCEEDED
    }


def test_in_tree_volume_handles() -> None:
    """Translated handles: ``aws://`` prefixes stripped, GCE PD ids by zone or region."""
    assert ebs_volume_id("aws://us-east-1a/vol-0abc") == "vol-0abc"
    assert ebs_volume_id("vol-0abc") == "vol-0abc"
    with pytest.raises(TranslationError):
        ebs_volume_id("aws://us-east-1a/disk-1")
    assert (
        inline_volume_handle("gcePersistentDisk", {"pdName": "d"})
        == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
    )
    zonal = parsed(
        pv_dict(
            "p",
            labels={"topology.kubernetes.io/zone": "us-central1-a"},
            source=("gcePersistentDisk", {"pdName": "d"}),
        )
    )
    assert pv_volume_handle(zonal) == "projects/UNSPECIFIED/zones/us-central1-a/disks/d"
    regional = parsed(
        pv_dict(
            "p",
            labels={"failure-domain.beta.kubernetes.io/zone": "us-central1-a__us-central1-b"},
            source=("gcePersistentDisk", {"pdName": "d"}),
        )
    )
    assert pv_volume_handle(regional) == "projects/UNSPECIFIED/regions/us-central1/disks/d"


def test_sign_pod() -> None:
    plugin = NodeVolumeLimits()
    assert plugin.sign_pod(ONLY_CONFIGMAP_AND_SECRET_VOL_POD) == ((), None)
    for p in (CSI_EBS_ONE_VOL_POD, EPHEMERAL_VOLUME_POD, IN_TREE_INLINE_VOL_POD):
        fragments, status = plugin.sign_pod(p)
        assert fragments == () and status is not None and not status.ok


# -- through the simulation ------------------------------------------------------------------------


def sim_pod(name: str, claim_name: str) -> dict[str, Any]:
    raw = dict(pod_with_volumes(name, [claim_volume(claim_name, "data")]).raw)
    raw["metadata"] = {k: v for k, v in raw["metadata"].items() if k != "uid"}
    return raw


def test_csi_limit_stops_a_nodes_pods_at_its_count() -> None:
    """Two nodes whose CSI driver takes two volumes each: four of five pods run, two per node; the
    fifth waits with upstream's message and runs once a pod with a volume is deleted."""
    sim = Simulation(registry=default_registry())
    for n in ("n1", "n2"):
        sim.store.create(
            {"kind": "Node", "metadata": {"name": n}, "status": {"allocatable": NODE_ALLOCATABLE}}
        )
        sim.store.create(csinode_dict(n, {EBS: 2}))
    for i in range(5):
        create_all(sim.store, bound_claim(f"data-{i}", f"pv-{i}", csi=(EBS, f"vol-{i}")))
        sim.store.create(sim_pod(f"db-{i}", f"data-{i}"))
    result = sim.run()
    by_name = {o.name: o for o in result.outcomes}
    placed = [o for o in result.outcomes if o.status == "Scheduled"]
    assert len(placed) == 4
    assert sorted(o.node or "" for o in placed) == ["n1", "n1", "n2", "n2"]
    (waiting,) = [o for o in result.outcomes if o.status != "Scheduled"]
    assert waiting.status == "Unschedulable"
    assert waiting.message.startswith(f"0/2 nodes are available: 2 {ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED}.")
    sim.store.delete("Pod", "default", placed[0].name)
    result = sim.run()
    after = {o.name: o for o in result.outcomes}
    assert placed[0].name not in after
    assert (after[waiting.name].status, after[waiting.name].node) == (
        "Scheduled",
        by_name[placed[0].name].node,
    )


def test_preemption_frees_a_volume_slot() -> None:
    """A node full of volumes for the driver is a preemption candidate: the lower-priority pod
    holding the slot is evicted and the important pod takes the node."""
    sim = Simulation(registry=default_registry())
    sim.store.create(
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": NODE_ALLOCATABLE}}
    )
    sim.store.create(csinode_dict("n1", {EBS: 1}))
    for i in range(2):
        create_all(sim.store, bound_claim(f"data-{i}", f"pv-{i}", csi=(EBS, f"vol-{i}")))
    low = sim_pod("low", "data-0")
    low["spec"]["priority"] = 0
    sim.store.create(low)
    assert [(o.name, o.status) for o in sim.run().outcomes] == [("low", "Scheduled")]
    high = sim_pod("high", "data-1")
    high["spec"]["priority"] = 100
    sim.store.create(high)
    result = sim.run()
    assert {(o.name, o.status, o.node) for o in result.outcomes} >= {("high", "Scheduled", "n1")}
    assert "default/low" in result.evicted


@pytest.mark.parametrize("seed", range(40))
def test_per_slot_counts_agree_with_counting_node_by_node(seed: int) -> None:
    """Filter over the snapshot's own table answers from counts kept per slot; over a fork it counts
    each node's pods one by one. Both must agree on random clusters: limits of two drivers, shared
    volumes, attachments, in-tree volumes migrated or not, nodes without a CSINode — including after
    pods come and go (rows recounted by their stamps)."""
    import random

    from kubesched.cache.cache import SchedulerCache, Snapshot

    rng = random.Random(seed)
    names = [f"n{i}" for i in range(8)]
    objects: list[dict[str, Any]] = []
    for i in range(12):
        csi = (rng.choice([EBS, GCE]), f"h{i}")
        objects += bound_claim(f"c{i}", f"pv{i}", csi=csi)
    for name in names:
        if rng.random() < 0.8:
            objects.append(csinode_dict(name, {EBS: rng.randint(0, 3), GCE: rng.choice([None, 1, 2])}))
    for i in range(rng.randint(0, 4)):
        objects.append(volume_attachment_dict(f"va{i}", rng.choice(names), EBS, pv=f"pv{rng.randrange(12)}"))
    cache = SchedulerCache()
    for name in names:
        cache.add_node(make_node(name, NODE_ALLOCATABLE))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    plugin = NodeVolumeLimits(None, handle_with(objects, snapshot))
    placed: list[Pod] = []
    for step in range(6):
        for j in range(rng.randint(1, 4)):
            claims = rng.sample(range(12), rng.randint(1, 2))
            p = pod_with_volumes(
                f"p{step}-{j}", [claim_volume(f"c{c}") for c in claims], node_name=rng.choice(names)
            )
            cache.add_pod(p)
            placed.append(p)
        if placed and rng.random() < 0.5:
            cache.remove_pod(placed.pop(rng.randrange(len(placed))))
        cache.update_snapshot(snapshot)
        incoming = pod_with_volumes("new", [claim_volume(f"c{c}") for c in rng.sample(range(12), 2)])
        fast = plugin.filter_nodes(CycleState(), incoming, snapshot.table)
        slow = plugin.filter_nodes(CycleState(), incoming, snapshot.table.fork())
        assert node_statuses(fast, snapshot) == node_statuses(slow, snapshot)
