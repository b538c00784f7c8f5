"""Loading standard Kubernetes manifests: files, directories or ``-`` (stdin); multi-document YAML
or JSON; ``kind: List`` (and ``*List``) expanded.

Every object of a kind kubesched understands is validated by parsing it; the first problem stops
the load with an :class:`InputError` naming file, document, object and field, so nothing is
scheduled from half-valid input. Kinds kubesched does not use are skipped with a warning.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from kubesched.api.affinity import validate_affinity
from kubesched.api.field_errors import Cause
from kubesched.api.fields import as_mapping, as_str_map, object_name
from kubesched.api.kinds import SHARED_KINDS, object_store_kind, wire_kind
from kubesched.api.objects import Node, Pod, PriorityClass, object_ref
from kubesched.api.pdb import API_VERSIONS as PDB_API_VERSIONS
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import API_VERSION as RESOURCE_API_VERSION
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.resource_rules import VALIDATE as RESOURCE_RULES
from kubesched.api.resource_rules import first_error as first_resource_error
from kubesched.api.resource_rules import resource_quantities
from kubesched.api.scheduling_group_rules import pod_group_errors, workload_errors
from kubesched.api.scheduling_groups import (
    POD_GROUP_STORE_KIND,
    WORKLOAD_API_VERSIONS,
    SchedulingPodGroup,
    Workload,
)
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.storage_rules import VALIDATE as STORAGE_RULES
from kubesched.api.storage_rules import first_error, storage_quantities
from kubesched.api.topology import HYPER_NODE_API_VERSIONS, HyperNode
from kubesched.api.topology_spread import parse_topology_spread_constraints
from kubesched.api.volcano import POD_GROUP_API_VERSIONS, QUEUE_API_VERSIONS, PodGroup, Queue
from kubesched.api.workloads import ReplicaSet, ReplicationController, Service, StatefulSet, owner_references
from kubesched.api.yaml_input import safe_load_all
from kubesched.errors import InputError, yaml_error_detail

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
#: Creation order: what others refer to first (admission resolves priority classes, pods need nodes).
LOAD_ORDER = (
    "Namespace",
    "PriorityClass",
    "Node",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    # A workload's groups before its pods, as its controller makes them.
    "Workload",
    "PodGroup.scheduling.k8s.io",
    "Pod",
)

#: Upstream ``TotalAnnotationSizeLimitB``: keys and values of one object's annotations together.
_MAX_ANNOTATION_BYTES = 256 * 1024


def dns_name_error(value: str, *, label: bool) -> str | None:
    """Why ``value`` is not a DNS-1123 label (``label``) or subdomain object name, or None."""
    if label:
        if len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
            return (
                f"{value!r} is not a valid name: a DNS-1123 label (at most 63 lowercase alphanumerics "
                "or '-', starting and ending with an alphanumeric)"
            )
        return None
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            f"{value!r} is not a valid name: a DNS-1123 subdomain (at most 253 lowercase alphanumerics, "
            "'-' or '.', starting and ending with an alphanumeric)"
        )
    return None


def validate_labels(data: Any, field: str) -> dict[str, str]:
    """A label map as upstream ``ValidateLabels`` wants it: qualified keys, label values."""
    labels = as_str_map(data, field)
    for key, value in labels.items():
        if (why := qualified_name_error(key)) is not None:
            raise InputError(why, field=field)
        if (why := label_value_error(value)) is not None:
            raise InputError(why, field=f"{field}.{key}")
    return labels


def validate_metadata(obj: Mapping[str, Any], kind: str, namespaced: bool) -> None:
    """``metadata`` as the API server validates it for every kind: a DNS name (a DNS label for a
    Namespace), a DNS-label namespace, valid labels and annotation keys."""
    meta = as_mapping(obj.get("metadata"), "metadata")
    name = object_name(meta)
    if (why := dns_name_error(name, label=kind == "Namespace")) is not None:
        raise InputError(why, field="metadata.name")
    namespace = meta.get("namespace")
    why = (
        dns_name_error(namespace, label=True)
        if namespaced and isinstance(namespace, str) and namespace
        else None
    )
    if why is not None:
        raise InputError(why, field="metadata.namespace")
    validate_labels(meta.get("labels"), "metadata.labels")
    annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
    size = 0
    for key, value in annotations.items():
        if (why := qualified_name_error(key.lower())) is not None:
            raise InputError(why, field="metadata.annotations")
        size += len(key) + len(value)
    if size > _MAX_ANNOTATION_BYTES:
        raise InputError(
            f"may not be more than {_MAX_ANNOTATION_BYTES} bytes in total", field="metadata.annotations"
        )


def _validate_namespace(obj: Mapping[str, Any]) -> None:
    meta = obj.get("metadata")
    object_name(meta if isinstance(meta, Mapping) else {})


def _validate_pod(obj: Mapping[str, Any]) -> None:
    Pod.from_dict(obj)
    # Fields the core view leaves to the plugins that read them, validated here all the same.
    spec = obj.get("spec") or {}
    parse_topology_spread_constraints(spec.get("topologySpreadConstraints"))
    validate_affinity(spec.get("affinity"))
    validate_labels(spec.get("nodeSelector"), "spec.nodeSelector")
    _validate_pod_names(spec)
    owner_references(obj.get("metadata") or {})


def _validate_pod_names(spec: Mapping[str, Any]) -> None:
    """Names in a pod spec the API server checks: container names (DNS labels, unique), and the
    scheduler, priority class and node a pod names (DNS subdomains), scheduling gates (qualified)."""
    seen: set[str] = set()
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or []):
            name = container.get("name") if isinstance(container, Mapping) else None
            where = f"spec.{kind}[{i}].name"
            if not isinstance(name, str) or not name:
                raise InputError("every container needs a name", field=where)
            if (why := dns_name_error(name, label=True)) is not None:
                raise InputError(why, field=where)
            if name in seen:
                raise InputError(f"duplicate container name {name!r}", field=where)
            seen.add(name)
    for key in ("schedulerName", "priorityClassName", "nodeName"):
        value = spec.get(key)
        if isinstance(value, str) and value and (why := dns_name_error(value, label=False)) is not None:
            raise InputError(why, field=f"spec.{key}")
    for i, gate in enumerate(spec.get("schedulingGates") or []):
        name = gate.get("name") if isinstance(gate, Mapping) else None
        if isinstance(name, str) and name and (why := qualified_name_error(name)) is not None:
            raise InputError(why, field=f"spec.schedulingGates[{i}].name")


def _storage_validator(parse: Callable[[Mapping[str, Any]], object]) -> Callable[[Mapping[str, Any]], None]:
    """A storage kind as the API server takes it: its quantities parse, upstream's rules hold (the
    first broken one is the error), and its typed view accepts it."""

    def validate(obj: Mapping[str, Any]) -> None:
        for field_path, value in storage_quantities(obj):
            try:
                parse_quantity(value)
            except QuantityError as exc:
                raise InputError(str(exc), field=field_path) from None
        error = first_error(STORAGE_RULES[str(obj.get("kind"))](obj))
        if error is not None:
            raise error
        parse(obj)

    return validate


def _resource_validator(parse: Callable[[Mapping[str, Any]], object]) -> Callable[[Mapping[str, Any]], None]:
    """A ``resource.k8s.io`` kind as the API server takes it: its quantities parse, upstream's rules
    hold (the first broken one is the error; a CEL selector that does not compile is one), and its
    typed view accepts it."""

    def validate(obj: Mapping[str, Any]) -> None:
        for field_path, value in resource_quantities(obj):
            try:
                parse_quantity(value)
            except QuantityError as exc:
                raise InputError(str(exc), field=field_path) from None
        error = first_resource_error(RESOURCE_RULES[str(obj.get("kind"))](obj))
        if error is not None:
            raise error
        parse(obj)

    return validate


def _rules_validator(
    parse: Callable[[Mapping[str, Any]], object], rules: Callable[[Mapping[str, Any]], list[Cause]]
) -> Callable[[Mapping[str, Any]], object]:
    """A kind whose object the view reads and the API server's rules accept (the first broken one
    is the error)."""

    def validate(obj: Mapping[str, Any]) -> object:
        view = parse(obj)
        error = first_error(rules(obj))
        if error is not None:
            raise error
        return view

    return validate


@dataclass(frozen=True, slots=True)
class KindSpec:
    api_versions: tuple[str, ...]
    validate: Callable[[Mapping[str, Any]], object]
    namespaced: bool


#: Kinds kubesched reads, with the apiVersions it accepts and the parser that validates them.
#: Later subsystems (batch, topology) add their kinds here.
KINDS: dict[str, KindSpec] = {
    "Namespace": KindSpec(("v1",), _validate_namespace, False),
    "Node": KindSpec(("v1",), Node.from_dict, False),
    "Pod": KindSpec(("v1",), _validate_pod, True),
    "Service": KindSpec(("v1",), Service.from_dict, True),
    "ReplicationController": KindSpec(("v1",), ReplicationController.from_dict, True),
    "ReplicaSet": KindSpec(("apps/v1",), ReplicaSet.from_dict, True),
    "StatefulSet": KindSpec(("apps/v1",), StatefulSet.from_dict, True),
    "PriorityClass": KindSpec(("scheduling.k8s.io/v1",), PriorityClass.from_dict, False),
    "PodDisruptionBudget": KindSpec(PDB_API_VERSIONS, PodDisruptionBudget.from_dict, True),
    "PodGroup": KindSpec(POD_GROUP_API_VERSIONS, PodGroup.from_dict, True),
    "Queue": KindSpec(QUEUE_API_VERSIONS, Queue.from_dict, False),
    "HyperNode": KindSpec(HYPER_NODE_API_VERSIONS, HyperNode.from_dict, False),
    "PersistentVolume": KindSpec(("v1",), _storage_validator(PersistentVolume.from_dict), False),
    "PersistentVolumeClaim": KindSpec(("v1",), _storage_validator(PersistentVolumeClaim.from_dict), True),
    "StorageClass": KindSpec(("storage.k8s.io/v1",), _storage_validator(StorageClass.from_dict), False),
    "CSINode": KindSpec(("storage.k8s.io/v1",), _storage_validator(CSINode.from_dict), False),
    "CSIDriver": KindSpec(("storage.k8s.io/v1",), _storage_validator(CSIDriver.from_dict), False),
    "CSIStorageCapacity": KindSpec(
        ("storage.k8s.io/v1",), _storage_validator(CSIStorageCapacity.from_dict), True
    ),
    "VolumeAttachment": KindSpec(
        ("storage.k8s.io/v1",), _storage_validator(VolumeAttachment.from_dict), False
    ),
    "DeviceClass": KindSpec((RESOURCE_API_VERSION,), _resource_validator(DeviceClass.from_dict), False),
    "ResourceClaim": KindSpec((RESOURCE_API_VERSION,), _resource_validator(ResourceClaim.from_dict), True),
    "ResourceClaimTemplate": KindSpec(
        (RESOURCE_API_VERSION,), _resource_validator(ResourceClaimTemplate.from_dict), True
    ),
    "ResourceSlice": KindSpec((RESOURCE_API_VERSION,), _resource_validator(ResourceSlice.from_dict), False),
    # scheduling.k8s.io's PodGroup is keyed by its store kind, apart from Volcano's (api/kinds.py).
    "Workload": KindSpec(WORKLOAD_API_VERSIONS, _rules_validator(Workload.from_dict, workload_errors), True),
    POD_GROUP_STORE_KIND: KindSpec(
        WORKLOAD_API_VERSIONS, _rules_validator(SchedulingPodGroup.from_dict, pod_group_errors), True
    ),
}


@dataclass(slots=True)
class ManifestObject:
    kind: str
    obj: dict[str, Any]
    source: str
    document: int

    @property
    def ref(self) -> str:
        return object_ref(self.obj)


@dataclass(slots=True)
class LoadResult:
    objects: list[ManifestObject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[ManifestObject]:
        return [o for o in self.objects if o.kind == kind]


def _expand_paths(paths: Sequence[str]) -> Iterator[str]:
    for p in paths:
        if p == "-":
            yield p
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(f for f in path.rglob("*") if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            yield from (str(f) for f in found)
        elif path.is_file():
            yield str(path)
        else:
            raise InputError("no such file or directory", file=p)


def _documents(text: str, source: str) -> list[Any]:
    try:
        return safe_load_all(text)
    except yaml.reader.ReaderError as exc:
        raise InputError(
            f"not valid YAML/JSON (character {exc.position + 1}): {exc.reason}", file=source
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML/JSON{yaml_error_detail(exc)}", file=source) from None
    except RecursionError:
        raise InputError("not valid YAML/JSON: nested too deeply", file=source) from None


def _items(doc: Any, source: str, index: int) -> Iterator[tuple[Mapping[str, Any], str | None]]:
    """Yield (object, field prefix) pairs, expanding List kinds."""
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise InputError(
            f"a manifest must be a mapping, got {type(doc).__name__}", file=source, document=index
        )
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("items must be a list", file=source, document=index, field="items")
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InputError(
                    "each item must be a mapping", file=source, document=index, field=f"items[{i}]"
                )
            yield item, f"items[{i}]"
        return
    yield doc, None


def _check(obj: Mapping[str, Any], source: str, index: int, prefix: str | None, result: LoadResult) -> None:
    kind = obj.get("kind")
    where = {"file": source, "document": index, "obj": object_ref(obj)}
    if not isinstance(kind, str) or not kind:
        why = "missing kind" if kind is None else f"kind must be a non-empty string, got {kind!r}"
        raise InputError(why, **where, field=f"{prefix}.kind" if prefix else "kind")  # type: ignore[arg-type]
    if kind in SHARED_KINDS:
        kind = object_store_kind(obj)
    spec = KINDS.get(kind)
    if spec is None:
        result.warnings.append(
            f"{source}: document {index}: skipping {object_ref(obj)}: kind {kind} is not used"
        )
        return
    api_version = obj.get("apiVersion")
    if api_version not in spec.api_versions:
        raise InputError(
            f"apiVersion {api_version!r} is not supported for {wire_kind(kind)}; use "
            f"{' or '.join(spec.api_versions)}",
            **where,  # type: ignore[arg-type]
            field=f"{prefix}.apiVersion" if prefix else "apiVersion",
        )
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    if namespace is not None and not isinstance(namespace, str):
        raise InputError(
            f"namespace must be a string, got {type(namespace).__name__}",
            **where,  # type: ignore[arg-type]
            field=f"{prefix}.metadata.namespace" if prefix else "metadata.namespace",
        )
    try:
        validate_metadata(obj, wire_kind(kind), spec.namespaced)
        spec.validate(obj)
    except InputError as exc:
        raise exc.located(file=source, document=index, obj=object_ref(obj), field_prefix=prefix) from None
    result.objects.append(ManifestObject(kind, dict(obj), source, index))


@dataclass(frozen=True, slots=True)
class ManifestDocument:
    """One object as read, before any check of its kind: where it came from (``prefix``: the
    ``items[i]`` of a List)."""

    obj: Mapping[str, Any]
    source: str
    document: int
    prefix: str | None


def read_documents(paths: Sequence[str], stdin: TextIO | None = None) -> Iterator[ManifestDocument]:
    """Every object of the files, directories (recursively) or ``-`` given, Lists expanded; a file
    that cannot be read or parsed is an :class:`InputError`."""
    for source in _expand_paths(paths):
        if source == "-":
            label = "<stdin>"
            try:
                text = (stdin or sys.stdin).read()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read: {exc}", file=label) from None
        else:
            try:
                text = Path(source).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read: {exc}", file=source) from None
            label = source
        for index, doc in enumerate(_documents(text, label), start=1):
            for obj, prefix in _items(doc, label, index):
                yield ManifestDocument(obj, label, index, prefix)


def load_manifests(paths: Sequence[str], stdin: TextIO | None = None) -> LoadResult:
    """Read and validate manifests; raises :class:`InputError` on the first bad object."""
    result = LoadResult()
    seen: dict[tuple[str, str, str], str] = {}
    for found in read_documents(paths, stdin):
        label, index = found.source, found.document
        before = len(result.objects)
        _check(found.obj, label, index, found.prefix, result)
        if len(result.objects) == before:
            continue
        added = result.objects[-1]
        meta = added.obj.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if KINDS[added.kind].namespaced else ""
        key = (added.kind, ns, str(meta.get("name")))
        if key in seen:
            raise InputError(
                f"duplicate object, first defined in {seen[key]}",
                file=label,
                document=index,
                obj=added.ref,
            )
        seen[key] = f"{label} document {index}"
    return result
