"""VolumeZone: upstream's volume_zone_test.go tables (TestSingleZone, TestMultiZone, TestWithBinding,
TestIsSchedulableAfterPersistentVolumeClaimAdded, TestIsSchedulableAfterStorageClassAdded,
TestIsSchedulableAfterPersistentVolumeChange), case names verbatim, kube-scheduler v1.35 semantics;
then the vectorized Filter over many nodes, Filter without PreFilter, and a run through the
simulation where zonal volumes keep their pods in their zone.

Differences from the Go tables, none of them in what is checked:

* not-found errors are worded as kube-scheduler's informer listers word them
  (``storageclass.storage.k8s.io "Class_0" not found``; the Go test's fake lister says
  ``storageclasses.…``);
* upstream runs Filter even after PreFilter rejected or skipped; the framework (and this table)
  does not, so those cases check the Filter that runs without PreFilter state instead;
* the hint tables' "wrong object" cases have no counterpart: hints get parsed objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import BETA_REGION_LABEL, BETA_ZONE_LABEL, REGION_LABEL, ZONE_LABEL, Pod
from kubesched.api.storage import BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER, PersistentVolume
from kubesched.errors import InputError
from kubesched.framework.config import config_from_dict
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
    pv_dict,
    storage_class_dict,
)
from kubesched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, label_zones
from kubesched.sim.simulation import Simulation

SKIP = Status(Code.SKIP)
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT])
Q, QSKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [message])


def pod_with_claim(claim: str | None = None, name: str = "pod_1") -> Pod:
    """Upstream ``createPodWithVolume``."""
    return pod_with_volumes(name.replace("_", "-"), [claim_volume(claim, "v")] if claim else [])


def claim(name: str, volume_name: str = "", storage_class: str | None = None) -> dict[str, Any]:
    return claim_dict(name, volume_name=volume_name, storage_class=storage_class)


def run(
    pod: Pod, labels: Mapping[str, str], objects: Sequence[Mapping[str, Any]]
) -> tuple[Status | None, Status | None]:
    """PreFilter, then Filter on one node ``host1`` with ``labels`` — with the PreFilter state when
    PreFilter succeeded, without it (upstream's fallback) when it rejected."""
    snapshot = build_snapshot([make_node("host1", {"cpu": "1"}, labels=dict(labels))])
    plugin = VolumeZone(None, handle_with(objects, snapshot))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, snapshot)
    if pre is not None and pre.code == Code.SKIP:
        return pre, None
    got = node_statuses(plugin.filter_nodes(state, pod, snapshot.table), snapshot)["host1"]
    return pre, got


@dataclass
class Case:
    name: str
    claim: str | None
    labels: dict[str, str]
    pre_filter: Status | None = None
    want: Status | None = None


# -- TestSingleZone --------------------------------------------------------------------------------

