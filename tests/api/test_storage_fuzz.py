"""Property: whatever a manifest or a request body puts into a storage object, reading it gives the
typed view or an InputError naming a field, upstream's rules give a list of causes, and the served
kind answers with an API error; never another exception."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    pod_volumes,
)
from kubesched.api.storage_rules import VALIDATE, VALIDATE_UPDATE, storage_quantities
from kubesched.errors import InputError
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND

EXAMPLES = int(os.environ.get("KUBESCHED_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_SELECTOR = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
_AFFINITY = {"required": {"nodeSelectorTerms": [_SELECTOR]}}

VALID: dict[str, tuple[Any, dict[str, Any]]] = {
    "PersistentVolume": (
        PersistentVolume,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv", "annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "local": {"path": "/mnt"},
                "nodeAffinity": _AFFINITY,
                "claimRef": {"namespace": "ns", "name": "c", "uid": "u"},
                "storageClassName": "local",
                "volumeMode": "Filesystem",
            },
            "status": {"phase": "Available"},
        },
    ),
    "PersistentVolumeClaim": (
        PersistentVolumeClaim,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}},
                "selector": _SELECTOR,
                "storageClassName": "local",
                "volumeName": "pv",
                "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"},
            },
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}},
        },
    ),
    "StorageClass": (
        StorageClass,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "example.com/disk",
            "parameters": {"type": "ssd"},
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
        },
    ),
    "CSINode": (
        CSINode,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "n1"},
            "spec": {
                "drivers": [
                    {
                        "name": "d.example.com",
                        "nodeID": "n1",
                        "topologyKeys": ["zone"],
                        "allocatable": {"count": 3},
                    }
                ]
            },
        },
    ),
    "CSIDriver": (
        CSIDriver,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "d.example.com"},
            "spec": {"attachRequired": True, "storageCapacity": True, "tokenRequests": [{"audience": "a"}]},
        },
    ),
    "CSIStorageCapacity": (
        CSIStorageCapacity,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "fast",
            "nodeTopology": _SELECTOR,
            "capacity": "10Gi",
            "maximumVolumeSize": "1Gi",
        },
    ),
    "VolumeAttachment": (
        VolumeAttachment,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": "va"},
            "spec": {"attacher": "d.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}},
            "status": {"attached": True},
        },
    ),
}

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(
        ["", "0", "-1Gi", "1e999", "ReadWriteOnce", "Block", "In", "x/y/z", "..", "/", "a" * 300]
    )
    | st.text(max_size=12)
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` a fuzzed value can go."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += _paths(child, (*prefix, i))
    return out


def _replaced(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(obj)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """The valid object of ``kind`` with one to three of its fields (or new ones beside them)
    replaced by arbitrary JSON."""
    obj = VALID[kind][1]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_paths(obj)[1:]))
        if draw(st.booleans()):
            extra = st.text(max_size=10) | st.sampled_from(["hostPath", "csi", "nfs", "status", "spec"])
            path = (*path[:-1], draw(extra))
        try:
            obj = _replaced(obj, path, draw(JSON))
        except (TypeError, IndexError):
            continue  # a new key beside the items of a list
    return obj


@pytest.mark.parametrize("kind", sorted(VALID))
def test_the_valid_objects_are_valid(kind):
    view, obj = VALID[kind]
    view.from_dict(obj)
    assert VALIDATE[kind](obj) == []
    BY_KIND[kind].validate(copy.deepcopy(obj))


@pytest.mark.parametrize("kind", sorted(VALID))
@FUZZ
@given(data=st.data())
def test_bad_input_is_an_input_error_never_a_crash(kind, data):
    view, valid = VALID[kind]
    obj = data.draw(mutated(kind))
    try:
        view.from_dict(obj)
    except InputError as exc:
        assert exc.message
    causes = VALIDATE[kind](obj)
    assert all(isinstance(field, str) and message for _, field, message in causes)
    VALIDATE_UPDATE[kind](obj, valid)
    VALIDATE_UPDATE[kind](valid, obj)
    storage_quantities(obj)
    body = copy.deepcopy(obj)
    body["kind"] = kind
    if not isinstance(body.get("metadata"), dict):
        body["metadata"] = {"name": "x"}
    try:
        BY_KIND[kind].validate(body)
    except ApiError as exc:
        assert exc.code in (400, 422)


@FUZZ
@given(volumes=JSON)
def test_a_pods_volumes_are_read_or_refused_by_field(volumes):
    try:
        pod_volumes({"volumes": volumes}, "p")
    except InputError as exc:
        assert exc.field is None or exc.field.startswith("spec.volumes")
