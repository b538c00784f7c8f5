"""What the volume binder asks of PersistentVolumes, claims and classes (upstream
``component-helpers/storage/volume``), the node-side checks over the whole NodeTable, and the
topology part of in-tree → CSI migration (``csi-translation-lib``).

A PV's node affinity is checked against a node's *labels only*, as upstream's ``CheckNodeAffinity``
builds a nameless node from them: ``matchFields`` on ``metadata.name`` never rule a node out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    BOUND_BY_CONTROLLER_ANNOTATION,
    FILESYSTEM,
    IN_TREE_PLUGIN_NAMES,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.cache.label_match import requirement_mask
from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import BoolArray

ZONE_GA = "topology.kubernetes.io/zone"
REGION_GA = "topology.kubernetes.io/region"
ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
#: How a PV label lists several zones (a regional disk).
MULTI_ZONE_DELIMITER = "__"

#: In-tree plugins whose volumes the scheduler reads as their CSI driver's once a node has migrated
#: them (upstream ``isCSIMigrationOnForPlugin``; Portworx's gate is on by default in v1.35).
MIGRATION_ON: frozenset[str] = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
        "kubernetes.io/portworx-volume",
    }
)
#: The CSI topology key an in-tree volume's zone becomes (the drivers without one keep their
#: topology as it is).
CSI_ZONE_KEYS: Mapping[str, str] = {
    "gcePersistentDisk": "topology.gke.io/zone",
    "awsElasticBlockStore": "topology.ebs.csi.aws.com/zone",
    "azureDisk": "topology.disk.csi.azure.com/zone",
    "cinder": "topology.cinder.csi.openstack.org/zone",
}


def _spec(obj: PersistentVolume | PersistentVolumeClaim) -> Mapping[str, Any]:
    spec = obj.raw.get("spec")
    return spec if isinstance(spec, Mapping) else {}


# -- node affinity ------------------------------------------------------------------------------------


def node_affinity_matches(selector: NodeSelector | None, labels: Mapping[str, str]) -> bool:
    """Upstream ``CheckNodeAffinity``: no affinity matches every node."""
    return selector is None or selector.matches("", labels)


def _term_mask(table: NodeTable, term: NodeSelectorTerm) -> BoolArray:
    if term.is_empty:
        return np.zeros(table.capacity, dtype=np.bool_)
    mask = np.ones(table.capacity, dtype=np.bool_)
    for req in term.match_expressions:
        np.logical_and(mask, requirement_mask(table, req), out=mask)
    return mask


def node_affinity_mask(table: NodeTable, selector: NodeSelector | None) -> BoolArray:
    """:func:`node_affinity_matches` for every slot of ``table``."""
    if selector is None:
        return np.ones(table.capacity, dtype=np.bool_)
    mask = np.zeros(table.capacity, dtype=np.bool_)
    for term in selector.terms:
        np.logical_or(mask, _term_mask(table, term), out=mask)
    return mask


TopologyTerms = Sequence[Sequence[tuple[str, Sequence[str]]]]


def topology_terms_match(terms: TopologyTerms, labels: Mapping[str, str]) -> bool:
    """Upstream ``MatchTopologySelectorTerms`` (a class's ``allowedTopologies``): no terms match
    every node; a term without expressions matches none."""
    if not terms:
        return True
    return any(term and all(labels.get(key) in values for key, values in term) for term in terms)


def topology_terms_mask(table: NodeTable, terms: TopologyTerms) -> BoolArray:
    if not terms:
        return np.ones(table.capacity, dtype=np.bool_)
    mask = np.zeros(table.capacity, dtype=np.bool_)
    for term in terms:
        if not term:
            continue
        part = np.ones(table.capacity, dtype=np.bool_)
        for key, values in term:
            np.logical_and(
                part, requirement_mask(table, NodeSelectorRequirement(key, "In", tuple(values))), out=part
            )
        np.logical_or(mask, part, out=mask)
    return mask


def label_selector_mask(table: NodeTable, selector: LabelSelector) -> BoolArray:
    """Where a node's labels match a ``metav1.LabelSelector`` (a CSIStorageCapacity's topology)."""
    if selector.match_nothing:
        return np.zeros(table.capacity, dtype=np.bool_)
    mask = np.ones(table.capacity, dtype=np.bool_)
    for req in selector.requirements:
        np.logical_and(
            mask,
            requirement_mask(table, NodeSelectorRequirement(req.key, req.operator, req.values)),
            out=mask,
        )
    return mask


# -- claims and volumes -------------------------------------------------------------------------------


def is_volume_bound_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The PV's ``claimRef`` names the claim (and its uid, when the reference has one)."""
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def get_bind_volume_to_claim(
    pv: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """A copy of ``pv`` bound to ``claim`` (upstream ``GetBindVolumeToClaim``), and whether it differs:
    the ``claimRef`` set to the claim, and ``bound-by-controller`` added unless the author had
    pre-bound the volume to this claim."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, claim)
    raw = copy.deepcopy(dict(pv.raw))
    dirty = False
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace or ref.uid != claim.uid:
        spec = dict(raw.get("spec") or {})
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "resourceVersion": claim.resource_version,
        }
        raw["spec"] = spec
        dirty = True
    meta = dict(raw.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    if set_bound_by_controller and BOUND_BY_CONTROLLER_ANNOTATION not in annotations:
        annotations[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        meta["annotations"] = annotations
        raw["metadata"] = meta
        dirty = True
    return PersistentVolume.from_dict(raw), dirty


def claim_with_selected_node(claim: PersistentVolumeClaim, node_name: str, key: str) -> PersistentVolumeClaim:
    """A copy of ``claim`` annotated ``key: node_name``."""
    raw = copy.deepcopy(dict(claim.raw))
    meta = dict(raw.get("metadata") or {})
    meta["annotations"] = {**dict(meta.get("annotations") or {}), key: node_name}
    raw["metadata"] = meta
    return PersistentVolumeClaim.from_dict(raw)


def check_access_modes(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """The PV offers every access mode the claim asks for."""
    offered = set(pv.access_modes)
    return all(mode in offered for mode in claim.access_modes)


def volume_mode_mismatch(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    return (claim.volume_mode or FILESYSTEM) != (pv.volume_mode or FILESYSTEM)


def volume_attributes_class(obj: PersistentVolume | PersistentVolumeClaim) -> str:
    """``spec.volumeAttributesClassName`` ("" for none)."""
    value = _spec(obj).get("volumeAttributesClassName")
    return value if isinstance(value, str) else ""


def storage_class_spec_name(obj: PersistentVolume | PersistentVolumeClaim) -> str:
    """``spec.storageClassName`` as written (the capacity scorer groups by it, not by the
    deprecated annotation)."""
    value = _spec(obj).get("storageClassName")
    return value if isinstance(value, str) else ""


def requests_storage(claim: PersistentVolumeClaim) -> bool:
    """Whether the claim asks for a size at all (a claim without one fits any capacity)."""
    resources = _spec(claim).get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    return isinstance(requests, Mapping) and "storage" in requests


def is_pvc_fully_bound(claim: PersistentVolumeClaim) -> bool:
    """Bound to a volume and marked so by the PV controller."""
    return bool(claim.volume_name) and BIND_COMPLETED_ANNOTATION in claim.annotations


def is_delay_binding_mode(claim: PersistentVolumeClaim, storage_class: StorageClass | None) -> bool:
    """Upstream ``IsDelayBindingMode``: the claim's class exists and binds WaitForFirstConsumer
    (a claim without a class, or with one that does not exist, is bound immediately)."""
    if not claim.class_name or storage_class is None:
        return False
    return storage_class.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER


def controlled_by(claim: PersistentVolumeClaim, owner_uid: str) -> bool:
    """Whether the claim's controller owner reference is the object with ``owner_uid``."""
    meta = claim.raw.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, Sequence):
        return False
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid") or "") == owner_uid
    return False


