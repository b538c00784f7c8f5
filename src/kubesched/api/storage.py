"""Typed views of the storage kinds the volume plugins read: PersistentVolume,
PersistentVolumeClaim, StorageClass (``storage.k8s.io/v1``), CSINode, CSIDriver, CSIStorageCapacity
and VolumeAttachment.

Each view keeps the stored mapping as ``raw`` (what a writer copies and changes) and parses the
fields scheduling reads, failing with an :class:`~kubesched.errors.InputError` that names the field.
Storage classes follow upstream's helpers: the deprecated ``volume.beta.kubernetes.io/storage-class``
annotation wins over ``spec.storageClassName`` (``GetPersistentVolumeClass`` and
``GetPersistentVolumeClaimClass``), and a claim that names no class at all is told apart from one
that names ``""`` (the default class applies only to the first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from kubesched.api.fields import as_list, as_mapping, as_str_map, object_name
from kubesched.api.quantity import QuantityError, resource_amount
from kubesched.api.selectors import LabelSelector, NodeSelector
from kubesched.errors import InputError

STORAGE = "storage"

#: The deprecated class annotation, still honoured before ``spec.storageClassName``.
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
#: Marks the class a claim without ``storageClassName`` gets (admission's DefaultStorageClass).
IS_DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
#: Set by the scheduler on a claim to provision: the node the pod was placed on.
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
#: Set by the PV controller on a claim it hands to an external provisioner.
STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner"
#: On a PV the controller (or the scheduler) bound, as opposed to one pre-bound by its author.
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
#: On a claim whose binding the controller finished.
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
#: On a PV a provisioner made: which one.
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"

BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BINDING_MODES = (BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER)

#: A StorageClass's ``provisioner`` meaning "no dynamic provisioning" (local volumes).
NO_PROVISIONER = "kubernetes.io/no-provisioner"

READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
ACCESS_MODES = (READ_WRITE_ONCE, READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE_POD)

FILESYSTEM = "Filesystem"
BLOCK = "Block"
VOLUME_MODES = (FILESYSTEM, BLOCK)

#: PersistentVolume phases.
PV_PENDING = "Pending"
PV_AVAILABLE = "Available"
PV_BOUND = "Bound"
PV_RELEASED = "Released"
PV_FAILED = "Failed"
#: PersistentVolumeClaim phases.
CLAIM_PENDING = "Pending"
CLAIM_BOUND = "Bound"
CLAIM_LOST = "Lost"

#: The in-tree volume sources CSI migration translates, and the CSI driver each is served by.
IN_TREE_CSI_DRIVERS: Mapping[str, str] = {
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "azureDisk": "disk.csi.azure.com",
    "azureFile": "file.csi.azure.com",
    "cinder": "cinder.csi.openstack.org",
    "vsphereVolume": "csi.vsphere.vmware.com",
    "portworxVolume": "pxd.portworx.com",
}
#: Their in-tree plugin names, as CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` lists.
IN_TREE_PLUGIN_NAMES: Mapping[str, str] = {
    "awsElasticBlockStore": "kubernetes.io/aws-ebs",
    "gcePersistentDisk": "kubernetes.io/gce-pd",
    "azureDisk": "kubernetes.io/azure-disk",
    "azureFile": "kubernetes.io/azure-file",
    "cinder": "kubernetes.io/cinder",
    "vsphereVolume": "kubernetes.io/vsphere-volume",
    "portworxVolume": "kubernetes.io/portworx-volume",
}
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


def _namespace(meta: Mapping[str, Any]) -> str:
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise InputError("namespace must be a string", field="metadata.namespace")
    return namespace


def _opt_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(
            f"must be a string, got {type(value).__name__}", field=f"{where}.{key}" if where else key
        )
    return value


def _str(data: Mapping[str, Any], key: str, where: str) -> str:
    return _opt_str(data, key, where) or ""


def _bytes(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(f"must be a quantity, got {value!r}", field=where)
    try:
        return resource_amount(STORAGE, value)
    except QuantityError as exc:
        raise InputError(str(exc), field=where) from None


def _access_modes(spec: Mapping[str, Any], where: str) -> tuple[str, ...]:
    modes = as_list(spec.get("accessModes"), f"{where}.accessModes")
    for i, mode in enumerate(modes):
        if mode not in ACCESS_MODES:
            raise InputError(
                f"supported values: {', '.join(repr(m) for m in ACCESS_MODES)}, got {mode!r}",
                field=f"{where}.accessModes[{i}]",
            )
    return tuple(modes)


def _volume_mode(spec: Mapping[str, Any], where: str) -> str:
    mode = spec.get("volumeMode") or FILESYSTEM
    if mode not in VOLUME_MODES:
        raise InputError(
            f"supported values: 'Block', 'Filesystem', got {mode!r}", field=f"{where}.volumeMode"
        )
    return str(mode)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A PV's ``claimRef``: the claim it is bound (or pre-bound) to."""

    namespace: str
    name: str
    uid: str