SINGLE_ZONE_OBJECTS = [
    pv_dict("Vol_1", labels={BETA_ZONE_LABEL: "us-west1-a"}),
    pv_dict("Vol_2", labels={BETA_REGION_LABEL: "us-west1", "uselessLabel": "none"}),
    pv_dict("Vol_3", labels={BETA_REGION_LABEL: "us-west1"}),
    pv_dict("Vol_Stable_1", labels={ZONE_LABEL: "us-west1-a"}),
    pv_dict("Vol_Stable_2", labels={REGION_LABEL: "us-west1", "uselessLabel": "none"}),
    pv_dict("Vol_Stable_3", labels={ZONE_LABEL: "us-west1-a", REGION_LABEL: "us-west1-a"}),
    claim("PVC_1", "Vol_1"),
    claim("PVC_2", "Vol_2"),
    claim("PVC_3", "Vol_3"),
    claim("PVC_4", "Vol_not_exist"),
    claim("PVC_Stable_1", "Vol_Stable_1"),
    claim("PVC_Stable_2", "Vol_Stable_2"),
    claim("PVC_Stable_3", "Vol_Stable_3"),
]
USELESS = {"uselessLabel": "none"}
SINGLE_ZONE_CASES = [
    Case("pod without volume", None, {BETA_ZONE_LABEL: "us-west1-a"}, pre_filter=SKIP),
    Case("node without labels", "PVC_1", {}),
    Case("beta zone label matched", "PVC_1", {BETA_ZONE_LABEL: "us-west1-a", **USELESS}),
    Case("beta region label matched", "PVC_2", {BETA_REGION_LABEL: "us-west1", **USELESS}),
    Case(
        "beta region label doesn't match",
        "PVC_2",
        {BETA_REGION_LABEL: "no_us-west1", **USELESS},
        want=CONFLICT,
    ),
    Case(
        "beta zone label doesn't match", "PVC_1", {BETA_ZONE_LABEL: "no_us-west1-a", **USELESS}, want=CONFLICT
    ),
    Case("zone label matched", "PVC_Stable_1", {ZONE_LABEL: "us-west1-a", **USELESS}),
    Case("region label matched", "PVC_Stable_2", {REGION_LABEL: "us-west1", **USELESS}),
    Case(
        "region label doesn't match", "PVC_Stable_2", {REGION_LABEL: "no_us-west1", **USELESS}, want=CONFLICT
    ),
    Case("zone label doesn't match", "PVC_Stable_1", {ZONE_LABEL: "no_us-west1-a", **USELESS}, want=CONFLICT),
    Case(
        "pv with zone and region, node with only zone",
        "PVC_Stable_3",
        {ZONE_LABEL: "us-west1-a"},
        want=CONFLICT,
    ),
    Case("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE_LABEL: "us-west1-a"}, want=CONFLICT),
    Case("pv with beta label,node with ga label, matched", "PVC_1", {ZONE_LABEL: "us-west1-a"}),
    Case(
        "pv with beta label,node with ga label, don't match",
        "PVC_1",
        {ZONE_LABEL: "us-west1-b"},
        want=CONFLICT,
    ),
]


@pytest.mark.parametrize("case", SINGLE_ZONE_CASES, ids=[c.name for c in SINGLE_ZONE_CASES])
def test_single_zone(case: Case) -> None:
    pre, got = run(pod_with_claim(case.claim), case.labels, SINGLE_ZONE_OBJECTS)
    assert pre == case.pre_filter
    if pre is None:
        assert got == case.want


# -- TestMultiZone ---------------------------------------------------------------------------------

MULTI_ZONE_OBJECTS = [
    pv_dict("Vol_1", labels={BETA_ZONE_LABEL: "us-west1-a"}),
    pv_dict("Vol_2", labels={BETA_ZONE_LABEL: "us-west1-b", "uselessLabel": "none"}),
    pv_dict("Vol_3", labels={BETA_ZONE_LABEL: "us-west1-c__us-west1-a"}),
    pv_dict("Vol_Stable_1", labels={ZONE_LABEL: "us-west1-a"}),
    pv_dict("Vol_Stable_2", labels={ZONE_LABEL: "us-west1-c__us-west1-a"}),
    claim("PVC_1", "Vol_1"),
    claim("PVC_2", "Vol_2"),
    claim("PVC_3", "Vol_3"),
    claim("PVC_4", "Vol_not_exist"),
    claim("PVC_Stable_1", "Vol_Stable_1"),
    claim("PVC_Stable_2", "Vol_Stable_2"),
]
MULTI_ZONE_CASES = [
    Case("node without labels", "PVC_3", {}),
    Case("beta zone label matched", "PVC_3", {BETA_ZONE_LABEL: "us-west1-a", **USELESS}),
    Case("beta zone label doesn't match", "PVC_1", {BETA_ZONE_LABEL: "us-west1-b", **USELESS}, want=CONFLICT),
    Case("zone label matched", "PVC_Stable_2", {ZONE_LABEL: "us-west1-a", **USELESS}),
    Case("zone label doesn't match", "PVC_Stable_1", {ZONE_LABEL: "us-west1-b", **USELESS}, want=CONFLICT),
]


@pytest.mark.parametrize("case", MULTI_ZONE_CASES, ids=[c.name for c in MULTI_ZONE_CASES])
def test_multi_zone(case: Case) -> None:
    pre, got = run(pod_with_claim(case.claim), case.labels, MULTI_ZONE_OBJECTS)
    assert pre == case.pre_filter
    if pre is None:
        assert got == case.want


# -- TestWithBinding -------------------------------------------------------------------------------

# The API server defaults a class's volumeBindingMode; "Class_Immediate" is an object that was not
# defaulted, as in upstream's table.
WITH_BINDING_OBJECTS = [
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "Class_Immediate"},
        "provisioner": "example.com/p",
    },
    storage_class_dict("Class_Wait", mode=BINDING_WAIT_FOR_FIRST_CONSUMER),
    pv_dict("Vol_1", labels={BETA_ZONE_LABEL: "us-west1-a"}),
    claim("PVC_1", "Vol_1"),
    claim("PVC_NoSC", storage_class="Class_0"),
    claim("PVC_EmptySC"),
    claim("PVC_WaitSC", storage_class="Class_Wait"),
    claim("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
TEST_NODE = {BETA_ZONE_LABEL: "us-west1-a", **USELESS}
NO_PV_NO_CLASS = unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
CLASS_0_NOT_FOUND = unresolvable('storageclass.storage.k8s.io "Class_0" not found')
MODE_NOT_SET = unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"')
WITH_BINDING_CASES = [
    Case("label zone failure domain matched", "PVC_1", TEST_NODE),
    Case("unbound volume empty storage class", "PVC_EmptySC", TEST_NODE, NO_PV_NO_CLASS, NO_PV_NO_CLASS),
    Case("unbound volume no storage class", "PVC_NoSC", TEST_NODE, CLASS_0_NOT_FOUND, CLASS_0_NOT_FOUND),
    Case("unbound volume immediate binding mode", "PVC_ImmediateSC", TEST_NODE, MODE_NOT_SET, MODE_NOT_SET),
    Case("unbound volume wait binding mode", "PVC_WaitSC", TEST_NODE, pre_filter=SKIP),
]


@pytest.mark.parametrize("case", WITH_BINDING_CASES, ids=[c.name for c in WITH_BINDING_CASES])
def test_with_binding(case: Case) -> None:
    pre, got = run(pod_with_claim(case.claim), case.labels, WITH_BINDING_OBJECTS)
    assert pre == case.pre_filter
    if pre is None or pre.code != Code.SKIP:
        assert got == case.want


def test_errors_worded_as_upstream() -> None:
    """An Immediate class with the claim not bound yet, a missing claim, a claim bound to a missing
    PV: every one UnschedulableAndUnresolvable in PreFilter."""
    objects = [
        storage_class_dict("fast", mode=BINDING_IMMEDIATE),
        claim("unbound", storage_class="fast"),
        claim("dangling", "gone"),
    ]
    assert run(pod_with_claim("unbound"), {}, objects)[0] == unresolvable("PersistentVolume had no name")
    assert run(pod_with_claim("nope"), {}, objects)[0] == unresolvable(
        'persistentvolumeclaim "nope" not found'
    )
    assert run(pod_with_claim("dangling"), {}, objects)[0] == unresolvable(
        'persistentvolume "gone" not found'
    )


def test_label_with_an_empty_zone_is_ignored() -> None:
    """``a__`` has an empty element: upstream's LabelZonesToSet fails and the label is ignored."""
    assert label_zones("us-west1-c__us-west1-a") == frozenset({"us-west1-c", "us-west1-a"})
    assert label_zones(" a ") == frozenset({"a"})
    assert label_zones("a__") is None
    objects = [pv_dict("pv", labels={ZONE_LABEL: "a__"}), claim("c", "pv")]
    assert run(pod_with_claim("c"), {ZONE_LABEL: "b"}, objects) == (SKIP, None)


# -- the vectorized Filter -------------------------------------------------------------------------


def test_filter_over_many_nodes() -> None:
    """Each node is judged on its own labels: unlabelled nodes pass, a beta label on the PV falls
    back to the node's GA label, every PV label must match."""
    nodes = [
        make_node("bare", {"cpu": "1"}),
        make_node("a", {"cpu": "1"}, labels={ZONE_LABEL: "z-a", REGION_LABEL: "r"}),
        make_node("b", {"cpu": "1"}, labels={ZONE_LABEL: "z-b", REGION_LABEL: "r"}),
        make_node("beta-a", {"cpu": "1"}, labels={BETA_ZONE_LABEL: "z-a", REGION_LABEL: "r"}),
        make_node("other-region", {"cpu": "1"}, labels={ZONE_LABEL: "z-a", REGION_LABEL: "r2"}),
        make_node("region-only", {"cpu": "1"}, labels={REGION_LABEL: "r"}),
    ]
    snapshot = build_snapshot(nodes)
    objects = [
        pv_dict("pv-1", labels={BETA_ZONE_LABEL: "z-a__z-c"}),
        pv_dict("pv-2", labels={REGION_LABEL: "r"}),
        claim("c1", "pv-1"),
        claim("c2", "pv-2"),
    ]
    plugin = VolumeZone(None, handle_with(objects, snapshot))
    pod = pod_with_volumes("p", [claim_volume("c1"), claim_volume("c2")])
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot)[1] is None
    got = node_statuses(plugin.filter_nodes(state, pod, snapshot.table), snapshot)
    assert got == {
        "bare": None,
        "a": None,
        "b": CONFLICT,
        "beta-a": None,
        "other-region": CONFLICT,
        "region-only": CONFLICT,
    }