# -- CSI migration ------------------------------------------------------------------------------------


def migrated_plugin(pv: PersistentVolume) -> str | None:
    """The in-tree plugin of a PV the scheduler reads as CSI on nodes that migrated it, or None."""
    plugin = IN_TREE_PLUGIN_NAMES.get(pv.source_kind)
    return plugin if plugin in MIGRATION_ON else None


def plugin_migrated_on_node(plugin: str, csi_node: CSINode | None) -> bool:
    return csi_node is not None and plugin in csi_node.migrated_plugins


def _affinity_values(terms: list[list[NodeSelectorRequirement]], key: str) -> list[str]:
    return sorted({v for term in terms for req in term if req.key == key for v in req.values})


def _rename(terms: list[list[NodeSelectorRequirement]], old: str, new: str) -> None:
    for term in terms:
        for i, req in enumerate(term):
            if req.key == old:
                term[i] = NodeSelectorRequirement(new, req.operator, req.values)


def translated_node_affinity(pv: PersistentVolume) -> NodeSelector | None:
    """The node affinity of ``pv`` once read as its CSI driver's volume (csi-translation-lib's
    ``translateTopologyFromInTreeToCSI``): the zone requirement — from the affinity, else from the
    PV's zone label — moves to the driver's topology key, and a beta region requirement to the GA
    key."""
    csi_key = CSI_ZONE_KEYS.get(pv.source_kind)
    affinity = pv.node_affinity
    if csi_key is None:
        return affinity
    terms: list[list[NodeSelectorRequirement]] = (
        [list(t.match_expressions) for t in affinity.terms] if affinity is not None else []
    )
    fields = [t.match_fields for t in affinity.terms] if affinity is not None else []
    keys = {req.key for term in terms for req in term}
    if ZONE_GA in keys:
        zone, region = ZONE_GA, REGION_GA
    elif ZONE_BETA in keys:
        zone, region = ZONE_BETA, REGION_BETA
    elif ZONE_GA in pv.labels:
        zone, region = ZONE_GA, REGION_GA
    elif ZONE_BETA in pv.labels:
        zone, region = ZONE_BETA, REGION_BETA
    else:
        zone, region = ZONE_GA, REGION_GA
    if _affinity_values(terms, zone):
        _rename(terms, zone, csi_key)
    elif zone in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone].split(MULTI_ZONE_DELIMITER) if z.strip()})
        if zones:
            if not terms:
                terms, fields = [[]], [()]
            for term in terms:
                term.append(NodeSelectorRequirement(csi_key, "In", tuple(zones)))
    if region == REGION_BETA and _affinity_values(terms, region):
        _rename(terms, region, REGION_GA)
    if not terms:
        return affinity
    return NodeSelector(tuple(NodeSelectorTerm(tuple(t), f) for t, f in zip(terms, fields, strict=True)))
