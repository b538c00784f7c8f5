"""What kube-apiserver does to the storage kinds before it stores them: the defaults of
``pkg/apis/core/v1`` and ``pkg/apis/storage/v1`` (``defaults.go``) and the rules of
``pkg/apis/core/validation`` and ``pkg/apis/storage/validation`` that matter here, for create and
for update.

``serve`` answers a broken rule with a 422 naming every field (``registry/``), ``simulate`` stops at
the first with a located error (``api/manifests.py``); both read the rules from here. Each rule
gives a :data:`Cause` as upstream's ``field.Error`` words it: its type, its field path (upstream's
own, quirks included: ``spec.resources[storage]``, ``volumeMode`` without ``spec.``) and its text.

The rules read defensively: a field of the wrong JSON type is left to the typed views of
:mod:`kubesched.api.storage`, which refuse it with their own message. An absent field that the API
server would default is read as its default, so the rules hold whether or not defaults ran first.
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesched.api.field_errors import (
    Cause,
    duplicate,
    forbidden,
    go_value,
    immutable,
    invalid,
    not_supported,
    required,
    too_long,
)
from kubesched.api.quantity import QuantityError, canonical_quantity, parse_quantity
from kubesched.api.selectors import qualified_name_error
from kubesched.api.storage import (
    ACCESS_MODES,
    BETA_STORAGE_CLASS_ANNOTATION,
    BINDING_IMMEDIATE,
    BINDING_MODES,
    CLAIM_BOUND,
    FILESYSTEM,
    PV_PENDING,
    READ_WRITE_ONCE_POD,
    STORAGE,
    VOLUME_MODES,
)
from kubesched.errors import InputError

RETAIN = "Retain"
DELETE = "Delete"
RECYCLE = "Recycle"
#: What a PersistentVolume may do with its volume once released, and a StorageClass (no Recycle).
PV_RECLAIM_POLICIES: Final = (DELETE, RECYCLE, RETAIN)
CLASS_RECLAIM_POLICIES: Final = (DELETE, RETAIN)

#: A PersistentVolume's volume sources, in the order upstream's validation counts them.
PV_SOURCES: Final = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
#: Where upstream reports a second source, where that is not the source's own name.
_SOURCE_PATHS: Final = {"cephfs": "cephFS"}
#: The defaults upstream gives the fields of some volume sources.
_SOURCE_DEFAULTS: Final[Mapping[str, Mapping[str, Any]]] = {
    "hostPath": {"type": ""},
    "iscsi": {"iscsiInterface": "default"},
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "azureDisk": {"cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": False, "kind": "Shared"},
    "scaleIO": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
}
_HOST_PATH_TYPES: Final = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
FS_GROUP_POLICIES: Final = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES: Final = ("Persistent", "Ephemeral")

_DNS1123_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
#: A CSINode driver's nodeID may be this long (upstream allows the longer limit since v1.22).
_CSI_NODE_ID_MAX = 256
_MAX_PARAMETERS = 512
_MAX_PARAMETER_BYTES = 256 * 1024
_MAX_ATTACH_METADATA_BYTES = 256 * 1024
_MAX_VOLUME_ERROR_MESSAGE = 1024
_MIN_TOKEN_SECONDS = 600
_MAX_TOKEN_SECONDS = 1 << 32


def first_error(causes: list[Cause]) -> InputError | None:
    """The first broken rule as a located :class:`InputError` (what ``simulate`` reports)."""
    if not causes:
        return None
    _, field, message = causes[0]
    return InputError(message, field=field or None)


# -- reading fields defensively ------------------------------------------------------------------
def _mapping(value: Any) -> Mapping[str, Any] | None:
    """A mapping field: None when absent, the mapping, or None too when of another type (the typed
    view refuses those)."""
    return value if isinstance(value, Mapping) else None


def _map(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any] | None:
    """A list field: [] when absent, None when of another type (left to the typed view)."""
    if value is None:
        return []
    return value if isinstance(value, list) else None


def _quantity(value: Any) -> Any:
    """The exact value of a quantity, or None when it does not parse (a 400, or the view's error)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _quantity_text(value: Any) -> str:
    try:
        return canonical_quantity(value)
    except QuantityError:
        return str(value)


def subdomain_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1123Subdomain``: why ``value`` is no DNS subdomain (none when it is)."""
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        out.append(_SUBDOMAIN_MESSAGE)
    return out


def _class_name(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return []
    return [invalid(field, value, why) for why in subdomain_errors(value)]


def _qualified(field: str, value: str) -> list[Cause]:
    why = qualified_name_error(value)
    return [invalid(field, value, why)] if why is not None else []


def csi_driver_name_errors(field: str, name: Any) -> list[Cause]:
    """Upstream ``ValidateCSIDriverName``: required, at most 63 characters, a DNS subdomain in
    lower case."""
    if not isinstance(name, str):
        return []
    if not name:
        return [required(field)]
    out = []
    if len(name) > 63:
        out.append(too_long(field, 63, "bytes"))
    out += [invalid(field, name, why) for why in subdomain_errors(name.lower())]
    return out


def _access_modes(field: str, value: Any, empty: Cause) -> list[Cause]:
    modes = _list(value)
    if modes is None:
        return []
    if not modes:
        return [empty]
    out = []
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            out.append(not_supported(field, mode, tuple(sorted(ACCESS_MODES))))
        elif mode == READ_WRITE_ONCE_POD:
            once_pod = True
        else:
            other = True
    if once_pod and other:
        out.append(forbidden(field, "may not use ReadWriteOncePod with other access modes"))
    return out


def _volume_mode(field: str, value: Any) -> list[Cause]:
    if value is None or value in VOLUME_MODES:
        return []
    return [not_supported(field, value, tuple(sorted(VOLUME_MODES)))]


def _diff(old: Any, new: Any) -> str:
    """The fields that differ, one ``-``/``+`` pair each (what upstream's message appends)."""
    lines = []
    old_map = old if isinstance(old, Mapping) else {}
    new_map = new if isinstance(new, Mapping) else {}
    for key in sorted(set(old_map) | set(new_map)):
        if old_map.get(key) != new_map.get(key):
            if key in old_map:
                lines.append(f"-\t{key}: {go_value(old_map[key])}")
            if key in new_map:
                lines.append(f"+\t{key}: {go_value(new_map[key])}")
    return "\n".join(lines)


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` to ``value``, or drop it when ``value`` is None (an unset pointer)."""
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


# -- defaults ------------------------------------------------------------------------------------
def _spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else None


def _status(obj: dict[str, Any]) -> dict[str, Any] | None:
    status = obj.setdefault("status", {})
    return status if isinstance(status, dict) else None


def default_persistent_volume(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolume``: Pending, Retain, Filesystem (and the source's defaults)."""
    spec = _spec(obj)
    if spec is not None:
        spec.setdefault("persistentVolumeReclaimPolicy", RETAIN)
        spec.setdefault("volumeMode", FILESYSTEM)
        for source, defaults in _SOURCE_DEFAULTS.items():
            if isinstance(spec.get(source), dict):
                for key, value in defaults.items():
                    spec[source].setdefault(key, value)
    status = _status(obj)
    if status is not None and not status.get("phase"):
        status["phase"] = PV_PENDING


def default_persistent_volume_claim(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolumeClaim`` and its spec's: Pending, Filesystem."""
    spec = _spec(obj)
    if spec is not None:
        spec.setdefault("volumeMode", FILESYSTEM)
    status = _status(obj)
    if status is not None and not status.get("phase"):
        status["phase"] = "Pending"


def default_storage_class(obj: dict[str, Any]) -> None:
    """``SetDefaults_StorageClass``: reclaimPolicy Delete, volumeBindingMode Immediate."""
    obj.setdefault("reclaimPolicy", DELETE)
    obj.setdefault("volumeBindingMode", BINDING_IMMEDIATE)


def default_csi_driver(obj: dict[str, Any]) -> None:
    """``SetDefaults_CSIDriver`` with v1.32's feature gates."""
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("attachRequired", True)
    spec.setdefault("podInfoOnMount", False)
    spec.setdefault("storageCapacity", False)
    spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
    spec.setdefault("requiresRepublish", False)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    spec.setdefault("seLinuxMount", False)


def _defaulted(obj: Mapping[str, Any], default: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(dict(obj))
    default(copied)
    return copied


# -- PersistentVolume ----------------------------------------------------------------------------
def _source_causes(kind: str, source: Mapping[str, Any], where: str) -> list[Cause]:
    """The checks of the sources a scheduler meets most: each names what it cannot do without."""
    out: list[Cause] = []

    def need(key: str, at: str = where) -> None:
        value = source.get(key)
        if not isinstance(value, str) or not value:
            out.append(required(f"{at}.{key}"))

    def no_backsteps(key: str) -> None:
        value = source.get(key)
        if isinstance(value, str) and ".." in value.split("/"):
            out.append(invalid(f"{where}.{key}", value, "must not contain '..'"))

    def absolute(key: str) -> None:
        value = source.get(key)
        if isinstance(value, str) and value and not posixpath.isabs(value):
            out.append(invalid(f"{where}.{key}", value, "must be an absolute path"))

    if kind == "hostPath":
        need("path")
        no_backsteps("path")
        kind_of = source.get("type")
        if isinstance(kind_of, str) and kind_of not in _HOST_PATH_TYPES:
            out.append(not_supported(f"{where}.type", kind_of, _HOST_PATH_TYPES))
    elif kind == "local":
        need("path")
        absolute("path")
        no_backsteps("path")
    elif kind == "nfs":
        need("server")
        need("path")
        absolute("path")
    elif kind == "csi":
        out += csi_driver_name_errors(f"{where}.driver", source.get("driver", ""))
        need("volumeHandle")
    elif kind == "gcePersistentDisk":
        need("pdName", "spec.persistentDisk")
    elif kind == "awsElasticBlockStore":
        need("volumeID")
    return out


def validate_persistent_volume(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolume`` (its spec): access modes, capacity, reclaim policy, node
    affinity, exactly one volume source, class name and volume mode."""
    spec = _mapping(obj.get("spec"))
    if spec is None:
        if obj.get("spec") is not None:
            return []
        spec = {}
    out = _access_modes("spec.accessModes", spec.get("accessModes"), required("spec.accessModes"))
    capacity = spec.get("capacity")
    if capacity is None or isinstance(capacity, Mapping):
        capacity = capacity or {}
        if not capacity:
            out.append(required("spec.capacity"))
        if STORAGE not in capacity or len(capacity) > 1:
            out.append(not_supported("spec.capacity", dict(capacity), (STORAGE,)))
        for resource, amount in capacity.items():
            value = _quantity(amount)
            if value is not None and value <= 0:
                out.append(
                    invalid(f"spec.capacity[{resource}]", _quantity_text(amount), "must be greater than zero")
                )
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in PV_RECLAIM_POLICIES:
        out.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES))
    affinity = spec.get("nodeAffinity")
    if isinstance(affinity, Mapping) and affinity.get("required") is None:
        out.append(required("spec.nodeAffinity.required", "must specify required node constraints"))
    sources = 0
    for kind in PV_SOURCES:
        source = spec.get(kind)
        if source is None:
            continue
        if sources and kind != "flexVolume":
            out.append(
                forbidden(f"spec.{_SOURCE_PATHS.get(kind, kind)}", "may not specify more than 1 volume type")
            )
            continue
        sources += 1
        out += _source_causes(kind, source if isinstance(source, Mapping) else {}, f"spec.{kind}")
        if kind == "local" and affinity is None:
            out.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if not sources:
        out.append(required("spec", "must specify a volume type"))
    host_path = spec.get("hostPath")
    if (
        isinstance(host_path, Mapping)
        and isinstance(host_path.get("path"), str)
        and posixpath.normpath(host_path["path"]) == "/"
        and policy == RECYCLE
    ):
        out.append(
            forbidden(
                "spec.persistentVolumeReclaimPolicy", "may not be 'recycle' for a hostPath mount of '/'"
            )
        )
    out += _class_name("spec.storageClassName", spec.get("storageClassName"))
    out += _volume_mode("spec.volumeMode", spec.get("volumeMode"))
    return out


def _pv_sources(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {kind: spec[kind] for kind in PV_SOURCES if spec.get(kind) is not None}


def validate_persistent_volume_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolumeUpdate``: the volume source and mode never change, and node
    affinity, once set, stays."""
    new_spec = _map(_defaulted(new, default_persistent_volume), "spec")
    old_spec = _map(_defaulted(old, default_persistent_volume), "spec")
    out: list[Cause] = []
    new_sources, old_sources = _pv_sources(new_spec), _pv_sources(old_spec)
    new_csi, old_csi = _mapping(new_sources.get("csi")), _mapping(old_sources.get("csi"))
    if new_csi is not None and old_csi is not None and "controllerExpandSecretRef" not in old_csi:
        # The expansion secret may be added to a volume made before it existed.
        new_sources["csi"] = {k: v for k, v in new_csi.items() if k != "controllerExpandSecretRef"}
    if new_sources != old_sources:
        out.append(
            forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation\n" + _diff(old_sources, new_sources),
            )
        )
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        out.append(immutable("volumeMode", new_spec.get("volumeMode")))
    if old_spec.get("nodeAffinity") is not None and new_spec.get("nodeAffinity") != old_spec.get(
        "nodeAffinity"
    ):
        out.append(immutable("nodeAffinity", new_spec.get("nodeAffinity")))
    return out


# -- PersistentVolumeClaim -----------------------------------------------------------------------
def _data_source(field: str, ref: Any) -> list[Cause]:
    if not isinstance(ref, Mapping):
        return []
    out = []
    if not ref.get("name"):
        out.append(required(f"{field}.name"))
    if not ref.get("kind"):
        out.append(required(f"{field}.kind"))
    group = ref.get("apiGroup") or ""
    if not group and ref.get("kind") != "PersistentVolumeClaim":
        out.append(
            invalid(
                field,
                ref.get("kind", ""),
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            )
        )
    if isinstance(group, str) and group:
        out += [invalid(f"{field}.apiGroup", group, why) for why in subdomain_errors(group)]
    return out


def _claim_request(spec: Mapping[str, Any]) -> Any:
    return _map(_map(spec, "resources"), "requests").get(STORAGE)


def validate_persistent_volume_claim(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolumeClaimSpec``: access modes, a positive storage request, class name,
    volume mode and data sources."""
    spec = _mapping(obj.get("spec"))
    if spec is None:
        if obj.get("spec") is not None:
            return []
        spec = {}
    out = _access_modes(
        "spec.accessModes",
        spec.get("accessModes"),
        required("spec.accessModes", "at least 1 access mode is required"),
    )
    requests = _map(spec, "resources").get("requests")
    if requests is None or isinstance(requests, Mapping):
        amount = (requests or {}).get(STORAGE)
        value = _quantity(amount)
        if amount is None:
            out.append(required(f"spec.resources[{STORAGE}]"))
        elif value is not None and value <= 0:
            out.append(
                invalid(f"spec.resources[{STORAGE}]", _quantity_text(amount), "must be greater than zero")
            )
    out += _class_name("spec.storageClassName", spec.get("storageClassName"))
    out += _volume_mode("spec.volumeMode", spec.get("volumeMode"))
    out += _data_source("spec.dataSource", spec.get("dataSource"))
    out += _data_source("spec.dataSourceRef", spec.get("dataSourceRef"))
    source, ref = _mapping(spec.get("dataSource")), _mapping(spec.get("dataSourceRef"))
    if ref is not None and ref.get("namespace"):
        if source is not None:
            out.append(
                invalid(
                    "spec",
                    "spec.dataSource",
                    "may not be specified when dataSourceRef.namespace is specified",
                )
            )
    elif source is not None and ref is not None:
        same = all(source.get(k) == ref.get(k) for k in ("apiGroup", "kind", "name"))
        if not same:
            out.append(invalid("spec", "spec.dataSource", "must match dataSourceRef"))
    return out


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_map(obj, "metadata"), "annotations")


def validate_persistent_volume_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolumeClaimUpdate``: a claim's spec is fixed once made, but for its
    volumeName (set once, by whoever binds it), a class given to a claim that had none (retroactive
    default class), and a bound claim's storage request (expansion; never below what the volume
    has). ``old``'s status is the claim's: an update of the spec does not change it."""
    new_spec = dict(_map(_defaulted(new, default_persistent_volume_claim), "spec"))
    old_spec = dict(_map(_defaulted(old, default_persistent_volume_claim), "spec"))
    new_claim, old_claim = copy.deepcopy(new_spec), copy.deepcopy(old_spec)
    out: list[Cause] = []
    if not old_spec.get("volumeName"):
        _set(old_claim, "volumeName", new_spec.get("volumeName"))
    old_notes, new_notes = _annotations(old), _annotations(new)
    old_class, new_class = old_spec.get("storageClassName"), new_spec.get("storageClassName")
    from_annotation = (
        BETA_STORAGE_CLASS_ANNOTATION in old_notes
        and old_class is None
        and new_class is not None
        and new_class == old_notes[BETA_STORAGE_CLASS_ANNOTATION]
        and new_notes.get(BETA_STORAGE_CLASS_ANNOTATION, new_class)
        == old_notes[BETA_STORAGE_CLASS_ANNOTATION]
    )
    if from_annotation:
        new_claim.pop("storageClassName", None)
    else:
        before = old_notes.get(BETA_STORAGE_CLASS_ANNOTATION, "")
        after = new_notes.get(BETA_STORAGE_CLASS_ANNOTATION, "")
        if before != after:
            out.append(immutable(f"metadata.annotations.{BETA_STORAGE_CLASS_ANNOTATION}", after))
        if BETA_STORAGE_CLASS_ANNOTATION not in old_notes and old_class is None and new_class:
            new_claim.pop("storageClassName", None)
    phase = _map(old, "status").get("phase")
    resources = new_claim.get("resources")
    if phase == CLAIM_BOUND and isinstance(resources, dict) and isinstance(resources.get("requests"), dict):
        resources["requests"][STORAGE] = _claim_request(old_spec)
        if resources["requests"][STORAGE] is None:
            del resources["requests"][STORAGE]
    _set(new_claim, "volumeAttributesClassName", old_claim.get("volumeAttributesClassName"))
    if new_claim != old_claim:
        out.append(
            forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims\n" + _diff(old_claim, new_claim),
            )
        )
    new_size, old_size = _quantity(_claim_request(new_spec)), _quantity(_claim_request(old_spec))
    status_size = _quantity(_map(_map(old, "status"), "capacity").get(STORAGE)) or 0
    if new_size is not None and old_size is not None and new_size < old_size and new_size <= status_size:
        out.append(
            forbidden(f"spec.resources.requests.{STORAGE}", "field can not be less than status.capacity")
        )
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        out.append(immutable("volumeMode", new_spec.get("volumeMode")))
    return out


# -- StorageClass --------------------------------------------------------------------------------
def _parameters(field: str, params: Any) -> list[Cause]:
    if not isinstance(params, Mapping):
        return []
    if len(params) > _MAX_PARAMETERS:
        return [too_long(field, _MAX_PARAMETERS, "items")]
    out = []
    size = 0
    for key, value in params.items():
        if not key:
            out.append(invalid(field, key, "field can not be empty."))
        size += len(str(key)) + len(str(value))
    if size > _MAX_PARAMETER_BYTES:
        out.append(too_long(field, _MAX_PARAMETER_BYTES, "bytes"))
    return out


def _allowed_topologies(terms: Any) -> list[Cause]:
    listed = _list(terms)
    if not listed:
        return []
    out: list[Cause] = []
    # Upstream compares each term with a list that starts with as many empty entries as there are
    # terms, so a term without expressions always counts as a duplicate.
    seen: list[dict[str, frozenset[Any]]] = [{} for _ in listed]
    for i, raw in enumerate(listed):
        where = f"allowedTopologies[{i}]"
        term = raw if isinstance(raw, Mapping) else {}
        keys: dict[str, frozenset[Any]] = {}
        for j, raw_expr in enumerate(_list(term.get("matchLabelExpressions")) or []):
            at = f"{where}.matchLabelExpressions[{j}]"
            expr = raw_expr if isinstance(raw_expr, Mapping) else {}
            values = _list(expr.get("values")) or []
            if not values:
                out.append(required(f"{at}.values"))
            met: set[Any] = set()
            for k, value in enumerate(values):
                if isinstance(value, str) and value in met:
                    out.append(duplicate(f"{at}.values[{k}]", value))
                if isinstance(value, str):
                    met.add(value)
            key = expr.get("key")
            if isinstance(key, str):
                out += _qualified(f"{at}.key", key)
                if key in keys:
                    out.append(duplicate(f"{at}.key", key))
                keys[key] = frozenset(met)
        if keys in seen:
            out.append(duplicate(f"{where}.matchLabelExpressions", ""))
        seen.append(keys)
    return out


def validate_storage_class(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateStorageClass``: a qualified provisioner, parameters within bounds, a supported
    reclaim policy and binding mode, well-formed allowed topologies."""
    out: list[Cause] = []
    provisioner = obj.get("provisioner")
    if provisioner is None or provisioner == "":
        out.append(required("provisioner"))
    elif isinstance(provisioner, str):
        out += _qualified("provisioner", provisioner.lower())
    out += _parameters("parameters", obj.get("parameters"))
    policy = obj.get("reclaimPolicy")
    if isinstance(policy, str) and policy and policy not in CLASS_RECLAIM_POLICIES:
        out.append(not_supported("reclaimPolicy", policy, CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        out.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    out += _allowed_topologies(obj.get("allowedTopologies"))
    return out


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateStorageClassUpdate``: parameters, provisioner, reclaim policy and binding mode are
    fixed once made."""
    new, old = _defaulted(new, default_storage_class), _defaulted(old, default_storage_class)
    out: list[Cause] = []
    if new.get("parameters") != old.get("parameters"):
        out.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        out.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        out.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        out.append(immutable("volumeBindingMode", new.get("volumeBindingMode")))
    return out


# -- CSINode -------------------------------------------------------------------------------------
def validate_csi_node(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSINode``: each driver named once with a valid name, a node ID, a non-negative
    allocatable count and qualified, unique topology keys."""
    out: list[Cause] = []
    names: set[str] = set()
    for i, raw in enumerate(_list(_map(obj, "spec").get("drivers")) or []):
        where = f"spec.drivers[{i}]"
        driver = raw if isinstance(raw, Mapping) else {}
        name = driver.get("name", "")
        out += csi_driver_name_errors(f"{where}.name", name)
        node_id = driver.get("nodeID", "")
        if isinstance(node_id, str):
            if not node_id:
                out.append(required(f"{where}.nodeID"))
            elif len(node_id) > _CSI_NODE_ID_MAX:
                out.append(
                    invalid(f"{where}.nodeID", node_id, f"must be {_CSI_NODE_ID_MAX} characters or less")
                )
        count = _map(driver, "allocatable").get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count < 0:
            out.append(invalid(f"{where}.allocatable.count", count, "must be greater than or equal to 0"))
        if isinstance(name, str):
            if name in names:
                out.append(duplicate(f"{where}.name", name))
            names.add(name)
        keys: set[str] = set()
        for key in _list(driver.get("topologyKeys")) or []:
            if not isinstance(key, str):
                continue
            if not key:
                out.append(required(where))
            if key in keys:
                out.append(duplicate(where, key))
            keys.add(key)
            if key:
                out += _qualified(where, key)
    return out


def validate_csi_node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSINodeUpdate``: a driver already listed does not change."""
    out: list[Cause] = []
    new_drivers = [d for d in _list(_map(new, "spec").get("drivers")) or [] if isinstance(d, Mapping)]
    for before in _list(_map(old, "spec").get("drivers")) or []:
        if not isinstance(before, Mapping):
            continue
        for after in new_drivers:
            if after.get("name") == before.get("name") and after != before:
                out.append(immutable("spec.drivers", dict(after)))
    return out


# -- CSIDriver -----------------------------------------------------------------------------------
def validate_csi_driver(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSIDriver``: a supported fsGroupPolicy and lifecycle modes, token requests with
    distinct audiences and sane lifetimes."""
    out: list[Cause] = []
    spec = _map(obj, "spec")
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        out.append(not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
    audiences: set[Any] = set()
    for i, raw in enumerate(_list(spec.get("tokenRequests")) or []):
        request = raw if isinstance(raw, Mapping) else {}
        audience = request.get("audience", "")
        if isinstance(audience, str) and audience in audiences:
            out.append(duplicate(f"spec.tokenRequests[{i}].audience", audience))
            continue
        if isinstance(audience, str):
            audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            at = f"spec.tokenRequests[{i}].expirationSeconds"
            if seconds < _MIN_TOKEN_SECONDS:
                out.append(invalid(at, seconds, "may not specify a duration less than 10 minutes"))
            if seconds > _MAX_TOKEN_SECONDS:
                out.append(invalid(at, seconds, "may not specify a duration larger than 2^32 seconds"))
    for mode in _list(spec.get("volumeLifecycleModes")) or []:
        if mode not in LIFECYCLE_MODES:
            out.append(not_supported("spec.volumeLifecycleModes", mode, LIFECYCLE_MODES))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if isinstance(period, int) and not isinstance(period, bool) and period < 10:
        out.append(
            invalid(
                "spec.nodeAllocatableUpdatePeriodSeconds",
                period,
                "must be greater than or equal to 10 seconds",
            )
        )
    return out


def validate_csi_driver_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSIDriverUpdate``: attachRequired and the lifecycle modes are fixed once made
    (upstream names the first ``spec.attachedRequired``)."""
    new_spec = _map(_defaulted(new, default_csi_driver), "spec")
    old_spec = _map(_defaulted(old, default_csi_driver), "spec")
    out: list[Cause] = []
    if new_spec.get("attachRequired") != old_spec.get("attachRequired"):
        out.append(immutable("spec.attachedRequired", new_spec.get("attachRequired")))
    if new_spec.get("volumeLifecycleModes") != old_spec.get("volumeLifecycleModes"):
        out.append(immutable("spec.volumeLifecycleModes", new_spec.get("volumeLifecycleModes")))
    return out


# -- CSIStorageCapacity --------------------------------------------------------------------------
def validate_csi_storage_capacity(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSIStorageCapacity``: a class name and a capacity that is not negative."""
    out: list[Cause] = []
    name = obj.get("storageClassName")
    if isinstance(name, str):
        out += [invalid("storageClassName", name, why) for why in subdomain_errors(name)]
    capacity = obj.get("capacity")
    value = _quantity(capacity)
    if value is not None and value < 0:
        out.append(invalid("capacity", _quantity_text(capacity), "must be greater than or equal to 0"))
    return out


def validate_csi_storage_capacity_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateCSIStorageCapacityUpdate``: the topology and class a capacity is for are fixed."""
    out: list[Cause] = []
    if new.get("nodeTopology") != old.get("nodeTopology"):
        out.append(immutable("nodeTopology", new.get("nodeTopology")))
    if new.get("storageClassName") != old.get("storageClassName"):
        out.append(immutable("storageClassName", new.get("storageClassName")))
    return out


# -- VolumeAttachment ----------------------------------------------------------------------------
def validate_volume_attachment(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateVolumeAttachment`` and its v1 checks: an attacher (a CSI driver name), exactly one
    source, a node name, and a status within bounds."""
    out: list[Cause] = []
    spec = _map(obj, "spec")
    attacher = spec.get("attacher", "")
    if attacher == "":
        out.append(required("spec.attacher"))
    source = _map(spec, "source")
    inline, pv_name = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv_name is None:
        out.append(
            required("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName")
        )
    elif inline is not None and pv_name is not None:
        out.append(
            forbidden("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName")
        )
    elif pv_name == "":
        out.append(
            required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")
        )
    node = spec.get("nodeName", "")
    if isinstance(node, str):
        out += [invalid("spec.nodeName", node, why) for why in subdomain_errors(node)]
    status = _map(obj, "status")
    metadata = _map(status, "attachmentMetadata")
    if sum(len(str(k)) + len(str(v)) for k, v in metadata.items()) > _MAX_ATTACH_METADATA_BYTES:
        out.append(too_long("status.attachmentMetadata", _MAX_ATTACH_METADATA_BYTES, "bytes"))
    for key in ("attachError", "detachError"):
        error = _map(status, key)
        message = error.get("message")
        if isinstance(message, str) and len(message) > _MAX_VOLUME_ERROR_MESSAGE:
            out.append(too_long(f"status.{key}.message", _MAX_ATTACH_METADATA_BYTES, "bytes"))
        code = error.get("errorCode")
        if isinstance(code, int) and not isinstance(code, bool) and code < 0:
            out.append(
                invalid(f"status.{key}.errorCode", code, "must be between 0 and 2147483647, inclusive")
            )
    out += csi_driver_name_errors("spec.attacher", attacher) if attacher != "" else []
    if isinstance(pv_name, str) and pv_name:
        out += [
            invalid("spec.source.persistentVolumeName", pv_name, why) for why in subdomain_errors(pv_name)
        ]
    return out


def validate_volume_attachment_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateVolumeAttachmentUpdate``: the spec is read-only."""
    if new.get("spec") != old.get("spec"):
        return [immutable("spec", new.get("spec"))]
    return []


# -- by kind -------------------------------------------------------------------------------------
Rules = Callable[[Mapping[str, Any]], list[Cause]]
UpdateRules = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Cause]]

#: Kind → its rules on create (and on every write).
VALIDATE: Final[Mapping[str, Rules]] = {
    "PersistentVolume": validate_persistent_volume,
    "PersistentVolumeClaim": validate_persistent_volume_claim,
    "StorageClass": validate_storage_class,
    "CSINode": validate_csi_node,
    "CSIDriver": validate_csi_driver,
    "CSIStorageCapacity": validate_csi_storage_capacity,
    "VolumeAttachment": validate_volume_attachment,
}
#: Kind → what an update may not change.
VALIDATE_UPDATE: Final[Mapping[str, UpdateRules]] = {
    "PersistentVolume": validate_persistent_volume_update,
    "PersistentVolumeClaim": validate_persistent_volume_claim_update,
    "StorageClass": validate_storage_class_update,
    "CSINode": validate_csi_node_update,
    "CSIDriver": validate_csi_driver_update,
    "CSIStorageCapacity": validate_csi_storage_capacity_update,
    "VolumeAttachment": validate_volume_attachment_update,
}


def storage_quantities(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The quantities of a storage object, each with its field: a PV's capacity, a claim's
    requests, limits and status, a CSIStorageCapacity's capacity and maximum volume size."""
    kind = obj.get("kind")
    out: list[tuple[str, Any]] = []

    def take(mapping: Any, where: str) -> None:
        if isinstance(mapping, Mapping):
            out.extend((f"{where}.{key}", value) for key, value in mapping.items())

    if kind == "PersistentVolume":
        take(_map(obj, "spec").get("capacity"), "spec.capacity")
    elif kind == "PersistentVolumeClaim":
        resources = _map(_map(obj, "spec"), "resources")
        take(resources.get("requests"), "spec.resources.requests")
        take(resources.get("limits"), "spec.resources.limits")
        status = _map(obj, "status")
        take(status.get("capacity"), "status.capacity")
        take(status.get("allocatedResources"), "status.allocatedResources")
    elif kind == "CSIStorageCapacity":
        for key in ("capacity", "maximumVolumeSize"):
            if obj.get(key) is not None:
                out.append((key, obj[key]))
    return out