def test_filter_without_pre_filter_computes_the_volumes() -> None:
    """Enabled at Filter alone (or run by Volcano's predicates), Filter looks the volumes up itself."""
    snapshot = build_snapshot(
        [
            make_node("a", {"cpu": "1"}, labels={ZONE_LABEL: "z-a"}),
            make_node("b", {"cpu": "1"}, labels={ZONE_LABEL: "z-b"}),
        ]
    )
    plugin = VolumeZone(
        None, handle_with([pv_dict("pv", labels={ZONE_LABEL: "z-a"}), claim("c", "pv")], snapshot)
    )
    got = node_statuses(plugin.filter_nodes(CycleState(), pod_with_claim("c"), snapshot.table), snapshot)
    assert got == {"a": None, "b": CONFLICT}
    missing = node_statuses(plugin.filter_nodes(CycleState(), pod_with_claim("x"), snapshot.table), snapshot)
    assert missing == {n: unresolvable('persistentvolumeclaim "x" not found') for n in ("a", "b")}


def test_filter_passes_every_node_of_a_cluster_without_zones() -> None:
    snapshot = build_snapshot([make_node(n, {"cpu": "1"}) for n in ("a", "b")])
    objects = [pv_dict("pv", labels={ZONE_LABEL: "z-a"}), claim("c", "pv")]
    plugin = VolumeZone(None, handle_with(objects, snapshot))
    state = CycleState()
    plugin.pre_filter(state, pod_with_claim("c"), snapshot)
    result = plugin.filter_nodes(state, pod_with_claim("c"), snapshot.table)
    assert bool(np.all(result.passed)) and not result.failures


