"""The PersistentVolume controller, case by case as upstream's ``TestSync``
(``pkg/controller/volume/persistentvolume/binder_test.go``): the same initial volumes and claims,
one ``syncClaim`` or ``syncVolume``, the same expected volumes, claims and events.

Upstream's table runs against a fake volume plugin manager with no plugins; its volumes are GCE
disks. Here the volumes are GCE disks too, which a current cluster serves through CSI migration; so
case 4-10 (a volume with the Delete policy and no deleter) uses a ``local`` volume instead, which no
deleter serves in a real cluster either, and gets a real cluster's message. Expected events are
checked as upstream checks them: each listed event must have been emitted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kubesched.controllers.persistentvolume import PersistentVolumeController, find_best_match_for_claim
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

BOUND_BY = BOUND_BY_CONTROLLER_ANNOTATION
COMPLETED = BIND_COMPLETED_ANNOTATION
LABELS = {"foo": "true", "bar": "false"}
GOLD, SILVER, WAIT = "gold", "silver", "wait"


@dataclass
class V:
    """upstream ``newVolume``: name, capacity, claimRef uid and name, phase, reclaim policy, class,
    annotations."""

    name: str
    size: str
    uid: str
    claim: str
    phase: str
    policy: str = "Retain"
    klass: str = ""
    annotations: tuple[str, ...] = ()
    labels: dict[str, str] | None = None
    source: str = "gcePersistentDisk"
    message: str = ""


@dataclass
class C:
    """upstream ``newClaim``: name, uid, request, volumeName, phase, class (None: unset),
    annotations."""

    name: str
    uid: str
    size: str
    volume: str
    phase: str
    klass: str | None = None
    annotations: tuple[str, ...] = ()
    selector: dict[str, str] | None = None
    modes: tuple[str, ...] = ("ReadWriteOnce", "ReadOnlyMany")
    extra: dict[str, str] = field(default_factory=dict)
    #: Expected status.capacity.storage of a claim this sync binds (upstream withExpectedCapacity).
    capacity: str | None = None


@dataclass
class Case:
    name: str
    volumes: list[V]
    expected_volumes: list[V]
    claims: list[C]
    expected_claims: list[C]
    events: list[str]
    test: str  # "claim" or "volume": which sync runs, on the first claim or volume


def _volume_obj(v: V, uids: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": v.size},
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "persistentVolumeReclaimPolicy": v.policy,
        "storageClassName": v.klass,
        "volumeMode": "Filesystem",
    }
    if v.source == "local":
        spec["local"] = {"path": "/mnt/disks/a"}
    else:
        spec["gcePersistentDisk"] = {"pdName": v.name}
    if v.claim:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": "default",
            "name": v.claim,
            "uid": uids.get(v.uid, v.uid),
        }
    meta: dict[str, Any] = {"name": v.name}
    if v.annotations:
        meta["annotations"] = {a: "yes" for a in v.annotations}
    if v.labels:
        meta["labels"] = dict(v.labels)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": v.phase},
    }


def _claim_obj(c: C) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": list(c.modes),
        "resources": {"requests": {"storage": c.size}},
        "volumeMode": "Filesystem",
    }
    if c.volume:
        spec["volumeName"] = c.volume
    if c.klass is not None:
        spec["storageClassName"] = c.klass
    if c.selector:
        spec["selector"] = {"matchLabels": dict(c.selector)}
    annotations = {a: "yes" for a in c.annotations} | c.extra
    meta: dict[str, Any] = {"name": c.name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    status: dict[str, Any] = {"phase": c.phase}
    if c.phase == "Bound":
        status["capacity"] = {"storage": c.size}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def _class(name: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": mode,
    }


R, D = "Retain", "Delete"
P, A, B, REL, F = "Pending", "Available", "Bound", "Released", "Failed"
CP, CB, CL = "Pending", "Bound", "Lost"

CASES = [
    # [Unit test set 1] User did not care which PV they get.
    Case(
        "1-1 - successful bind",
        [V("volume1-1", "1Gi", "", "", A)],
        [V("volume1-1", "1Gi", "uid1-1", "claim1-1", B, annotations=(BOUND_BY,))],
        [C("claim1-1", "uid1-1", "1Gi", "", CP)],
        [C("claim1-1", "uid1-1", "1Gi", "volume1-1", CB, annotations=(BOUND_BY, COMPLETED), capacity="1Gi")],
        [],
        "claim",
    ),
    Case(
        "1-2 - noop",
        [V("volume1-2", "1Gi", "", "", A)],
        [V("volume1-2", "1Gi", "", "", A)],
        [C("claim1-2", "uid1-2", "10Gi", "", CP)],
        [C("claim1-2", "uid1-2", "10Gi", "", CP)],
        ["Normal FailedBinding"],
        "claim",
    ),
    Case(
        "1-3 - reset to Pending",
        [V("volume1-3", "1Gi", "", "", A)],
        [V("volume1-3", "1Gi", "", "", A)],
        [C("claim1-3", "uid1-3", "10Gi", "", CB)],
        [C("claim1-3", "uid1-3", "10Gi", "", CP)],
        ["Normal FailedBinding"],
        "claim",
    ),
    Case(
        "1-4 - smallest volume",
        [V("volume1-4_1", "10Gi", "", "", A), V("volume1-4_2", "1Gi", "", "", A)],
        [
            V("volume1-4_1", "10Gi", "", "", A),
            V("volume1-4_2", "1Gi", "uid1-4", "claim1-4", B, annotations=(BOUND_BY,)),
        ],
        [C("claim1-4", "uid1-4", "1Gi", "", CP)],
        [
            C(
                "claim1-4",
                "uid1-4",
                "1Gi",
                "volume1-4_2",
                CB,
                annotations=(BOUND_BY, COMPLETED),
                capacity="1Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "1-5 - prebound volume by name - success",
        [V("volume1-5_1", "10Gi", "", "claim1-5", A), V("volume1-5_2", "1Gi", "", "", A)],
        [V("volume1-5_1", "10Gi", "uid1-5", "claim1-5", B), V("volume1-5_2", "1Gi", "", "", A)],
        [C("claim1-5", "uid1-5", "1Gi", "", CP)],
        [
            C(
                "claim1-5",
                "uid1-5",
                "1Gi",
                "volume1-5_1",
                CB,
                annotations=(BOUND_BY, COMPLETED),
                capacity="10Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "1-6 - prebound volume by UID - success",
        [V("volume1-6_1", "10Gi", "uid1-6", "claim1-6", A), V("volume1-6_2", "1Gi", "", "", A)],
        [V("volume1-6_1", "10Gi", "uid1-6", "claim1-6", B), V("volume1-6_2", "1Gi", "", "", A)],
        [C("claim1-6", "uid1-6", "1Gi", "", CP)],
        [
            C(
                "claim1-6",
                "uid1-6",
                "1Gi",
                "volume1-6_1",
                CB,
                annotations=(BOUND_BY, COMPLETED),
                capacity="10Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "1-7 - prebound volume to different claim",
        [V("volume1-7", "10Gi", "uid1-777", "claim1-7", A)],
        [V("volume1-7", "10Gi", "uid1-777", "claim1-7", A)],
        [C("claim1-7", "uid1-7", "1Gi", "", CP)],
        [C("claim1-7", "uid1-7", "1Gi", "", CP)],
        ["Normal FailedBinding"],
        "claim",
    ),
    Case(
        "1-8 - complete bind after crash - PV bound",
        [V("volume1-8", "1Gi", "uid1-8", "claim1-8", A, annotations=(BOUND_BY,))],
        [V("volume1-8", "1Gi", "uid1-8", "claim1-8", B, annotations=(BOUND_BY,))],
        [C("claim1-8", "uid1-8", "1Gi", "", CP)],
        [C("claim1-8", "uid1-8", "1Gi", "volume1-8", CB, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "1-9 - complete bind after crash - PV status saved",
        [V("volume1-9", "1Gi", "uid1-9", "claim1-9", B, annotations=(BOUND_BY,))],
        [V("volume1-9", "1Gi", "uid1-9", "claim1-9", B, annotations=(BOUND_BY,))],
        [C("claim1-9", "uid1-9", "1Gi", "", CP)],
        [C("claim1-9", "uid1-9", "1Gi", "volume1-9", CB, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "1-10 - complete bind after crash - PVC bound",
        [V("volume1-10", "1Gi", "uid1-10", "claim1-10", B, annotations=(BOUND_BY,))],
        [V("volume1-10", "1Gi", "uid1-10", "claim1-10", B, annotations=(BOUND_BY,))],
        [C("claim1-10", "uid1-10", "1Gi", "volume1-10", CP, annotations=(BOUND_BY, COMPLETED))],
        [C("claim1-10", "uid1-10", "1Gi", "volume1-10", CB, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "1-11 - bind when selector matches",
        [V("volume1-1", "1Gi", "", "", A, labels=LABELS)],
        [V("volume1-1", "1Gi", "uid1-1", "claim1-1", B, annotations=(BOUND_BY,), labels=LABELS)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, selector=LABELS)],
        [C("claim1-1", "uid1-1", "1Gi", "volume1-1", CB, annotations=(BOUND_BY, COMPLETED), selector=LABELS)],
        [],
        "claim",
    ),
    Case(
        "1-12 - do not bind when selector does not match",
        [V("volume1-1", "1Gi", "", "", A)],
        [V("volume1-1", "1Gi", "", "", A)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, selector=LABELS)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, selector=LABELS)],
        ["Normal FailedBinding"],
        "claim",
    ),
    Case(
        "1-13 - delayed binding",
        [V("volume1-1", "1Gi", "", "", A, klass=WAIT)],
        [V("volume1-1", "1Gi", "", "", A, klass=WAIT)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, klass=WAIT)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, klass=WAIT)],
        ["Normal WaitForFirstConsumer"],
        "claim",
    ),
    Case(
        "1-14 - successful prebound PV",
        [V("volume1-1", "1Gi", "", "claim1-1", A, klass=WAIT)],
        [V("volume1-1", "1Gi", "uid1-1", "claim1-1", B, klass=WAIT)],
        [C("claim1-1", "uid1-1", "1Gi", "", CP, klass=WAIT)],
        [C("claim1-1", "uid1-1", "1Gi", "volume1-1", CB, klass=WAIT, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "1-15 - successful prebound PVC",
        [V("volume1-15_1", "10Gi", "", "", A), V("volume1-15_2", "1Gi", "", "", A)],
        [
            V("volume1-15_1", "10Gi", "uid1-15", "claim1-15", B, annotations=(BOUND_BY,)),
            V("volume1-15_2", "1Gi", "", "", A),
        ],
        [C("claim1-15", "uid1-15", "1Gi", "volume1-15_1", CP)],
        [C("claim1-15", "uid1-15", "1Gi", "volume1-15_1", CB, annotations=(COMPLETED,), capacity="10Gi")],
        [],
        "claim",
    ),
    Case(
        "1-16 - successful prebound PVC",
        [V("volume1-16", "1Gi", "", "", A)],
        [V("volume1-16", "1Gi", "", "", A)],
        [C("claim1-16", "uid1-16", "1Gi", "volume1-16", CP, modes=("ReadWriteMany",))],
        [C("claim1-16", "uid1-16", "1Gi", "volume1-16", CP, modes=("ReadWriteMany",))],
        [],
        "claim",
    ),
    Case(
        "1-17 - skip non-available PV if it's not pre-bind",
        [
            V("volume1-17-pending", "1Gi", "", "", P),
            V("volume1-17-failed", "1Gi", "", "", F),
            V("volume1-17-released", "1Gi", "", "", REL),
            V("volume1-17-empty", "1Gi", "", "", ""),
        ],
        [
            V("volume1-17-pending", "1Gi", "", "", P),
            V("volume1-17-failed", "1Gi", "", "", F),
            V("volume1-17-released", "1Gi", "", "", REL),
            V("volume1-17-empty", "1Gi", "", "", ""),
        ],
        [C("claim1-17", "uid1-17", "1Gi", "", CP)],
        [C("claim1-17", "uid1-17", "1Gi", "", CP)],
        [],
        "claim",
    ),
    Case(
        "1-18 - successful pre-bound PV to PVC provisioning",
        [V("volume1-18", "1Gi", "uid1-18", "claim1-18", A, klass=WAIT)],
        [V("volume1-18", "1Gi", "uid1-18", "claim1-18", B, klass=WAIT)],
        [C("claim1-18", "uid1-18", "1Gi", "", CP, klass=WAIT, extra={SELECTED_NODE_ANNOTATION: "node1"})],
        [
            C(
                "claim1-18",
                "uid1-18",
                "1Gi",
                "volume1-18",
                CB,
                klass=WAIT,
                annotations=(BOUND_BY, COMPLETED),
                extra={SELECTED_NODE_ANNOTATION: "node1"},
            )
        ],
        [],
        "claim",
    ),
    # [Unit test set 2] User asked for a specific PV.
    Case(
        "2-1 - claim prebound to non-existing volume - noop",
        [],
        [],
        [C("claim2-1", "uid2-1", "10Gi", "volume2-1", CP)],
        [C("claim2-1", "uid2-1", "10Gi", "volume2-1", CP)],
        [],
        "claim",
    ),
    Case(
        "2-2 - claim prebound to non-existing volume - reset status",
        [],
        [],
        [C("claim2-2", "uid2-2", "10Gi", "volume2-2", CB)],
        [C("claim2-2", "uid2-2", "10Gi", "volume2-2", CP)],
        [],
        "claim",
    ),
    Case(
        "2-3 - claim prebound to unbound volume",
        [V("volume2-3", "1Gi", "", "", A)],
        [V("volume2-3", "1Gi", "uid2-3", "claim2-3", B, annotations=(BOUND_BY,))],
        [C("claim2-3", "uid2-3", "1Gi", "volume2-3", CP)],
        [C("claim2-3", "uid2-3", "1Gi", "volume2-3", CB, annotations=(COMPLETED,))],
        [],
        "claim",
    ),
    Case(
        "2-4 - claim prebound to prebound volume by name",
        [V("volume2-4", "1Gi", "", "claim2-4", A)],
        [V("volume2-4", "1Gi", "uid2-4", "claim2-4", B)],
        [C("claim2-4", "uid2-4", "1Gi", "volume2-4", CP)],
        [C("claim2-4", "uid2-4", "1Gi", "volume2-4", CB, annotations=(COMPLETED,))],
        [],
        "claim",
    ),
    Case(
        "2-5 - claim prebound to prebound volume by UID",
        [V("volume2-5", "1Gi", "uid2-5", "claim2-5", A)],
        [V("volume2-5", "1Gi", "uid2-5", "claim2-5", B)],
        [C("claim2-5", "uid2-5", "1Gi", "volume2-5", CP)],
        [C("claim2-5", "uid2-5", "1Gi", "volume2-5", CB, annotations=(COMPLETED,))],
        [],
        "claim",
    ),
    Case(
        "2-6 - claim prebound to already bound volume",
        [V("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", B)],
        [V("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", B)],
        [C("claim2-6", "uid2-6", "1Gi", "volume2-6", CB)],
        [C("claim2-6", "uid2-6", "1Gi", "volume2-6", CP)],
        [],
        "claim",
    ),
    Case(
        "2-7 - claim bound by controller to already bound volume",
        [V("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", B)],
        [V("volume2-7", "1Gi", "uid2-7_1", "claim2-7_1", B)],
        [C("claim2-7", "uid2-7", "1Gi", "volume2-7", CB, annotations=(BOUND_BY,))],
        [C("claim2-7", "uid2-7", "1Gi", "volume2-7", CB, annotations=(BOUND_BY,))],
        [],
        "claim",
    ),
    Case(
        "2-8 - claim prebound to unbound volume that does not match the selector",
        [V("volume2-8", "1Gi", "", "", A)],
        [V("volume2-8", "1Gi", "uid2-8", "claim2-8", B, annotations=(BOUND_BY,))],
        [C("claim2-8", "uid2-8", "1Gi", "volume2-8", CP, selector=LABELS)],
        [C("claim2-8", "uid2-8", "1Gi", "volume2-8", CB, annotations=(COMPLETED,), selector=LABELS)],
        [],
        "claim",
    ),
    Case(
        "2-9 - claim prebound to unbound volume that size is smaller than requested",
        [V("volume2-9", "1Gi", "", "", A)],
        [V("volume2-9", "1Gi", "", "", A)],
        [C("claim2-9", "uid2-9", "2Gi", "volume2-9", CB)],
        [C("claim2-9", "uid2-9", "2Gi", "volume2-9", CP)],
        ["Warning VolumeMismatch"],
        "claim",
    ),
    Case(
        "2-10 - claim prebound to unbound volume that class is different",
        [V("volume2-10", "1Gi", "1", "", A, klass=GOLD)],
        [V("volume2-10", "1Gi", "", "", A, klass=GOLD)],
        [C("claim2-10", "uid2-10", "1Gi", "volume2-10", CB)],
        [C("claim2-10", "uid2-10", "1Gi", "volume2-10", CP)],
        ["Warning VolumeMismatch"],
        "claim",
    ),
    # [Unit test set 3] Syncing bound claim
    Case(
        "3-1 - bound claim with missing VolumeName",
        [],
        [],
        [C("claim3-1", "uid3-1", "10Gi", "", CB, annotations=(BOUND_BY, COMPLETED))],
        [C("claim3-1", "uid3-1", "10Gi", "", CL, annotations=(BOUND_BY, COMPLETED))],
        ["Warning ClaimLost"],
        "claim",
    ),
    Case(
        "3-2 - bound claim with missing volume",
        [],
        [],
        [C("claim3-2", "uid3-2", "10Gi", "volume3-2", CB, annotations=(BOUND_BY, COMPLETED))],
        [C("claim3-2", "uid3-2", "10Gi", "volume3-2", CL, annotations=(BOUND_BY, COMPLETED))],
        ["Warning ClaimLost"],
        "claim",
    ),
    Case(
        "3-3 - bound claim with unbound volume",
        [V("volume3-3", "10Gi", "", "", A)],
        [V("volume3-3", "10Gi", "uid3-3", "claim3-3", B, annotations=(BOUND_BY,))],
        [C("claim3-3", "uid3-3", "10Gi", "volume3-3", CP, annotations=(BOUND_BY, COMPLETED))],
        [C("claim3-3", "uid3-3", "10Gi", "volume3-3", CB, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "3-4 - bound claim with prebound volume",
        [V("volume3-4", "10Gi", "claim3-4-x", "claim3-4", A)],
        [V("volume3-4", "10Gi", "claim3-4-x", "claim3-4", A)],
        [C("claim3-4", "uid3-4", "10Gi", "volume3-4", CP, annotations=(BOUND_BY, COMPLETED))],
        [C("claim3-4", "uid3-4", "10Gi", "volume3-4", CL, annotations=(BOUND_BY, COMPLETED))],
        ["Warning ClaimMisbound"],
        "claim",
    ),
    Case(
        "3-5 - bound claim with bound volume",
        [V("volume3-5", "10Gi", "uid3-5", "claim3-5", A)],
        [V("volume3-5", "10Gi", "uid3-5", "claim3-5", B)],
        [C("claim3-5", "uid3-5", "10Gi", "volume3-5", CP, annotations=(COMPLETED,))],
        [C("claim3-5", "uid3-5", "10Gi", "volume3-5", CB, annotations=(COMPLETED,))],
        [],
        "claim",
    ),
    Case(
        "3-6 - bound claim with bound volume",
        [V("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x", A)],
        [V("volume3-6", "10Gi", "uid3-6-x", "claim3-6-x", A)],
        [C("claim3-6", "uid3-6", "10Gi", "volume3-6", CP, annotations=(COMPLETED,))],
        [C("claim3-6", "uid3-6", "10Gi", "volume3-6", CL, annotations=(COMPLETED,))],
        ["Warning ClaimMisbound"],
        "claim",
    ),
    Case(
        "3-7 - bound claim with unbound volume where selector doesn't match",
        [V("volume3-3", "10Gi", "", "", A)],
        [V("volume3-3", "10Gi", "uid3-3", "claim3-3", B, annotations=(BOUND_BY,))],
        [
            C(
                "claim3-3",
                "uid3-3",
                "10Gi",
                "volume3-3",
                CP,
                annotations=(BOUND_BY, COMPLETED),
                selector=LABELS,
            )
        ],
        [
            C(
                "claim3-3",
                "uid3-3",
                "10Gi",
                "volume3-3",
                CB,
                annotations=(BOUND_BY, COMPLETED),
                selector=LABELS,
            )
        ],
        [],
        "claim",
    ),
    # [Unit test set 4] All syncVolume tests.
    Case(
        "4-1 - pending volume",
        [V("volume4-1", "10Gi", "", "", P)],
        [V("volume4-1", "10Gi", "", "", A)],
        [],
        [],
        [],
        "volume",
    ),
    Case(
        "4-2 - pending prebound volume",
        [V("volume4-2", "10Gi", "", "claim4-2", P)],
        [V("volume4-2", "10Gi", "", "claim4-2", A)],
        [],
        [],
        [],
        "volume",
    ),
    Case(
        "4-3 - bound volume with missing claim",
        [V("volume4-3", "10Gi", "uid4-3", "claim4-3", B)],
        [V("volume4-3", "10Gi", "uid4-3", "claim4-3", REL)],
        [],
        [],
        [],
        "volume",
    ),
    Case(
        "4-4 - volume bound to claim with different UID",
        [V("volume4-4", "10Gi", "uid4-4", "claim4-4", B)],
        [V("volume4-4", "10Gi", "uid4-4", "claim4-4", REL)],
        [C("claim4-4", "uid4-4-x", "10Gi", "volume4-4", CB, annotations=(COMPLETED,))],
        [C("claim4-4", "uid4-4-x", "10Gi", "volume4-4", CB, annotations=(COMPLETED,))],
        [],
        "volume",
    ),
    Case(
        "4-5 - volume bound by controller to unbound claim",
        [V("volume4-5", "10Gi", "uid4-5", "claim4-5", B, annotations=(BOUND_BY,))],
        [V("volume4-5", "10Gi", "uid4-5", "claim4-5", B, annotations=(BOUND_BY,))],
        [C("claim4-5", "uid4-5", "10Gi", "", CP)],
        [C("claim4-5", "uid4-5", "10Gi", "", CP)],
        [],
        "volume",
    ),
    Case(
        "4-5 - volume bound by user to bound claim",
        [V("volume4-5", "10Gi", "uid4-5", "claim4-5", B)],
        [V("volume4-5", "10Gi", "uid4-5", "claim4-5", B)],
        [C("claim4-5", "uid4-5", "10Gi", "", CP)],
        [C("claim4-5", "uid4-5", "10Gi", "", CP)],
        [],
        "volume",
    ),
    Case(
        "4-6 - volume bound by to bound claim",
        [V("volume4-6", "10Gi", "uid4-6", "claim4-6", A)],
        [V("volume4-6", "10Gi", "uid4-6", "claim4-6", B)],
        [C("claim4-6", "uid4-6", "10Gi", "volume4-6", CB)],
        [C("claim4-6", "uid4-6", "10Gi", "volume4-6", CB)],
        [],
        "volume",
    ),
    Case(
        "4-7 - volume bound by controller to claim bound somewhere else",
        [V("volume4-7", "10Gi", "uid4-7", "claim4-7", B, annotations=(BOUND_BY,))],
        [V("volume4-7", "10Gi", "", "", A)],
        [C("claim4-7", "uid4-7", "10Gi", "volume4-7-x", CB)],
        [C("claim4-7", "uid4-7", "10Gi", "volume4-7-x", CB)],
        [],
        "volume",
    ),
    Case(
        "4-8 - volume bound by user to claim bound somewhere else",
        [V("volume4-8", "10Gi", "uid4-8", "claim4-8", B)],
        [V("volume4-8", "10Gi", "", "claim4-8", A)],
        [C("claim4-8", "uid4-8", "10Gi", "volume4-8-x", CB)],
        [C("claim4-8", "uid4-8", "10Gi", "volume4-8-x", CB)],
        [],
        "volume",
    ),
    Case(
        "4-9 - volume bound to bound claim, with PersistentVolumeReclaimDelete",
        [V("volume4-9", "10Gi", "uid4-9", "claim4-9", A, policy=D)],
        [V("volume4-9", "10Gi", "uid4-9", "claim4-9", B, policy=D)],
        [C("claim4-9", "uid4-9", "10Gi", "volume4-9", CB)],
        [C("claim4-9", "uid4-9", "10Gi", "volume4-9", CB)],
        [],
        "volume",
    ),
    Case(
        "4-10 - volume bound to missing claim",
        [V("volume4-10", "10Gi", "uid4-10", "claim4-10", A, policy=D, source="local")],
        [
            V(
                "volume4-10",
                "10Gi",
                "uid4-10",
                "claim4-10",
                F,
                policy=D,
                source="local",
                message=(
                    'error getting deleter volume plugin for volume "volume4-10": '
                    "no deletable volume plugin matched"
                ),
            )
        ],
        [],
        [],
        ["Warning VolumeFailedDelete"],
        "volume",
    ),
    # PVC with class
    Case(
        "13-1 - binding to class",
        [V("volume13-1-1", "1Gi", "", "", A), V("volume13-1-2", "10Gi", "", "", A, klass=GOLD)],
        [
            V("volume13-1-1", "1Gi", "", "", A),
            V("volume13-1-2", "10Gi", "uid13-1", "claim13-1", B, klass=GOLD, annotations=(BOUND_BY,)),
        ],
        [C("claim13-1", "uid13-1", "1Gi", "", CP, klass=GOLD)],
        [
            C(
                "claim13-1",
                "uid13-1",
                "1Gi",
                "volume13-1-2",
                CB,
                klass=GOLD,
                annotations=(BOUND_BY, COMPLETED),
                capacity="10Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "13-2 - binding without a class",
        [V("volume13-2-1", "1Gi", "", "", A, klass=GOLD), V("volume13-2-2", "10Gi", "", "", A)],
        [
            V("volume13-2-1", "1Gi", "", "", A, klass=GOLD),
            V("volume13-2-2", "10Gi", "uid13-2", "claim13-2", B, annotations=(BOUND_BY,)),
        ],
        [C("claim13-2", "uid13-2", "1Gi", "", CP)],
        [
            C(
                "claim13-2",
                "uid13-2",
                "1Gi",
                "volume13-2-2",
                CB,
                annotations=(BOUND_BY, COMPLETED),
                capacity="10Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "13-3 - binding to specific a class",
        [V("volume13-3-1", "1Gi", "", "", A, klass=SILVER), V("volume13-3-2", "10Gi", "", "", A, klass=GOLD)],
        [
            V("volume13-3-1", "1Gi", "", "", A, klass=SILVER),
            V("volume13-3-2", "10Gi", "uid13-3", "claim13-3", B, klass=GOLD, annotations=(BOUND_BY,)),
        ],
        [C("claim13-3", "uid13-3", "1Gi", "", CP, klass=GOLD)],
        [
            C(
                "claim13-3",
                "uid13-3",
                "1Gi",
                "volume13-3-2",
                CB,
                klass=GOLD,
                annotations=(BOUND_BY, COMPLETED),
                capacity="10Gi",
            )
        ],
        [],
        "claim",
    ),
    Case(
        "13-4 - empty class",
        [V("volume13-4", "1Gi", "", "", A)],
        [V("volume13-4", "1Gi", "uid13-4", "claim13-4", B, annotations=(BOUND_BY,))],
        [C("claim13-4", "uid13-4", "1Gi", "", CP, klass="")],
        [C("claim13-4", "uid13-4", "1Gi", "volume13-4", CB, klass="", annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
    Case(
        "13-5 - nil class",
        [V("volume13-5", "1Gi", "", "", A)],
        [V("volume13-5", "1Gi", "uid13-5", "claim13-5", B, annotations=(BOUND_BY,))],
        [C("claim13-5", "uid13-5", "1Gi", "", CP)],
        [C("claim13-5", "uid13-5", "1Gi", "volume13-5", CB, annotations=(BOUND_BY, COMPLETED))],
        [],
        "claim",
    ),
]


def _events(store: MemoryStore) -> list[str]:
    return [f"{e['type']} {e['reason']}" for e in store.list("Event")]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sync(case: Case) -> None:
    store = MemoryStore(uid_seed=0)
    for name, mode in ((GOLD, "Immediate"), (SILVER, "Immediate"), (WAIT, "WaitForFirstConsumer")):
        store.create(_class(name, mode))
    uids: dict[str, str] = {}
    for c in case.claims:
        created = store.create(_claim_obj(c))
        uids[c.uid] = created["metadata"]["uid"]
    for v in case.volumes:
        store.create(_volume_obj(v, uids))
    informers = informer_factory(store)
    controller = PersistentVolumeController(store, informers)
    controller._due_claims.clear()
    controller._due_volumes.clear()
    if case.test == "claim":
        c = case.claims[0]
        controller.sync_claim(controller._claims[("default", c.name)])
    else:
        controller.sync_volume(controller._volumes[case.volumes[0].name])

    symbolic = {actual: name for name, actual in uids.items()}
    got_volumes = {v["metadata"]["name"]: v for v in store.list("PersistentVolume")}
    assert sorted(got_volumes) == sorted(v.name for v in case.expected_volumes)
    for want in case.expected_volumes:
        got = got_volumes[want.name]
        ref = got["spec"].get("claimRef")
        got_ref = (symbolic.get(ref.get("uid", ""), ref.get("uid", "")), ref["name"]) if ref else ("", "")
        assert got_ref == (want.uid, want.claim), want.name
        assert (got.get("status") or {}).get("phase", "") == want.phase, want.name
        assert (got.get("status") or {}).get("message", "") == want.message, want.name
        annotations = set(got["metadata"].get("annotations") or {})
        assert annotations == set(want.annotations), want.name
    got_claims = {c["metadata"]["name"]: c for c in store.list("PersistentVolumeClaim")}
    for want_claim in case.expected_claims:
        got = got_claims[want_claim.name]
        assert got["spec"].get("volumeName", "") == want_claim.volume
        assert got["status"]["phase"] == want_claim.phase
        annotations = got["metadata"].get("annotations") or {}
        assert set(annotations) == set(want_claim.annotations) | set(want_claim.extra)
        if want_claim.capacity is not None:
            assert got["status"]["capacity"] == {"storage": want_claim.capacity}
    emitted = _events(store)
    for event in case.events:
        assert event in emitted, (event, emitted)


def _pv(name: str, size: str, modes: list[str], source: str, bound: bool = False) -> Any:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": modes, source: {}}
    if bound:
        spec["claimRef"] = {"uid": "abc123"}
    return PersistentVolume.from_dict(
        {
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": spec,
            "status": {"phase": "Available"},
        }
    )


def _pvc(size: str, modes: list[str]) -> Any:
    return PersistentVolumeClaim.from_dict(
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim01", "namespace": "myns"},
            "spec": {"accessModes": modes, "resources": {"requests": {"storage": size}}},
        }
    )


def test_matching_with_bound_volumes() -> None:
    """upstream TestMatchingWithBoundVolumes: of two like volumes, the unbound one."""
    volumes = [
        _pv("gce001", "1G", ["ReadWriteOnce", "ReadOnlyMany"], "gcePersistentDisk", bound=True),
        _pv("gce002", "1G", ["ReadWriteOnce", "ReadOnlyMany"], "gcePersistentDisk"),
    ]
    match = find_best_match_for_claim(_pvc("1G", ["ReadOnlyMany", "ReadWriteOnce"]), volumes, False)
    assert match is not None and match.name == "gce002"


def test_finding_volume_with_different_access_modes() -> None:
    """upstream TestFindingVolumeWithDifferentAccessModes: the volume whose modes are closest to the
    claim's, then the next group up as the closer ones are taken."""
    gce = _pv("gce", "10G", ["ReadWriteOnce", "ReadOnlyMany"], "gcePersistentDisk")
    ebs = _pv("ebs", "10G", ["ReadWriteOnce"], "awsElasticBlockStore")
    nfs = _pv("nfs", "10G", ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"], "nfs")

    def best(modes: list[str], volumes: list[Any]) -> str:
        match = find_best_match_for_claim(_pvc("1G", modes), volumes, False)
        return match.name if match is not None else ""

    everything = [gce, ebs, nfs]
    assert best(["ReadWriteOnce"], everything) == "ebs"
    assert best(["ReadWriteOnce", "ReadOnlyMany"], everything) == "gce"
    # The order of the requested modes does not matter; fewer modes still match.
    assert best(["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany"], everything) == "nfs"
    assert best(["ReadWriteMany"], everything) == "nfs"
    ebs_bound = _pv("ebs", "10G", ["ReadWriteOnce"], "awsElasticBlockStore", bound=True)
    assert best(["ReadWriteOnce"], [gce, ebs_bound, nfs]) == "gce"
    gce_bound = _pv("gce", "10G", ["ReadWriteOnce", "ReadOnlyMany"], "gcePersistentDisk", bound=True)
    assert best(["ReadWriteOnce"], [gce_bound, ebs_bound, nfs]) == "nfs"
    assert best(["ReadOnlyMany"], [gce, ebs_bound, nfs]) == "gce"