@dataclass(slots=True, eq=False)
class PersistentVolume:
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    #: ``GetPersistentVolumeClass``: the beta annotation, else ``spec.storageClassName`` ("" for none).
    storage_class: str
    #: ``spec.capacity.storage`` in bytes.
    capacity: int
    access_modes: tuple[str, ...]
    volume_mode: str
    #: ``spec.nodeAffinity.required``; None when the volume is reachable from every node.
    node_affinity: NodeSelector | None
    claim_ref: ObjectRef | None
    phase: str
    #: The volume source kind (``csi``, ``local``, ``gcePersistentDisk``, …) and its mapping.
    source_kind: str
    source: Mapping[str, Any]
    deletion_timestamp: str
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion") or "")

    @property
    def csi_driver(self) -> str:
        """The CSI driver serving the volume: the ``csi`` source's, or the one an in-tree source
        migrates to ("" for a source no CSI driver serves)."""
        if self.source_kind == "csi":
            return str(self.source.get("driver") or "")
        return IN_TREE_CSI_DRIVERS.get(self.source_kind, "")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PersistentVolume:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
        storage_class = annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        if storage_class is None:
            storage_class = _str(spec, "storageClassName", "spec")
        capacity_map = as_mapping(spec.get("capacity"), "spec.capacity")
        capacity = _bytes(capacity_map[STORAGE], "spec.capacity.storage") if STORAGE in capacity_map else 0
        affinity = as_mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        required = affinity.get("required")
        node_affinity = (
            NodeSelector.from_dict(required, "spec.nodeAffinity.required") if required is not None else None
        )
        claim_ref = None
        raw_ref = spec.get("claimRef")
        if raw_ref is not None:
            ref = as_mapping(raw_ref, "spec.claimRef")
            claim_ref = ObjectRef(
                _str(ref, "namespace", "spec.claimRef"),
                _str(ref, "name", "spec.claimRef"),
                _str(ref, "uid", "spec.claimRef"),
            )
        source_kind, source = "", cast(Mapping[str, Any], {})
        for key, value in spec.items():
            if isinstance(value, Mapping) and key not in ("capacity", "claimRef", "nodeAffinity"):
                source_kind, source = key, value
                break
        return cls(
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            annotations=annotations,
            storage_class=storage_class,
            capacity=capacity,
            access_modes=_access_modes(spec, "spec"),
            volume_mode=_volume_mode(spec, "spec"),
            node_affinity=node_affinity,
            claim_ref=claim_ref,
            phase=str(status.get("phase") or PV_PENDING),
            source_kind=source_kind,
            source=source,
            deletion_timestamp=str(meta.get("deletionTimestamp") or ""),
            raw=obj,
        )


@dataclass(slots=True, eq=False)
class PersistentVolumeClaim:
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    #: ``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``;
    #: None when neither is set (the default class may apply), "" for "no class".
    storage_class: str | None
    access_modes: tuple[str, ...]
    volume_mode: str
    #: ``spec.resources.requests.storage`` in bytes.
    request: int
    #: ``spec.selector``; None when the claim has none (any volume may match).
    selector: LabelSelector | None
    #: ``spec.volumeName``: the PV the claim is bound (or pre-bound) to.
    volume_name: str
    phase: str
    deletion_timestamp: str
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion") or "")

    @property
    def class_name(self) -> str:
        """The class as upstream's ``GetPersistentVolumeClaimClass`` returns it ("" for none)."""
        return self.storage_class or ""

    @property
    def controller_uid(self) -> str:
        """The uid of the owner reference marked ``controller: true`` ("" when none): a generic
        ephemeral volume's claim is controlled by its pod (upstream ``metav1.IsControlledBy``)."""
        refs = (self.raw.get("metadata") or {}).get("ownerReferences")
        if not isinstance(refs, list):
            return ""
        for ref in refs:
            if isinstance(ref, Mapping) and ref.get("controller") is True:
                return str(ref.get("uid") or "")
        return ""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PersistentVolumeClaim:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
        storage_class = annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        if storage_class is None:
            storage_class = _opt_str(spec, "storageClassName", "spec")
        resources = as_mapping(spec.get("resources"), "spec.resources")
        requests = as_mapping(resources.get("requests"), "spec.resources.requests")
        request = _bytes(requests[STORAGE], "spec.resources.requests.storage") if STORAGE in requests else 0
        raw_selector = spec.get("selector")
        selector = (
            LabelSelector.from_dict(raw_selector, "spec.selector") if raw_selector is not None else None
        )
        return cls(
            namespace=_namespace(meta),
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            annotations=annotations,
            storage_class=storage_class,
            access_modes=_access_modes(spec, "spec"),
            volume_mode=_volume_mode(spec, "spec"),
            request=request,
            selector=selector,
            volume_name=_str(spec, "volumeName", "spec"),
            phase=str(status.get("phase") or CLAIM_PENDING),
            deletion_timestamp=str(meta.get("deletionTimestamp") or ""),
            raw=obj,
        )


