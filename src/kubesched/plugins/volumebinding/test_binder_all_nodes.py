"""``find_pod_volumes`` answers for every node at once; this checks it against a line-by-line port of
upstream's per-node ``FindPodVolumes`` on random clusters: volumes of several classes, sizes,
phases, pre-bound and bound ones, local and zonal affinities, in-tree volumes migrated on some
nodes, claims with selected nodes, classes with and without provisioners and topologies, and
CSIStorageCapacity. Every node's reasons, static bindings and provisions must be the same."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    MIGRATED_PLUGINS_ANNOTATION,
    NO_PROVISIONER,
    PV_AVAILABLE,
    SELECTED_NODE_ANNOTATION,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kubesched.plugins.helper.assume_cache import NotFoundError
from kubesched.plugins.testing import build_snapshot
from kubesched.plugins.volumebinding.assume_cache import PVAssumeCache, PVCAssumeCache
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    PodVolumeClaims,
    VolumeBinder,
    volume_limit,
)
from kubesched.plugins.volumebinding.volume_helpers import (
    check_access_modes,
    is_volume_bound_to_claim,
    migrated_plugin,
    node_affinity_matches,
    plugin_migrated_on_node,
    requests_storage,
    topology_terms_match,
    translated_node_affinity,
    volume_attributes_class,
    volume_mode_mismatch,
)
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

ZONE = "topology.kubernetes.io/zone"
GKE_ZONE = "topology.gke.io/zone"
HOST = "kubernetes.io/hostname"
SIZES = ["1Gi", "2Gi", "5Gi"]
CLASSES = ["local", "local2", "prov", "capped"]


def reference(
    binder: VolumeBinder, pod: Pod, claims: PodVolumeClaims, node: Node
) -> tuple[Any, Any, list[str]]:
    """Upstream's FindPodVolumes for one node, written as upstream does it."""
    unbound_ok = bound_ok = sufficient = found = True
    static: list[tuple[str, str]] | None = None
    dynamic: list[tuple[str, str | None]] | None = None
    csi_node = binder.csi_node(node.name)
    for claim in claims.bound_claims:
        try:
            pv = binder.pv_cache.get_pv(claim.volume_name)
        except NotFoundError:
            found = False
            break
        affinity = pv.node_affinity
        plugin = migrated_plugin(pv)
        if plugin is not None and plugin_migrated_on_node(plugin, csi_node):
            affinity = translated_node_affinity(pv)
        if not node_affinity_matches(affinity, node.labels):
            bound_ok = False
            break
    delayed = claims.unbound_claims_delay_binding
    fast = False
    if delayed:
        to_provision: list[PersistentVolumeClaim] = []
        to_match: list[PersistentVolumeClaim] = []
        for claim in delayed:
            selected = claim.annotations.get(SELECTED_NODE_ANNOTATION)
            if selected is None:
                to_match.append(claim)
            elif selected != node.name:
                unbound_ok = False
                fast = True
                break
            else:
                to_provision.append(claim)
        if not fast:
            if to_match:
                chosen: dict[str, PersistentVolume] = {}
                found_all = True
                bindings: list[tuple[str, str]] = []
                for claim in sorted(to_match, key=lambda c: c.request):
                    matched = match_one(
                        claim, claims.unbound_volumes_delay_binding.get(claim.class_name, []), node, chosen
                    )
                    if matched is None:
                        to_provision.append(claim)
                        found_all = False
                        continue
                    chosen[matched.name] = matched
                    bindings.append((claim.name, matched.name))
                unbound_ok = found_all
                static = bindings or None
            if to_provision:
                unbound_ok, sufficient, dynamic = provision(binder, to_provision, node)
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not sufficient:
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if not found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return static, dynamic, reasons


