"""The storage kinds' strategies: discovery entries, upstream's defaults, validation (upstream's test
case names where a case mirrors one of ``pkg/apis/core/validation`` or ``pkg/apis/storage/
validation``), update rules, status writes, kubectl's columns, and DefaultStorageClass admission."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.registry.admission import admitted, apply_defaults
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND, NAMESPACED_KINDS
from kubesched.store.memory import MemoryStore

PV = BY_KIND["PersistentVolume"]
PVC = BY_KIND["PersistentVolumeClaim"]
SC = BY_KIND["StorageClass"]
CSINODE = BY_KIND["CSINode"]
CSIDRIVER = BY_KIND["CSIDriver"]
CAPACITY = BY_KIND["CSIStorageCapacity"]
ATTACHMENT = BY_KIND["VolumeAttachment"]


def _pv(name: str = "foo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "capacity": {"storage": "10G"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/foo", "type": "Directory"},
    }
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": body}


def _without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    for key in keys:
        obj["spec"].pop(key)
    return obj


def _pvc(name: str = "foo", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchExpressions": [{"key": "key2", "operator": "Exists"}]},
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "resources": {"requests": {"storage": "10G"}},
        "storageClassName": "valid",
        "volumeMode": "Filesystem",
    }
    body.update(spec)
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": body}


def _class(name: str = "fast", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/foo-provisioner",
        **fields,
    }


def _refusal(strategy: Any, obj: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        strategy.validate(obj)
    return refused.value


def _causes(error: ApiError) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in (error.details or {})["causes"]]


def _affinity(**expression: Any) -> dict[str, Any]:
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}


def _affinity_volume(affinity: dict[str, Any]) -> dict[str, Any]:
    return _without(
        _pv(
            "test-affinity-volume",
            gcePersistentDisk={"pdName": "foo"},
            storageClassName="test-storage-class",
            nodeAffinity=affinity,
        ),
        "hostPath",
    )


# -- discovery ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "group", "plural", "short", "namespaced", "subresources"),
    [
        ("PersistentVolume", "", "persistentvolumes", ("pv",), False, ("status",)),
        ("PersistentVolumeClaim", "", "persistentvolumeclaims", ("pvc",), True, ("status",)),
        ("StorageClass", "storage.k8s.io", "storageclasses", ("sc",), False, ()),
        ("CSINode", "storage.k8s.io", "csinodes", (), False, ()),
        ("CSIDriver", "storage.k8s.io", "csidrivers", (), False, ()),
        ("CSIStorageCapacity", "storage.k8s.io", "csistoragecapacities", (), True, ()),
        ("VolumeAttachment", "storage.k8s.io", "volumeattachments", (), False, ("status",)),
    ],
)
def test_each_storage_kind_is_served_as_kube_apiserver_serves_it(
    kind, group, plural, short, namespaced, subresources
):
    res = BY_KIND[kind].resource
    assert (res.group, res.version, res.plural, res.short_names) == (group, "v1", plural, short)
    assert res.namespaced is namespaced and (kind in NAMESPACED_KINDS) is namespaced
    assert res.subresources == subresources


def test_storage_class_and_capacity_fields_are_at_the_top_level():
    assert {"provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "allowedTopologies"} <= (
        SC.known_fields
    )
    assert "spec" not in SC.known_fields
    assert {"nodeTopology", "storageClassName", "capacity", "maximumVolumeSize"} <= CAPACITY.known_fields


# -- defaults ----------------------------------------------------------------------------------
def test_defaults_are_upstreams():
    pv = _without(_pv(), "hostPath")
    pv["spec"]["hostPath"] = {"path": "/data"}
    apply_defaults(pv)
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem" and pv["spec"]["hostPath"]["type"] == ""
    assert pv["status"] == {"phase": "Pending"}

    claim = _without(_pvc(), "volumeMode")
    apply_defaults(claim)
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}

    sc = _class()
    apply_defaults(sc)
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")

    driver: dict[str, Any] = {"kind": "CSIDriver", "metadata": {"name": "d.example.com"}, "spec": {}}
    apply_defaults(driver)
    assert driver["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "volumeLifecycleModes": ["Persistent"],
        "seLinuxMount": False,
    }


def test_given_values_are_kept_by_the_defaults():
    pv = _pv(persistentVolumeReclaimPolicy="Delete", volumeMode="Block")
    apply_defaults(pv)
    assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["volumeMode"]) == ("Delete", "Block")
    sc = _class(reclaimPolicy="Retain", volumeBindingMode="WaitForFirstConsumer")
    apply_defaults(sc)
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Retain", "WaitForFirstConsumer")


def test_a_new_volume_and_claim_start_pending_whatever_status_they_carry():
    pv = {**_pv(), "status": {"phase": "Bound"}}
    PV.prepare_for_create(pv)
    assert pv["status"]["phase"] == "Pending" and pv["status"]["lastPhaseTransitionTime"]
    claim = {**_pvc(), "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    PVC.prepare_for_create(claim)
    PVC.defaults(claim)
    assert claim["status"] == {"phase": "Pending"}


# -- PersistentVolume validation (TestValidatePersistentVolumes) ------------------------------
PV_CASES = [
    ("good-volume", _pv(), None),
    ("good-volume-with-capacity-unit", _pv(capacity={"storage": "10Gi"}), None),
    ("good-volume-without-capacity-unit", _pv(capacity={"storage": "10"}), None),
    ("good-volume-with-storage-class", _pv(storageClassName="valid"), None),
    ("good-volume-with-retain-policy", _pv(persistentVolumeReclaimPolicy="Retain"), None),
    ("good-volume-with-volume-mode", _pv(volumeMode="Filesystem"), None),
    ("invalid-accessmode", _pv(accessModes=["fakemode"]), "spec.accessModes"),
    (
        "invalid-reclaimpolicy",
        _pv(persistentVolumeReclaimPolicy="fakeReclaimPolicy"),
        "spec.persistentVolumeReclaimPolicy",
    ),
    ("invalid-volume-mode", _pv(volumeMode="fakeVolumeMode"), "spec.volumeMode"),
    ("with-read-write-once-pod", _pv(accessModes=["ReadWriteOncePod"]), None),
    (
        "with-read-write-once-pod-and-others",
        _pv(accessModes=["ReadWriteOncePod", "ReadWriteMany"]),
        "spec.accessModes",
    ),
    ("missing-volume-source", _without(_pv(), "hostPath"), "spec"),
    ("missing-capacity", _without(_pv(), "capacity"), "spec.capacity"),
    ("bad-volume-zero-capacity", _pv(capacity={"storage": "0"}), "spec.capacity[storage]"),
    ("missing-accessmodes", _without(_pv("goodname"), "accessModes"), "spec.accessModes"),
    (
        "too-many-sources",
        _without(
            _pv(capacity={"storage": "5G"}, gcePersistentDisk={"pdName": "foo", "fsType": "ext4"}),
            "accessModes",
        ),
        "spec.gcePersistentDisk",
    ),
    (
        "host mount of / with recycle reclaim policy",
        _pv(
            "bad-recycle-do-not-want",
            hostPath={"path": "/", "type": "Directory"},
            persistentVolumeReclaimPolicy="Recycle",
        ),
        "spec.persistentVolumeReclaimPolicy",
    ),
    (
        "host mount of / with recycle reclaim policy 2",
        _pv(
            "bad-recycle-do-not-want",
            hostPath={"path": "/a/..", "type": "Directory"},
            persistentVolumeReclaimPolicy="Recycle",
        ),
        "spec.hostPath.path",
    ),
    (
        "invalid-storage-class-name",
        _pv("invalid-storage-class-name", storageClassName="-invalid-"),
        "spec.storageClassName",
    ),
    (
        "bad-hostpath-volume-backsteps",
        _pv(hostPath={"path": "/foo/..", "type": "Directory"}, storageClassName="backstep-hostpath"),
        "spec.hostPath.path",
    ),
    ("volume-node-affinity", _affinity_volume(_affinity(key="foo", operator="In", values=["bar"])), None),
    ("volume-empty-node-affinity", _affinity_volume({}), "spec.nodeAffinity.required"),
    (
        "volume-bad-node-affinity",
        _affinity_volume(_affinity(operator="In", values=["test-label-value"])),
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key",
    ),
]


@pytest.mark.parametrize(("obj", "field"), [(o, f) for _, o, f in PV_CASES], ids=[i for i, _, _ in PV_CASES])
def test_validate_persistent_volumes(obj, field):
    if field is None:
        PV.validate(copy.deepcopy(obj))
        return
    refused = _refusal(PV, copy.deepcopy(obj))
    assert refused.code == 422 and refused.reason == "Invalid"
    assert field in [f for f, _ in _causes(refused)], _causes(refused)


def test_every_broken_rule_of_a_volume_is_named_in_one_answer_worded_as_upstream():
    refused = _refusal(PV, {"kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {}})
    assert refused.message.startswith('PersistentVolume "pv1" is invalid: [')
    assert _causes(refused) == [
        ("spec.accessModes", "Required value"),
        ("spec.capacity", "Required value"),
        ("spec.capacity", 'Unsupported value: {}: supported values: "storage"'),
        ("spec", "Required value: must specify a volume type"),
    ]
    bad_mode = _refusal(PV, _pv(accessModes=["fakemode"]))
    assert _causes(bad_mode) == [
        (
            "spec.accessModes",
            'Unsupported value: "fakemode": supported values: "ReadOnlyMany", "ReadWriteMany", '
            '"ReadWriteOnce", "ReadWriteOncePod"',
        )
    ]


def test_a_local_volume_needs_node_affinity_and_a_csi_volume_a_driver_and_handle():
    local = _without(_pv(local={"path": "/mnt/disks/ssd1"}), "hostPath")
    assert ("spec.nodeAffinity", "Required value: Local volume requires node affinity") in _causes(
        _refusal(PV, local)
    )
    local["spec"]["nodeAffinity"] = _affinity(key="kubernetes.io/hostname", operator="In", values=["n1"])
    PV.validate(local)
    csi = _without(_pv(csi={}), "hostPath")
    assert [f for f, _ in _causes(_refusal(PV, csi))] == ["spec.csi.driver", "spec.csi.volumeHandle"]


def test_a_capacity_that_is_no_quantity_is_a_bad_request():
    refused = _refusal(PV, _pv(capacity={"storage": "lots"}))
    assert refused.code == 400 and "quantities must match" in refused.message


def test_a_field_of_the_wrong_type_is_refused_by_the_typed_view():
    refused = _refusal(PV, _pv(accessModes="ReadWriteOnce"))
    assert refused.code == 422 and _causes(refused)[0][0] == "spec.accessModes"


# -- PersistentVolume updates ------------------------------------------------------------------
def _stored(strategy: Any, obj: dict[str, Any]) -> dict[str, Any]:
    stored = copy.deepcopy(obj)
    strategy.prepare_for_create(stored)
    strategy.defaults(stored)
    stored["metadata"].update(uid="u1", creationTimestamp="2025-01-01T00:00:00Z", resourceVersion="5")
    return stored


def _update(strategy: Any, old: dict[str, Any], change: Any) -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    strategy.prepare_for_update(old, new)
    return new


def _update_refusal(strategy: Any, old: dict[str, Any], change: Any) -> list[tuple[str, str]]:
    with pytest.raises(ApiError) as refused:
        _update(strategy, old, change)
    assert refused.value.code == 422
    return _causes(refused.value)


def test_a_volumes_source_and_mode_are_fixed_but_its_claim_ref_and_labels_are_not():
    old = _stored(PV, _pv("pv1"))
    new = _update(PV, old, lambda o: o["spec"].update(claimRef={"namespace": "ns", "name": "c"}))
    assert new["spec"]["claimRef"]["name"] == "c" and new["status"] == old["status"]
    causes = _update_refusal(PV, old, lambda o: o["spec"]["hostPath"].update(path="/other"))
    assert causes[0][0] == "spec.persistentvolumesource"
    assert causes[0][1].startswith("Forbidden: spec.persistentvolumesource is immutable after creation")
    causes = _update_refusal(PV, old, lambda o: o["spec"].update(volumeMode="Block"))
    assert causes == [("volumeMode", 'Invalid value: "Block": field is immutable')]


def test_a_volumes_node_affinity_may_be_set_once():
    old = _stored(PV, _pv("pv1"))
    pinned = _affinity(key="kubernetes.io/hostname", operator="In", values=["n1"])
    new = _update(PV, old, lambda o: o["spec"].update(nodeAffinity=pinned))
    moved = _affinity(key="kubernetes.io/hostname", operator="In", values=["n2"])
    assert [f for f, _ in _update_refusal(PV, new, lambda o: o["spec"].update(nodeAffinity=moved))] == [
        "nodeAffinity"
    ]


def test_an_update_that_leaves_out_what_the_server_defaulted_changes_nothing():
    old = _stored(PV, _pv("pv1"))
    new = _update(PV, old, lambda o: o["spec"].pop("volumeMode"))
    assert new["spec"]["volumeMode"] == "Filesystem"


def test_the_phase_transition_time_moves_with_the_phase_on_a_status_write():
    old = _stored(PV, _pv("pv1"))
    old["status"]["lastPhaseTransitionTime"] = "2020-01-01T00:00:00Z"
    same = {**old, "status": {"phase": "Pending"}}
    PV.prepare_for_status_update(old, same)
    assert same["status"]["lastPhaseTransitionTime"] == "2020-01-01T00:00:00Z"
    bound = {**old, "status": {"phase": "Bound"}}
    PV.prepare_for_status_update(old, bound)
    assert bound["status"]["lastPhaseTransitionTime"] > "2020-01-01T00:00:00Z"


# -- PersistentVolumeClaim validation (TestValidatePersistentVolumeClaim) ---------------------
PVC_CASES = [
    ("good-claim", _pvc(), None),
    ("with-read-write-once-pod", _pvc(accessModes=["ReadWriteOncePod"]), None),
    (
        "with-read-write-once-pod-and-others",
        _pvc(accessModes=["ReadWriteOncePod", "ReadWriteMany"]),
        "spec.accessModes",
    ),
    (
        "invalid-claim-zero-capacity",
        _pvc(resources={"requests": {"storage": "0G"}}),
        "spec.resources[storage]",
    ),
    (
        "invalid-label-selector",
        _pvc(
            selector={
                "matchExpressions": [{"key": "key2", "operator": "InvalidOp", "values": ["value1", "value2"]}]
            }
        ),
        "spec.selector.matchExpressions[0].operator",
    ),
    ("invalid-accessmode", _pvc(accessModes=["fakemode"]), "spec.accessModes"),
    ("no-access-modes", _without(_pvc(), "accessModes"), "spec.accessModes"),
    ("no-resource-requests", _without(_pvc(), "resources"), "spec.resources[storage]"),
    ("invalid-resource-requests", _pvc(resources={"requests": {"memory": "10G"}}), "spec.resources[storage]"),
    (
        "negative-storage-request",
        _pvc(resources={"requests": {"storage": "-10G"}}),
        "spec.resources[storage]",
    ),
    ("zero-storage-request", _pvc(resources={"requests": {"storage": "0G"}}), "spec.resources[storage]"),
    ("invalid-storage-class-name", _pvc(storageClassName="-invalid-"), "spec.storageClassName"),
    ("invalid-volume-mode", _pvc(volumeMode="fakeVolumeMode"), "spec.volumeMode"),
    (
        "mismatch-data-source-and-ref",
        _pvc(
            dataSource={"kind": "PersistentVolumeClaim", "name": "pvc1"},
            dataSourceRef={"kind": "PersistentVolumeClaim", "name": "pvc2"},
        ),
        "spec",
    ),
    (
        "invaild-apigroup-in-data-source",
        _pvc(dataSource={"apiGroup": "^invalid", "kind": "Foo", "name": "foo1"}),
        "spec.dataSource.apiGroup",
    ),
    (
        "invaild-apigroup-in-data-source-ref",
        _pvc(dataSourceRef={"apiGroup": "^invalid", "kind": "Foo", "name": "foo1"}),
        "spec.dataSourceRef.apiGroup",
    ),
]


@pytest.mark.parametrize(
    ("obj", "field"), [(o, f) for _, o, f in PVC_CASES], ids=[i for i, _, _ in PVC_CASES]
)
def test_validate_persistent_volume_claim(obj, field):
    if field is None:
        PVC.validate(copy.deepcopy(obj))
        return
    refused = _refusal(PVC, copy.deepcopy(obj))
    assert refused.code == 422
    assert field in [f for f, _ in _causes(refused)], _causes(refused)


def test_a_claim_without_modes_or_size_is_told_both_in_upstreams_words():
    refused = _refusal(PVC, _without(_pvc("data"), "accessModes", "resources"))
    assert _causes(refused) == [
        ("spec.accessModes", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", "Required value"),
    ]
    zero = _refusal(PVC, _pvc(resources={"requests": {"storage": "0G"}}))
    assert _causes(zero) == [("spec.resources[storage]", 'Invalid value: "0": must be greater than zero')]


# -- PersistentVolumeClaim updates (TestValidatePersistentVolumeClaimUpdate) -------------------
def _bound(claim: dict[str, Any], capacity: str = "10G") -> dict[str, Any]:
    claim["spec"]["volumeName"] = "pv1"
    claim["status"] = {"phase": "Bound", "capacity": {"storage": capacity}}
    return claim


def test_a_claims_volume_name_may_be_set_once():
    old = _stored(PVC, _pvc())
    named = _update(PVC, old, lambda o: o["spec"].update(volumeName="pv1"))
    assert named["spec"]["volumeName"] == "pv1"
    causes = _update_refusal(PVC, named, lambda o: o["spec"].update(volumeName="pv2"))
    assert causes[0][0] == "spec"
    assert causes[0][1].startswith(
        "Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims\n"
    )
    assert '-\tvolumeName: "pv1"' in causes[0][1] and '+\tvolumeName: "pv2"' in causes[0][1]


def test_only_a_bound_claim_may_grow_and_never_below_its_volume():
    unbound = _stored(PVC, _pvc())
    grow = lambda o: o["spec"]["resources"]["requests"].update(storage="20G")  # noqa: E731
    assert [f for f, _ in _update_refusal(PVC, unbound, grow)] == ["spec"]
    bound = _bound(_stored(PVC, _pvc()))
    grown = _update(PVC, bound, grow)
    assert grown["spec"]["resources"]["requests"]["storage"] == "20G"
    assert grown["status"]["phase"] == "Bound"  # the status is the controller's
    bound_grown = _bound(copy.deepcopy(grown))
    shrink = lambda o: o["spec"]["resources"]["requests"].update(storage="10G")  # noqa: E731
    assert _update_refusal(PVC, bound_grown, shrink) == [
        ("spec.resources.requests.storage", "Forbidden: field can not be less than status.capacity")
    ]
    # Recovering from a failed expansion: back down, but above what the volume has.
    failed = _bound(copy.deepcopy(grown), capacity="5G")
    assert _update(PVC, failed, shrink)["spec"]["resources"]["requests"]["storage"] == "10G"


def test_a_claim_without_a_class_may_be_given_one_once():
    old = _stored(PVC, _without(_pvc(), "storageClassName"))
    given = _update(PVC, old, lambda o: o["spec"].update(storageClassName="fast"))
    assert given["spec"]["storageClassName"] == "fast"
    assert [
        f for f, _ in _update_refusal(PVC, given, lambda o: o["spec"].update(storageClassName="slow"))
    ] == ["spec"]


def test_a_class_from_the_beta_annotation_may_move_to_the_spec_and_the_annotation_is_fixed():
    beta = "volume.beta.kubernetes.io/storage-class"
    old = _stored(PVC, _without(_pvc(annotations={beta: "gold"}), "storageClassName"))
    moved = _update(PVC, old, lambda o: o["spec"].update(storageClassName="gold"))
    assert moved["spec"]["storageClassName"] == "gold"
    causes = _update_refusal(PVC, old, lambda o: o["metadata"]["annotations"].update({beta: "silver"}))
    assert (f"metadata.annotations.{beta}", 'Invalid value: "silver": field is immutable') in causes


# -- StorageClass ------------------------------------------------------------------------------
SC_CASES = [
    ("valid", _class(parameters={"kubernetes.io/foo-parameter": "free/form/string"}), None),
    ("empty provisioner", {**_class(), "provisioner": ""}, "provisioner"),
    ("invalid provisioner", _class(provisioner="kubernetes.io/invalid/provisioner"), "provisioner"),
    ("invalid empty parameter name", _class(parameters={"": "value"}), "parameters"),
    ("invalid reclaimpolicy", _class(reclaimPolicy="invalid"), "reclaimPolicy"),
    ("invalid volume binding mode", _class(volumeBindingMode="foo"), "volumeBindingMode"),
    (
        "empty values",
        _class(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}]),
        "allowedTopologies[0].matchLabelExpressions[0].values",
    ),
    (
        "duplicate values",
        _class(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}]),
        "allowedTopologies[0].matchLabelExpressions[0].values[1]",
    ),
    (
        "duplicate terms",
        _class(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}] * 2),
        "allowedTopologies[1].matchLabelExpressions",
    ),
    (
        "valid topologies",
        _class(
            allowedTopologies=[
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}
            ]
        ),
        None,
    ),
]


@pytest.mark.parametrize(("obj", "field"), [(o, f) for _, o, f in SC_CASES], ids=[i for i, _, _ in SC_CASES])
def test_validate_storage_class(obj, field):
    if field is None:
        SC.validate(copy.deepcopy(obj))
        return
    refused = _refusal(SC, copy.deepcopy(obj))
    assert refused.code == 422 and refused.message.startswith('StorageClass.storage.k8s.io "')
    assert field in [f for f, _ in _causes(refused)], _causes(refused)


def test_a_storage_class_is_fixed_once_made_but_for_its_metadata():
    old = _stored(SC, _class(parameters={"type": "ssd"}))
    labelled = _update(SC, old, lambda o: o["metadata"].update(labels={"tier": "gold"}))
    assert labelled["metadata"]["labels"] == {"tier": "gold"}
    causes = _update_refusal(
        SC,
        old,
        lambda o: o.update(
            parameters={"type": "hdd"},
            provisioner="other.example.com",
            reclaimPolicy="Retain",
            volumeBindingMode="WaitForFirstConsumer",
        ),
    )
    assert causes == [
        ("parameters", "Forbidden: updates to parameters are forbidden."),
        ("provisioner", "Forbidden: updates to provisioner are forbidden."),
        ("reclaimPolicy", "Forbidden: updates to reclaimPolicy are forbidden."),
        ("volumeBindingMode", 'Invalid value: "WaitForFirstConsumer": field is immutable'),
    ]
    # Leaving out what was defaulted is no change.
    _update(SC, old, lambda o: [o.pop("reclaimPolicy"), o.pop("volumeBindingMode")])


# -- the storage.k8s.io kinds without a class ------------------------------------------------
def _csinode(*drivers: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "CSINode", "metadata": {"name": "node-1"}, "spec": {"drivers": list(drivers)}}


def _driver(name: str = "io.kubernetes.storage.csi.driver", **fields: Any) -> dict[str, Any]:
    return {"name": name, "nodeID": "nodeA", "topologyKeys": ["company.com/zone1"], **fields}


CSINODE_CASES = [
    ("valid", _csinode(_driver(allocatable={"count": 3})), None),
    ("invalid driver name", _csinode(_driver("$csi-driver@")), "spec.drivers[0].name"),
    ("empty node id", _csinode(_driver(nodeID="")), "spec.drivers[0].nodeID"),
    (
        "invalid allocatable with negative volumes limit",
        _csinode(_driver(allocatable={"count": -1})),
        "spec.drivers[0].allocatable.count",
    ),
    ("duplicate drivers in driver specs", _csinode(_driver(), _driver()), "spec.drivers[1].name"),
    ("invalid topology keys", _csinode(_driver(topologyKeys=["company.com/zone1", ""])), "spec.drivers[0]"),
]


@pytest.mark.parametrize(
    ("obj", "field"), [(o, f) for _, o, f in CSINODE_CASES], ids=[i for i, _, _ in CSINODE_CASES]
)
def test_validate_csi_node(obj, field):
    if field is None:
        CSINODE.validate(copy.deepcopy(obj))
        return
    assert field in [f for f, _ in _causes(_refusal(CSINODE, copy.deepcopy(obj)))]


def test_a_csi_node_keeps_its_drivers_and_may_add_more():
    old = _stored(CSINODE, _csinode(_driver()))
    _update(CSINODE, old, lambda o: o["spec"]["drivers"].append(_driver("other.example.com")))
    causes = _update_refusal(CSINODE, old, lambda o: o["spec"]["drivers"][0].update(nodeID="nodeB"))
    assert [f for f, _ in causes] == ["spec.drivers"]


def test_a_csi_driver_checks_its_modes_and_keeps_attach_required():
    driver = {"kind": "CSIDriver", "metadata": {"name": "d.example.com"}, "spec": {}}
    CSIDRIVER.validate(copy.deepcopy(driver))
    bad = copy.deepcopy(driver)
    bad["spec"] = {"volumeLifecycleModes": ["no-such-mode"], "fsGroupPolicy": "invalid-mode"}
    assert [f for f, _ in _causes(_refusal(CSIDRIVER, bad))] == [
        "spec.fsGroupPolicy",
        "spec.volumeLifecycleModes",
    ]
    old = _stored(CSIDRIVER, driver)
    assert _update_refusal(CSIDRIVER, old, lambda o: o["spec"].update(attachRequired=False)) == [
        ("spec.attachedRequired", "Invalid value: false: field is immutable")
    ]
    changed = _update(CSIDRIVER, old, lambda o: o["spec"].update(podInfoOnMount=True))
    assert changed["spec"]["podInfoOnMount"] is True


def _capacity(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "cap-1", "namespace": "kube-system"},
        "storageClassName": "fast",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}},
        "capacity": "100Gi",
        **fields,
    }


def test_a_storage_capacity_needs_a_class_and_no_negative_capacity():
    CAPACITY.validate(_capacity())
    assert _causes(_refusal(CAPACITY, _capacity(capacity="-1Gi"))) == [
        ("capacity", 'Invalid value: "-1Gi": must be greater than or equal to 0')
    ]
    assert [f for f, _ in _causes(_refusal(CAPACITY, _capacity(storageClassName="-bad-")))] == [
        "storageClassName"
    ]
    old = _stored(CAPACITY, _capacity())
    assert _update(CAPACITY, old, lambda o: o.update(capacity="50Gi"))["capacity"] == "50Gi"
    assert [f for f, _ in _update_refusal(CAPACITY, old, lambda o: o.update(storageClassName="slow"))] == [
        "storageClassName"
    ]


def _attachment(**spec: Any) -> dict[str, Any]:
    body = {"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv1"}}
    body.update(spec)
    return {"kind": "VolumeAttachment", "metadata": {"name": "va-1"}, "spec": body}


def test_a_volume_attachment_names_one_source_and_its_spec_is_read_only():
    ATTACHMENT.validate(_attachment())
    both = _attachment(source={"persistentVolumeName": "pv1", "inlineVolumeSpec": {}})
    assert _causes(_refusal(ATTACHMENT, both)) == [
        ("spec.source", "Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName")
    ]
    assert [f for f, _ in _causes(_refusal(ATTACHMENT, _attachment(attacher="")))] == ["spec.attacher"]
    old = _stored(ATTACHMENT, {**_attachment(), "status": {"attached": True}})
    assert old["status"] == {"attached": False}  # the attacher's, written through its subresource
    assert [f for f, _ in _update_refusal(ATTACHMENT, old, lambda o: o["spec"].update(nodeName="n2"))] == [
        "spec"
    ]


# -- tables ------------------------------------------------------------------------------------
def _names(strategy: Any) -> list[str]:
    return [name.upper() for name, _, priority in strategy.columns if priority == 0]


def test_the_columns_are_kubectls():
    assert _names(PV) == [
        "NAME",
        "CAPACITY",
        "ACCESS MODES",
        "RECLAIM POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "REASON",
        "AGE",
    ]
    assert _names(PVC) == [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ]
    assert _names(SC) == [
        "NAME",
        "PROVISIONER",
        "RECLAIMPOLICY",
        "VOLUMEBINDINGMODE",
        "ALLOWVOLUMEEXPANSION",
        "AGE",
    ]
    assert _names(CSINODE) == ["NAME", "DRIVERS", "AGE"]
    assert _names(CSIDRIVER) == [
        "NAME",
        "ATTACHREQUIRED",
        "PODINFOONMOUNT",
        "STORAGECAPACITY",
        "TOKENREQUESTS",
        "REQUIRESREPUBLISH",
        "MODES",
        "AGE",
    ]
    assert _names(CAPACITY) == ["NAME", "STORAGECLASSNAME", "CAPACITY"]
    assert _names(ATTACHMENT) == ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    assert (
        [n for n, _, p in PV.columns if p == 1] == ["VolumeMode"] == [n for n, _, p in PVC.columns if p == 1]
    )


def test_volume_and_claim_rows():
    pv = _stored(
        PV,
        _pv(
            "pv1",
            capacity={"storage": "1.5Gi"},
            accessModes=["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            storageClassName="fast",
        ),
    )
    pv["spec"]["claimRef"] = {"namespace": "ns", "name": "data"}
    pv["status"]["reason"] = ""
    row = PV.row(pv, 0.0)
    assert row[:9] == ["pv1", "1536Mi", "RWO,RWX", "Retain", "Pending", "ns/data", "fast", "<unset>", ""]
    assert row[10] == "Filesystem"
    pv["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert PV.row(pv, 0.0)[4] == "Terminating"

    claim = _stored(PVC, _pvc("data"))
    assert PVC.row(claim, 0.0)[:7] == ["data", "Pending", "", "", "", "valid", "<unset>"]
    claim["spec"]["volumeName"] = "pv1"
    claim["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOncePod"], "capacity": {"storage": "10G"}}
    assert PVC.row(claim, 0.0)[:5] == ["data", "Bound", "pv1", "10G", "RWOP"]


def test_storage_class_and_csi_rows():
    default = _class(
        "standard",
        metadata={"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    )
    assert SC.row(default, 0.0)[:5] == [
        "standard (default)",
        "kubernetes.io/foo-provisioner",
        "Delete",
        "Immediate",
        False,
    ]
    beta = _class(
        "old",
        metadata={"name": "old", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}},
    )
    assert SC.row(beta, 0.0)[0] == "old (default)"
    assert SC.row(_class(allowVolumeExpansion=True, volumeBindingMode="WaitForFirstConsumer"), 0.0)[3:5] == [
        "WaitForFirstConsumer",
        True,
    ]
    driver: dict[str, Any] = {"kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {}}
    CSIDRIVER.defaults(driver)
    assert CSIDRIVER.row(driver, 0.0)[:7] == ["d", True, False, False, "<unset>", False, "Persistent"]
    driver["spec"]["tokenRequests"] = [{"audience": "a"}, {"audience": "b"}]
    assert CSIDRIVER.row(driver, 0.0)[4] == "a,b"
    assert CSINODE.row(_csinode(_driver(), _driver("b.example.com")), 0.0)[:2] == ["node-1", 2]
    assert CAPACITY.row(_capacity(capacity="1024Mi"), 0.0) == ["cap-1", "fast", "1Gi"]
    assert CAPACITY.row({k: v for k, v in _capacity().items() if k != "capacity"}, 0.0)[2] == "<unset>"
    attached = {**_attachment(), "status": {"attached": True}}
    assert ATTACHMENT.row(attached, 0.0)[:5] == ["va-1", "csi.example.com", "pv1", "node-1", True]


# -- DefaultStorageClass admission -------------------------------------------------------------
def _store_with_classes(*classes: tuple[str, str, bool]) -> MemoryStore:
    store = MemoryStore()
    for name, created, default in classes:
        obj = _class(name)
        if default:
            obj["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        made = store.create(obj)
        made["metadata"]["creationTimestamp"] = created
    return store


def test_a_claim_without_a_class_gets_the_newest_default_class():
    store = _store_with_classes(
        ("an-old-default", "2024-01-01T00:00:00Z", True),
        ("the-new-default", "2025-01-01T00:00:00Z", True),
        ("plain", "2026-01-01T00:00:00Z", False),
    )
    claim = _without(_pvc(), "storageClassName")
    assert admitted(store, claim)["spec"]["storageClassName"] == "the-new-default"
    assert "storageClassName" not in claim["spec"]  # the caller's own stays as it was


def test_default_classes_made_the_same_second_are_taken_by_name():
    store = _store_with_classes(
        ("zeta", "2025-01-01T00:00:00Z", True), ("alpha", "2025-01-01T00:00:00Z", True)
    )
    assert admitted(store, _without(_pvc(), "storageClassName"))["spec"]["storageClassName"] == "alpha"


def test_a_claim_that_names_a_class_or_no_class_keeps_it():
    store = _store_with_classes(("standard", "2025-01-01T00:00:00Z", True))
    assert admitted(store, _pvc(storageClassName=""))["spec"]["storageClassName"] == ""
    assert admitted(store, _pvc(storageClassName="fast"))["spec"]["storageClassName"] == "fast"
    beta = _without(_pvc(annotations={"volume.beta.kubernetes.io/storage-class": "gold"}), "storageClassName")
    assert "storageClassName" not in admitted(store, beta)["spec"]
    none = _store_with_classes(("plain", "2025-01-01T00:00:00Z", False))
    assert "storageClassName" not in admitted(none, _without(_pvc(), "storageClassName"))["spec"]