@dataclass(slots=True, eq=False)
class StorageClass:
    name: str
    provisioner: str
    volume_binding_mode: str
    #: ``allowedTopologies``: each term's ``matchLabelExpressions`` as (key, values) pairs.
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]
    parameters: dict[str, str]
    is_default: bool
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> StorageClass:
        meta = as_mapping(obj.get("metadata"), "metadata")
        annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
        provisioner = obj.get("provisioner")
        if not isinstance(provisioner, str) or not provisioner:
            raise InputError("a StorageClass needs a provisioner", field="provisioner")
        mode = obj.get("volumeBindingMode") or BINDING_IMMEDIATE
        if mode not in BINDING_MODES:
            raise InputError(
                f"supported values: 'Immediate', 'WaitForFirstConsumer', got {mode!r}",
                field="volumeBindingMode",
            )
        terms: list[tuple[tuple[str, tuple[str, ...]], ...]] = []
        for i, raw_term in enumerate(as_list(obj.get("allowedTopologies"), "allowedTopologies")):
            where = f"allowedTopologies[{i}]"
            term = as_mapping(raw_term, where)
            exprs: list[tuple[str, tuple[str, ...]]] = []
            for j, raw_expr in enumerate(
                as_list(term.get("matchLabelExpressions"), f"{where}.matchLabelExpressions")
            ):
                at = f"{where}.matchLabelExpressions[{j}]"
                expr = as_mapping(raw_expr, at)
                key = expr.get("key")
                if not isinstance(key, str) or not key:
                    raise InputError("a topology requirement needs a key", field=f"{at}.key")
                values = as_list(expr.get("values"), f"{at}.values")
                if not values or not all(isinstance(v, str) for v in values):
                    raise InputError("must name at least one value, all strings", field=f"{at}.values")
                exprs.append((key, tuple(values)))
            terms.append(tuple(exprs))
        is_default = (
            annotations.get(IS_DEFAULT_CLASS_ANNOTATION) == "true"
            or annotations.get(BETA_IS_DEFAULT_CLASS_ANNOTATION) == "true"
        )
        return cls(
            name=object_name(meta),
            provisioner=provisioner,
            volume_binding_mode=str(mode),
            allowed_topologies=tuple(terms),
            parameters=as_str_map(obj.get("parameters"), "parameters"),
            is_default=is_default,
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str
    topology_keys: tuple[str, ...]
    #: ``allocatable.count``: how many of the driver's volumes the node may attach; None: no limit.
    allocatable_count: int | None


@dataclass(slots=True, eq=False)
class CSINode:
    """Named after its node; lists the CSI drivers installed there."""

    name: str
    drivers: dict[str, CSINodeDriver]
    #: In-tree plugin names migrated to CSI on this node (the migrated-plugins annotation).
    migrated_plugins: frozenset[str]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> CSINode:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
        drivers: dict[str, CSINodeDriver] = {}
        for i, raw in enumerate(as_list(spec.get("drivers"), "spec.drivers")):
            where = f"spec.drivers[{i}]"
            d = as_mapping(raw, where)
            name = d.get("name")
            if not isinstance(name, str) or not name:
                raise InputError("a CSI driver entry needs a name", field=f"{where}.name")
            allocatable = as_mapping(d.get("allocatable"), f"{where}.allocatable")
            count = allocatable.get("count")
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise InputError(
                    f"must be a non-negative integer, got {count!r}", field=f"{where}.allocatable.count"
                )
            keys = as_list(d.get("topologyKeys"), f"{where}.topologyKeys")
            drivers[name] = CSINodeDriver(name, _str(d, "nodeID", where), tuple(str(k) for k in keys), count)
        migrated = annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
        return cls(
            name=object_name(meta),
            drivers=drivers,
            migrated_plugins=frozenset(p.strip() for p in migrated.split(",") if p.strip()),
            raw=obj,
        )


@dataclass(slots=True, eq=False)
class CSIDriver:
    name: str
    attach_required: bool
    #: ``spec.storageCapacity``: the scheduler checks CSIStorageCapacity for this driver's classes.
    storage_capacity: bool
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> CSIDriver:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        attach = spec.get("attachRequired", True)
        capacity = spec.get("storageCapacity", False)
        for key, value in (("attachRequired", attach), ("storageCapacity", capacity)):
            if not isinstance(value, bool):
                raise InputError("must be true or false", field=f"spec.{key}")
        return cls(object_name(meta), bool(attach), bool(capacity), obj)


@dataclass(slots=True, eq=False)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class_name: str
    #: Which nodes the capacity is reachable from (labels of the nodes); None: none.
    node_topology: LabelSelector
    #: Bytes free; None when the driver reports none.
    capacity: int | None
    maximum_volume_size: int | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> CSIStorageCapacity:
        meta = as_mapping(obj.get("metadata"), "metadata")
        class_name = obj.get("storageClassName")
        if not isinstance(class_name, str) or not class_name:
            raise InputError("a CSIStorageCapacity needs a storageClassName", field="storageClassName")
        topology = obj.get("nodeTopology")
        capacity = obj.get("capacity")
        maximum = obj.get("maximumVolumeSize")
        return cls(
            namespace=_namespace(meta),
            name=object_name(meta),
            storage_class_name=class_name,
            node_topology=LabelSelector.from_dict(topology, "nodeTopology"),
            capacity=_bytes(capacity, "capacity") if capacity is not None else None,
            maximum_volume_size=_bytes(maximum, "maximumVolumeSize") if maximum is not None else None,
            raw=obj,
        )


@dataclass(slots=True, eq=False)
class VolumeAttachment:
    name: str
    attacher: str
    node_name: str
    #: ``spec.source.persistentVolumeName`` ("" for an inline volume).
    pv_name: str
    attached: bool
    raw: Mapping[str, Any] = field(repr=False)
    #: ``spec.source.inlineVolumeSpec.csi.driver``: the driver of a migrated inline volume ("" else).
    inline_driver: str = ""

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> VolumeAttachment:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        attacher = spec.get("attacher")
        if not isinstance(attacher, str) or not attacher:
            raise InputError("a VolumeAttachment needs an attacher", field="spec.attacher")
        node_name = spec.get("nodeName")
        if not isinstance(node_name, str) or not node_name:
            raise InputError("a VolumeAttachment needs a nodeName", field="spec.nodeName")
        source = as_mapping(spec.get("source"), "spec.source")
        inline = as_mapping(source.get("inlineVolumeSpec"), "spec.source.inlineVolumeSpec")
        inline_csi = as_mapping(inline.get("csi"), "spec.source.inlineVolumeSpec.csi")
        return cls(
            name=object_name(meta),
            attacher=attacher,
            node_name=node_name,
            pv_name=_str(source, "persistentVolumeName", "spec.source"),
            attached=status.get("attached") is True,
            raw=obj,
            inline_driver=_str(inline_csi, "driver", "spec.source.inlineVolumeSpec.csi"),
        )


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One entry of a pod's ``spec.volumes``: its name, the claim it uses (a PVC, or the claim an
    ephemeral volume's template makes: ``<pod>-<volume>``), and its source as written."""

    name: str
    #: The source kind (``persistentVolumeClaim``, ``ephemeral``, ``gcePersistentDisk``, …).
    source_kind: str
    source: Mapping[str, Any]
    claim_name: str = ""
    read_only: bool = False

    @property
    def ephemeral(self) -> bool:
        return self.source_kind == "ephemeral"


def pod_volumes(spec: Mapping[str, Any], pod_name: str) -> tuple[PodVolume, ...]:
    """A pod's ``spec.volumes``, each with the claim it names (upstream ``ephemeral.VolumeClaimName``
    for generic ephemeral volumes)."""
    out: list[PodVolume] = []
    for i, raw in enumerate(as_list(spec.get("volumes"), "spec.volumes")):
        where = f"spec.volumes[{i}]"
        volume = as_mapping(raw, where)
        name = volume.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("every volume needs a name", field=f"{where}.name")
        kind, source = "", cast(Mapping[str, Any], {})
        for key, value in volume.items():
            if key != "name" and isinstance(value, Mapping):
                kind, source = key, value
                break
        claim, read_only = "", False
        if kind == "persistentVolumeClaim":
            claim_name = source.get("claimName")
            if not isinstance(claim_name, str) or not claim_name:
                raise InputError(
                    "a persistentVolumeClaim volume needs a claimName",
                    field=f"{where}.persistentVolumeClaim.claimName",
                )
            claim = claim_name
            read_only = source.get("readOnly") is True
        elif kind == "ephemeral":
            claim = f"{pod_name}-{name}"
        out.append(PodVolume(name, kind, source, claim, read_only))
    return tuple(out)