def match_one(
    claim: PersistentVolumeClaim,
    volumes: list[PersistentVolume],
    node: Node,
    excluded: dict[str, PersistentVolume],
) -> PersistentVolume | None:
    smallest: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, claim):
            continue
        if pv.capacity < claim.request or volume_mode_mismatch(claim, pv):
            continue
        if volume_attributes_class(claim) != volume_attributes_class(pv) or pv.deletion_timestamp:
            continue
        affinity_ok = node_affinity_matches(pv.node_affinity, node.labels)
        if is_volume_bound_to_claim(pv, claim):
            return pv if affinity_ok else None
        if pv.phase != PV_AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.class_name or not affinity_ok or not check_access_modes(claim, pv):
            continue
        if smallest is None or smallest.capacity > pv.capacity:
            smallest = pv
    return smallest


def provision(
    binder: VolumeBinder, claims: list[PersistentVolumeClaim], node: Node
) -> tuple[bool, bool, list[tuple[str, str | None]] | None]:
    out: list[tuple[str, str | None]] = []
    for claim in claims:
        storage_class = binder.storage_class(claim.class_name)
        assert storage_class is not None
        if storage_class.provisioner in ("", NO_PROVISIONER):
            return False, True, None
        if not topology_terms_match(storage_class.allowed_topologies, node.labels):
            return False, True, None
        found: CSIStorageCapacity | None = None
        checked = False
        driver = binder.informers.informer("CSIDriver").get(None, storage_class.provisioner)
        if requests_storage(claim) and driver is not None and driver.storage_capacity:
            checked = True
            for cap in binder.informers.informer("CSIStorageCapacity").list():
                limit = volume_limit(cap)
                if (
                    cap.storage_class_name == storage_class.name
                    and limit is not None
                    and limit >= claim.request
                    and cap.node_topology.matches(node.labels)
                ):
                    found = cap
                    break
        if checked and found is None:
            return True, False, None
        out.append((claim.name, None if found is None else found.name))
    return True, True, out


# -- random clusters ------------------------------------------------------------------------------------


def _affinity(rng: random.Random, nodes: list[str]) -> dict[str, Any] | None:
    kind = rng.choice(["none", "host", "host", "zone", "two-terms"])
    if kind == "none":
        return None
    if kind == "host":
        terms = [{"matchExpressions": [{"key": HOST, "operator": "In", "values": [rng.choice(nodes)]}]}]
    elif kind == "zone":
        terms = [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [rng.choice(["z0", "z1"])]}]}
        ]
    else:
        terms = [
            {"matchExpressions": [{"key": HOST, "operator": "In", "values": [rng.choice(nodes)]}]},
            {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["z0"]}]},
        ]
    return {"required": {"nodeSelectorTerms": terms}}