def test_sign_pod() -> None:
    plugin = VolumeZone()
    assert plugin.sign_pod(pod_with_claim()) == ((), None)
    fragments, status = plugin.sign_pod(pod_with_claim("c"))
    assert fragments == () and status is not None and not status.ok


# -- hints -----------------------------------------------------------------------------------------


def parsed(obj: Mapping[str, Any]) -> Any:
    handle = handle_with([obj])
    meta = obj["metadata"]
    return handle.informers.informer(obj["kind"]).get(meta.get("namespace"), meta["name"])


PVC_ADDED_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("pvc-was-added-but-pod-refers-no-pvc", pod_with_claim(), None, claim("PVC_1", "Vol_1"), QSKIP),
    (
        "pvc-was-added-and-pod-was-bound-to-different-pvc",
        pod_with_claim("PVC_2"),
        None,
        claim("PVC_1", "Vol_1"),
        QSKIP,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        pod_with_claim("PVC_1"),
        None,
        claim_dict("PVC_1", namespace="ns1", volume_name="Vol_1"),
        QSKIP,
    ),
    ("pvc-was-added-and-pod-was-bound-to-the-pvc", pod_with_claim("PVC_1"), None, claim("PVC_1", "Vol_1"), Q),
    (
        "pvc-was-updated-and-pod-was-bound-to-the-pvc",
        pod_with_claim("PVC_1"),
        claim("PVC_1"),
        claim("PVC_1", "Vol_1"),
        Q,
    ),
    (
        "pvc-was-updated-but-pod-refers-no-pvc",
        pod_with_claim(),
        claim("PVC_1"),
        claim("PVC_1", "Vol_1"),
        QSKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"), PVC_ADDED_CASES, ids=[c[0] for c in PVC_ADDED_CASES]
)
def test_is_schedulable_after_persistent_volume_claim_added(
    name: str, target: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    before = parsed(old) if old is not None else None
    assert (
        VolumeZone().is_schedulable_after_persistent_volume_claim_change(target, before, parsed(new)) == want
    )


SC_ADDED_CASES: list[tuple[str, dict[str, Any], QueueingHint]] = [
    ("sc-doesn't-have-volume-binding-mode", storage_class_dict("SC_1"), QSKIP),
    (
        "new-sc-is-wait-for-first-consumer-mode",
        storage_class_dict("SC_1", mode=BINDING_WAIT_FOR_FIRST_CONSUMER),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "new", "want"), SC_ADDED_CASES, ids=[c[0] for c in SC_ADDED_CASES])
def test_is_schedulable_after_storage_class_added(name: str, new: dict[str, Any], want: QueueingHint) -> None:
    assert (
        VolumeZone().is_schedulable_after_storage_class_added(pod_with_claim("PVC_1"), None, parsed(new))
        == want
    )


def pv(labels: Mapping[str, str]) -> PersistentVolume:
    view: PersistentVolume = parsed(pv_dict("Vol_1", labels=labels))
    return view


PV_CHANGE_CASES: list[tuple[str, PersistentVolume | None, PersistentVolume, QueueingHint]] = [
    ("new-pv-was-added", None, pv({BETA_ZONE_LABEL: "us-west1-b"}), Q),
    (
        "pv-was-updated-and-changed-topology",
        pv({BETA_ZONE_LABEL: "us-west1-a"}),
        pv({BETA_ZONE_LABEL: "us-west1-b"}),
        Q,
    ),
    (
        "pv-was-updated-and-added-topology-label",
        pv({BETA_ZONE_LABEL: "us-west1-a"}),
        pv({BETA_ZONE_LABEL: "us-west1-a", ZONE_LABEL: "zone"}),
        Q,
    ),
    (
        "pv-was-updated-but-no-topology-is-changed",
        pv({BETA_ZONE_LABEL: "us-west1-a", ZONE_LABEL: "zone"}),
        pv({BETA_ZONE_LABEL: "us-west1-a", ZONE_LABEL: "zone"}),
        QSKIP,
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), PV_CHANGE_CASES, ids=[c[0] for c in PV_CHANGE_CASES])
def test_is_schedulable_after_persistent_volume_change(
    name: str, old: PersistentVolume | None, new: PersistentVolume, want: QueueingHint
) -> None:
    assert (
        VolumeZone().is_schedulable_after_persistent_volume_change(pod_with_claim("PVC_1"), old, new) == want
    )


# -- through the simulation ------------------------------------------------------------------------


def node_manifest(name: str, zone: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE_LABEL: zone, REGION_LABEL: "r"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def sim_pod(name: str, claim_name: str) -> dict[str, Any]:
    raw = dict(pod_with_volumes(name, [claim_volume(claim_name, "data")]).raw)
    raw["metadata"] = {k: v for k, v in raw["metadata"].items() if k != "uid"}
    return raw


def test_zonal_volumes_keep_pods_in_their_zone() -> None:
    """Every pod lands in its volume's zone; a pod whose volume is in a zone without nodes stays
    pending with upstream's message."""
    sim = Simulation(registry=default_registry())
    for name, zone in (("a1", "zone-a"), ("a2", "zone-a"), ("b1", "zone-b"), ("c1", "zone-c")):
        sim.store.create(node_manifest(name, zone))
    zones = {"db-0": "zone-b", "db-1": "zone-c", "db-2": "zone-a", "db-3": "zone-b", "lost": "zone-x"}
    for name, zone in zones.items():
        create_all(sim.store, bound_claim(f"data-{name}", f"pv-{name}", labels={ZONE_LABEL: zone}))
        sim.store.create(sim_pod(name, f"data-{name}"))
    result = sim.run()
    node_zone = {"a1": "zone-a", "a2": "zone-a", "b1": "zone-b", "c1": "zone-c"}
    by_name = {o.name: o for o in result.outcomes}
    for name, zone in zones.items():
        if name == "lost":
            continue
        assert by_name[name].status == "Scheduled"
        assert node_zone.get(by_name[name].node or "") == zone
    assert by_name["lost"].status == "Unschedulable"
    assert by_name["lost"].message.startswith(f"0/4 nodes are available: 4 {ERR_REASON_CONFLICT}.")


def profile_config(profile: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def test_enabled_at_filter_alone() -> None:
    """With its PreFilter disabled the plugin still keeps pods in their volume's zone (Filter looks
    the volumes up itself); pods without volumes are unaffected."""
    registry = default_registry()
    config = config_from_dict(
        profile_config({"plugins": {"preFilter": {"disabled": [{"name": "VolumeZone"}]}}}), registry
    )
    sim = Simulation(config, registry)
    for name, zone in (("a1", "zone-a"), ("a2", "zone-a"), ("a3", "zone-a"), ("b1", "zone-b")):
        sim.store.create(node_manifest(name, zone))
    create_all(sim.store, bound_claim("data-db", "pv-db", labels={ZONE_LABEL: "zone-b"}))
    sim.store.create(sim_pod("db", "data-db"))
    plain = dict(pod_with_volumes("plain").raw)
    plain["metadata"] = {"name": "plain", "namespace": "default"}
    sim.store.create(plain)
    result = {o.name: o for o in sim.run().outcomes}
    assert (result["db"].status, result["db"].node) == ("Scheduled", "b1")
    assert result["plain"].status == "Scheduled"


def test_takes_no_args() -> None:
    with pytest.raises(InputError, match="takes no args"):
        config_from_dict(
            profile_config({"pluginConfig": [{"name": "VolumeZone", "args": {"x": 1}}]}), default_registry()
        )