def cluster(seed: int) -> tuple[VolumeBinder, Pod, list[Node]]:
    rng = random.Random(seed)
    store = MemoryStore()
    names = [f"n{i}" for i in range(rng.randint(1, 6))]
    nodes = []
    for name in names:
        labels = {HOST: name, "rack": rng.choice(["a", "b"])}
        zone = rng.choice(["z0", "z1", None])
        if zone is not None:
            labels[ZONE] = zone
            labels[GKE_ZONE] = zone
        nodes.append(Node.from_dict({"kind": "Node", "metadata": {"name": name, "labels": labels}}))
        if rng.random() < 0.5:
            store.create(
                {
                    "kind": "CSINode",
                    "metadata": {
                        "name": name,
                        "annotations": {MIGRATED_PLUGINS_ANNOTATION: "kubernetes.io/gce-pd"},
                    },
                    "spec": {"drivers": []},
                }
            )
    for cls in ("local", "local2"):
        store.create(
            {
                "kind": "StorageClass",
                "metadata": {"name": cls},
                "provisioner": NO_PROVISIONER,
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    prov: dict[str, Any] = {
        "kind": "StorageClass",
        "metadata": {"name": "prov"},
        "provisioner": "p",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if rng.random() < 0.5:
        prov["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "rack", "values": ["a"]}]}]
    store.create(prov)
    store.create(
        {
            "kind": "StorageClass",
            "metadata": {"name": "capped"},
            "provisioner": "c",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    store.create(
        {"kind": "CSIDriver", "metadata": {"name": "c"}, "spec": {"storageCapacity": rng.random() < 0.8}}
    )
    for i in range(rng.randint(0, 3)):
        cap: dict[str, Any] = {
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"cap{i}", "namespace": "default"},
            "storageClassName": "capped",
            "nodeTopology": rng.choice([{}, {"matchLabels": {"rack": rng.choice(["a", "b"])}}]),
        }
        if rng.random() < 0.8:
            cap["capacity"] = rng.choice(SIZES)
        if rng.random() < 0.3:
            cap["maximumVolumeSize"] = rng.choice(SIZES)
        store.create(cap)
    pvs = PVAssumeCache(None)
    claims_cache = PVCAssumeCache(None)
    claim_names = [f"c{i}" for i in range(rng.randint(1, 4))]
    for i in range(rng.randint(0, 8)):
        spec: dict[str, Any] = {
            "capacity": {"storage": rng.choice(SIZES)},
            "storageClassName": rng.choice(["local", "local", "local2"]),
            "accessModes": rng.choice([["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"], []]),
        }
        affinity = _affinity(rng, names)
        if affinity is not None:
            spec["nodeAffinity"] = affinity
        if rng.random() < 0.2:
            spec["claimRef"] = {"namespace": "default", "name": rng.choice([*claim_names, "other"])}
        labels = {"tier": rng.choice(["gold", "silver"])}
        if rng.random() < 0.35:
            spec["gcePersistentDisk"] = {"pdName": f"d{i}"}
            labels["failure-domain.beta.kubernetes.io/zone"] = rng.choice(["z0", "z1"])
        pvs.add(
            PersistentVolume.from_dict(
                {
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"pv{i}", "resourceVersion": "1", "labels": labels},
                    "spec": spec,
                    "status": {"phase": rng.choice(["Available", "Available", "Available", "Released"])},
                }
            )
        )
    volumes = []
    for name in claim_names:
        meta: dict[str, Any] = {
            "name": name,
            "namespace": "default",
            "resourceVersion": "1",
            "uid": f"uid-{name}",
        }
        spec = {"storageClassName": rng.choice(CLASSES), "accessModes": rng.choice([["ReadWriteOnce"], []])}
        if rng.random() < 0.9:
            spec["resources"] = {"requests": {"storage": rng.choice(SIZES)}}
        if rng.random() < 0.3:
            spec["selector"] = {"matchLabels": {"tier": "gold"}}
        state = rng.random()
        if state < 0.25:
            spec["volumeName"] = f"pv{rng.randint(0, 9)}"
            meta["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
        elif state < 0.35 and spec["storageClassName"] in ("prov", "capped"):
            meta["annotations"] = {SELECTED_NODE_ANNOTATION: rng.choice([*names, "gone"])}
        claims_cache.add(
            PersistentVolumeClaim.from_dict({"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec})
        )
        volumes.append({"name": f"v-{name}", "persistentVolumeClaim": {"claimName": name}})
    informers = informer_factory(store)
    binder = VolumeBinder(informers, None, pvs, claims_cache, 1.0, lambda c, t: c())
    pod = Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": volumes},
        }
    )
    return binder, pod, nodes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32))
def test_all_nodes_at_once_agree_with_each_node_alone(seed: int) -> None:
    binder, pod, nodes = cluster(seed)
    claims = binder.get_pod_volume_claims(pod)
    snapshot = build_snapshot(nodes)
    outcome = binder.find_pod_volumes(pod, claims, snapshot.table)
    for node in nodes:
        slot = snapshot.table.slot_of[node.name]
        got = outcome.pod_volumes(slot)
        static = (
            None if got.static_bindings is None else [(b.pvc.name, b.pv.name) for b in got.static_bindings]
        )
        dynamic = (
            None
            if got.dynamic_provisions is None
            else [
                (d.pvc.name, None if d.node_capacity is None else d.node_capacity.name)
                for d in got.dynamic_provisions
            ]
        )
        assert (static, dynamic, outcome.reasons(slot)) == reference(binder, pod, claims, node), node.name
