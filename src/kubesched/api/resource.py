"""Typed views of the ``resource.k8s.io/v1`` kinds Dynamic Resource Allocation reads: DeviceClass,
ResourceClaim, ResourceClaimTemplate and ResourceSlice, and of a pod's ``spec.resourceClaims``.

Each view keeps the stored mapping as ``raw`` (what a writer copies and changes) and parses the
fields the allocator and the scheduler plugin read, failing with an
:class:`~kubesched.errors.InputError` that names the field. Parsing checks shapes and types;
the API server's validation rules (name formats, list limits, one-of fields beyond what parsing
needs) live with the registry. Quantities are exact :class:`~fractions.Fraction` values, as
``resource.Quantity`` compares them.

Requests keep the API's defaults applied (``allocationMode: ExactCount``, ``count: 1``), so a
manifest read before the API server defaulted it means the same as one read after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final, Protocol, TypeAlias

from kubesched.api.fields import INT64_MAX, INT64_MIN, as_int, as_list, as_mapping, as_str_map, object_name
from kubesched.api.quantity import QuantityError, canonical_quantity, parse_quantity
from kubesched.api.selectors import NodeSelector
from kubesched.errors import InputError


class DeviceVersion(str):
    """A device attribute of type "version" (a semantic version), told apart from a plain string.
    Defined here rather than with the CEL environment so that reading pods and slices does not load
    the CEL runtime."""

    __slots__ = ()


DeviceAttributeValue: TypeAlias = bool | int | str | DeviceVersion


#: A ``version`` attribute is a :class:`DeviceVersion` (the CEL module's, which compares it as a
#: semantic version); the views re-export both names.
__all__ = ["DeviceAttributeValue", "DeviceVersion"]

GROUP: Final = "resource.k8s.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

#: Set on claims a built-in controller allocated (the scheduler): removed once deallocated.
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
#: On the special claim the scheduler generates for a pod's extended-resource requests.
EXTENDED_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
#: On template-generated claims: the ``spec.resourceClaims[].name`` of the pod they serve.
POD_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
#: The implicit extended resource name of a class without ``extendedResourceName``: prefix + class.
RESOURCE_DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
#: A namespace labelled with this (value "true") may use ``adminAccess``.
ADMIN_NAMESPACE_LABEL: Final = "resource.kubernetes.io/admin-access"

ALLOCATION_MODE_EXACT_COUNT: Final = "ExactCount"
ALLOCATION_MODE_ALL: Final = "All"
ALLOCATION_MODES: Final[tuple[str, ...]] = (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL)

TAINT_EFFECT_NONE: Final = "None"
TAINT_EFFECT_NO_SCHEDULE: Final = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE: Final = "NoExecute"

TOLERATION_OP_EXISTS: Final = "Exists"
TOLERATION_OP_EQUAL: Final = "Equal"
TOLERATION_OPERATORS: Final[tuple[str, ...]] = (TOLERATION_OP_EXISTS, TOLERATION_OP_EQUAL)

CONFIG_SOURCE_CLASS: Final = "FromClass"
CONFIG_SOURCE_CLAIM: Final = "FromClaim"

#: ``ResourceClaimReservedForMaxSize``: at most this many consumers may reserve one claim.
RESERVED_FOR_MAX_SIZE: Final = 256
#: ``AllocationResultsMaxSize``: at most this many devices in one allocation (and requests per claim).
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
DEVICE_REQUESTS_MAX_SIZE: Final = ALLOCATION_RESULTS_MAX_SIZE
DEVICE_CONSTRAINTS_MAX_SIZE: Final = 32
DEVICE_CONFIG_MAX_SIZE: Final = 32
DEVICE_SELECTORS_MAX_SIZE: Final = 32
FIRST_AVAILABLE_MAX_SIZE: Final = 8
DEVICE_TOLERATIONS_MAX_LENGTH: Final = 16
DEVICE_TAINTS_MAX_LENGTH: Final = 16
BINDING_CONDITIONS_MAX_SIZE: Final = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE: Final = 4
RESOURCE_SLICE_MAX_DEVICES: Final = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: Final = 64
RESOURCE_SLICE_MAX_COUNTER_SETS: Final = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET: Final = 32
RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: Final = 2
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: Final = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: Final = 64
DRIVER_NAME_MAX_LENGTH: Final = 63
POOL_NAME_MAX_LENGTH: Final = 253
#: The runtime cost limit of one CEL selector evaluation and the longest expression.
CEL_SELECTOR_EXPRESSION_MAX_COST: Final = 1_000_000
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH: Final = 10 * 1024


# --------------------------------------------------------------------------- field helpers


def _str(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key)
    path = f"{where}.{key}" if where else key
    if value is None or value == "":
        if required:
            raise InputError("Required value", field=path)
        return ""
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", field=path)
    return value


def _opt_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    """A string pointer field: None when absent."""
    if data.get(key) is None:
        return None
    return _str(data, key, where)


def _bool(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InputError(f"must be true or false, got {value!r}", field=f"{where}.{key}" if where else key)
    return value


def _str_list(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    path = f"{where}.{key}" if where else key
    out: list[str] = []
    for i, value in enumerate(as_list(data.get(key), path)):
        if not isinstance(value, str):
            raise InputError(f"must be a string, got {type(value).__name__}", field=f"{path}[{i}]")
        out.append(value)
    return tuple(out)


def quantity(value: Any, where: str) -> Fraction:
    """A ``resource.Quantity`` field as its exact value."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(f"must be a quantity, got {value!r}", field=where)
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise InputError(str(exc), field=where) from None


def _quantity_map(data: Any, where: str) -> dict[str, Fraction]:
    return {str(k): quantity(v, f"{where}.{k}") for k, v in as_mapping(data, where).items()}


def _node_selector(data: Mapping[str, Any], key: str, where: str) -> NodeSelector | None:
    raw = data.get(key)
    if raw is None:
        return None
    path = f"{where}.{key}"
    return NodeSelector.from_dict(as_mapping(raw, path), path)


def _namespace(meta: Mapping[str, Any]) -> str:
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise InputError("namespace must be a string", field="metadata.namespace")
    return namespace


def _selectors(data: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """``selectors``: only CEL selectors exist; each is its expression."""
    path = f"{where}.selectors" if where else "selectors"
    out: list[str] = []
    for i, raw in enumerate(as_list(data.get("selectors"), path)):
        item = as_mapping(raw, f"{path}[{i}]")
        cel = item.get("cel")
        if cel is None:
            raise InputError("exactly one of `cel` is required", field=f"{path}[{i}]")
        out.append(_str(as_mapping(cel, f"{path}[{i}].cel"), "expression", f"{path}[{i}].cel", required=True))
    return tuple(out)


def _configs(data: Mapping[str, Any], where: str) -> tuple[Mapping[str, Any], ...]:
    path = f"{where}.config" if where else "config"
    return tuple(as_mapping(c, f"{path}[{i}]") for i, c in enumerate(as_list(data.get("config"), path)))


# --------------------------------------------------------------------------- taints and tolerations


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str
    time_added: str = ""

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceTaint:
        taint = as_mapping(data, where)
        return cls(
            key=_str(taint, "key", where, required=True),
            value=_str(taint, "value", where),
            effect=_str(taint, "effect", where, required=True),
            time_added=str(taint.get("timeAdded") or ""),
        )

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = TOLERATION_OP_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """``resourceclaim.ToleratesTaint``: an empty effect or key matches every one; ``Exists``
        ignores the value, ``Equal`` compares it."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == TOLERATION_OP_EXISTS:
            return True
        if self.operator in ("", TOLERATION_OP_EQUAL):
            return self.value == taint.value
        return False

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceToleration:
        tol = as_mapping(data, where)
        seconds = tol.get("tolerationSeconds")
        return cls(
            key=_str(tol, "key", where),
            operator=_str(tol, "operator", where) or TOLERATION_OP_EQUAL,
            value=_str(tol, "value", where),
            effect=_str(tol, "effect", where),
            toleration_seconds=(
                None
                if seconds is None
                else as_int(seconds, f"{where}.tolerationSeconds", minimum=INT64_MIN, maximum=INT64_MAX)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key:
            out["key"] = self.key
        out["operator"] = self.operator
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


def _tolerations(data: Mapping[str, Any], where: str) -> tuple[DeviceToleration, ...]:
    path = f"{where}.tolerations"
    raw = as_list(data.get("tolerations"), path)
    return tuple(DeviceToleration.from_dict(t, f"{path}[{i}]") for i, t in enumerate(raw)) if raw else ()


# --------------------------------------------------------------------------- DeviceClass


@dataclass(slots=True, eq=False)
class DeviceClass:
    name: str
    uid: str
    #: CEL expressions every device allocated through the class must satisfy.
    selectors: tuple[str, ...]
    #: ``spec.config`` entries (each an ``opaque`` configuration), as stored.
    config: tuple[Mapping[str, Any], ...]
    #: ``spec.extendedResourceName``; None when unset.
    extended_resource_name: str | None
    creation_timestamp: str
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion") or "")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DeviceClass:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        return cls(
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            selectors=_selectors(spec, "spec"),
            config=_configs(spec, "spec"),
            extended_resource_name=_opt_str(spec, "extendedResourceName", "spec"),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            raw=obj,
        )


# --------------------------------------------------------------------------- claims


@dataclass(frozen=True, slots=True)
class ExactDeviceRequest:
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    #: ``adminAccess``; None when unset (asking with ``false`` still needs the feature, as upstream).
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    #: ``capacity.requests``: capacity name (as written) → requested amount; None when unset.
    capacity_requests: Mapping[str, Fraction] | None = None


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """One entry of ``firstAvailable``. It has no ``adminAccess`` in the API; the field is here
    (always False) so the allocator reads both kinds alike."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: Mapping[str, Fraction] | None = None
    admin_access: bool = False


def _request_fields(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    mode = _str(data, "allocationMode", where) or ALLOCATION_MODE_EXACT_COUNT
    count_raw = data.get("count")
    count = (
        0 if count_raw is None else as_int(count_raw, f"{where}.count", minimum=INT64_MIN, maximum=INT64_MAX)
    )
    if mode == ALLOCATION_MODE_EXACT_COUNT and count == 0:
        count = 1
    capacity = data.get("capacity")
    capacity_requests: Mapping[str, Fraction] | None = None
    if capacity is not None:
        cap = as_mapping(capacity, f"{where}.capacity")
        if cap.get("requests") is not None:
            capacity_requests = _quantity_map(cap.get("requests"), f"{where}.capacity.requests")
    return {
        "device_class_name": _str(data, "deviceClassName", where),
        "selectors": _selectors(data, where),
        "allocation_mode": mode,
        "count": count,
        "tolerations": _tolerations(data, where),
        "capacity_requests": capacity_requests,
    }


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceRequest:
        req = as_mapping(data, where)
        name = _str(req, "name", where, required=True)
        exactly = None
        if req.get("exactly") is not None:
            path = f"{where}.exactly"
            raw = as_mapping(req["exactly"], path)
            exactly = ExactDeviceRequest(
                admin_access=_bool(raw, "adminAccess", path) if raw.get("adminAccess") is not None else None,
                **_request_fields(raw, path),
            )
        subs: list[DeviceSubRequest] = []
        path = f"{where}.firstAvailable"
        for i, raw_sub in enumerate(as_list(req.get("firstAvailable"), path)):
            sub_path = f"{path}[{i}]"
            sub = as_mapping(raw_sub, sub_path)
            subs.append(
                DeviceSubRequest(
                    name=_str(sub, "name", sub_path, required=True), **_request_fields(sub, sub_path)
                )
            )
        if exactly is None and not subs:
            raise InputError("exactly one of `exactly` or `firstAvailable` is required", field=where)
        if exactly is not None and subs:
            raise InputError(
                "exactly one of `exactly` or `firstAvailable` is required, not both", field=where
            )
        return cls(name, exactly, tuple(subs))


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    #: The requests (``req`` or ``req/sub``) it applies to; empty means all of the claim's.
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceConstraint:
        c = as_mapping(data, where)
        return cls(
            requests=_str_list(c, "requests", where),
            match_attribute=_opt_str(c, "matchAttribute", where),
            distinct_attribute=_opt_str(c, "distinctAttribute", where),
        )


@dataclass(frozen=True, slots=True)
class DeviceClaim:
    """``spec.devices`` of a claim (or of a template's claim spec)."""

    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], where: str) -> DeviceClaim:
        path = f"{where}.devices"
        devices = as_mapping(spec.get("devices"), path)
        requests = tuple(
            DeviceRequest.from_dict(r, f"{path}.requests[{i}]")
            for i, r in enumerate(as_list(devices.get("requests"), f"{path}.requests"))
        )
        constraints = tuple(
            DeviceConstraint.from_dict(c, f"{path}.constraints[{i}]")
            for i, c in enumerate(as_list(devices.get("constraints"), f"{path}.constraints"))
        )
        return cls(requests, constraints, _configs(devices, path))


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    """``ResourceClaimConsumerReference``: who may use a claim (usually a pod)."""

    resource: str
    name: str
    uid: str
    api_group: str = ""

    @classmethod
    def from_dict(cls, data: Any, where: str) -> ConsumerRef:
        ref = as_mapping(data, where)
        return cls(
            resource=_str(ref, "resource", where),
            name=_str(ref, "name", where),
            uid=_str(ref, "uid", where),
            api_group=_str(ref, "apiGroup", where),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resource": self.resource, "name": self.name, "uid": self.uid}
        if self.api_group:
            out = {"apiGroup": self.api_group, **out}
        return out


@dataclass(frozen=True, slots=True)
class DeviceRequestAllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    #: Capacity name → consumed amount; only for devices that allow multiple allocations.
    consumed_capacity: Mapping[str, Fraction] | None = None
    share_id: str | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceRequestAllocationResult:
        r = as_mapping(data, where)
        consumed = r.get("consumedCapacity")
        share_id = r.get("shareID")
        return cls(
            request=_str(r, "request", where),
            driver=_str(r, "driver", where),
            pool=_str(r, "pool", where),
            device=_str(r, "device", where),
            admin_access=_bool(r, "adminAccess", where),
            tolerations=_tolerations(r, where),
            consumed_capacity=None
            if consumed is None
            else _quantity_map(consumed, f"{where}.consumedCapacity"),
            share_id=None if share_id is None else _str(r, "shareID", where),
            binding_conditions=_str_list(r, "bindingConditions", where),
            binding_failure_conditions=_str_list(r, "bindingFailureConditions", where),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }
        if self.admin_access:
            out["adminAccess"] = True
        if self.tolerations:
            out["tolerations"] = [t.to_dict() for t in self.tolerations]
        if self.binding_conditions:
            out["bindingConditions"] = list(self.binding_conditions)
        if self.binding_failure_conditions:
            out["bindingFailureConditions"] = list(self.binding_failure_conditions)
        if self.share_id is not None:
            out["shareID"] = self.share_id
        if self.consumed_capacity is not None:
            out["consumedCapacity"] = {
                k: canonical_quantity(_fraction_text(v)) for k, v in self.consumed_capacity.items()
            }
        return out


def _fraction_text(value: Fraction) -> str:
    """A quantity's exact value as quantity text (nano units at the finest, as quantities are)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{round(value * 10**9)}n"


@dataclass(frozen=True, slots=True)
class AllocationResult:
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    #: ``devices.config`` entries (``source`` FromClass/FromClaim, ``requests``, ``opaque``).
    config: tuple[Mapping[str, Any], ...] = ()
    #: ``nodeSelector`` as stored (a ``v1.NodeSelector`` mapping); None: usable on every node.
    node_selector: Mapping[str, Any] | None = None
    allocation_timestamp: str = ""

    @classmethod
    def from_dict(cls, data: Any, where: str) -> AllocationResult:
        a = as_mapping(data, where)
        devices = as_mapping(a.get("devices"), f"{where}.devices")
        results = tuple(
            DeviceRequestAllocationResult.from_dict(r, f"{where}.devices.results[{i}]")
            for i, r in enumerate(as_list(devices.get("results"), f"{where}.devices.results"))
        )
        node_selector = a.get("nodeSelector")
        if node_selector is not None:
            # Parsed once here so a malformed selector is a located error, not a later surprise.
            NodeSelector.from_dict(
                as_mapping(node_selector, f"{where}.nodeSelector"), f"{where}.nodeSelector"
            )
        return cls(
            results=results,
            config=_configs(devices, f"{where}.devices"),
            node_selector=node_selector,
            allocation_timestamp=str(a.get("allocationTimestamp") or ""),
        )

    @property
    def parsed_node_selector(self) -> NodeSelector | None:
        if self.node_selector is None:
            return None
        return NodeSelector.from_dict(self.node_selector, "nodeSelector")

    def to_dict(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"results": [r.to_dict() for r in self.results]}
        if self.config:
            devices["config"] = [dict(c) for c in self.config]
        out: dict[str, Any] = {"devices": devices}
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        if self.allocation_timestamp:
            out["allocationTimestamp"] = self.allocation_timestamp
        return out


@dataclass(slots=True, eq=False)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...]
    #: ``spec.devices.config`` entries, as stored.
    config: tuple[Mapping[str, Any], ...]
    allocation: AllocationResult | None
    reserved_for: tuple[ConsumerRef, ...]
    #: ``metadata.deletionTimestamp`` is set.
    deleting: bool
    annotations: dict[str, str]
    finalizers: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion") or "")

    @property
    def owner_references(self) -> list[Mapping[str, Any]]:
        refs = (self.raw.get("metadata") or {}).get("ownerReferences") or []
        return [r for r in refs if isinstance(r, Mapping)]

    @property
    def devices_status(self) -> list[Mapping[str, Any]]:
        """``status.devices`` (per-device conditions a driver reports), as stored."""
        devices = (self.raw.get("status") or {}).get("devices") or []
        return [d for d in devices if isinstance(d, Mapping)]

    def reserved_for_uid(self, uid: str) -> bool:
        return any(ref.uid == uid for ref in self.reserved_for)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ResourceClaim:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        devices = DeviceClaim.from_spec(spec, "spec")
        allocation = status.get("allocation")
        return cls(
            namespace=_namespace(meta),
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            requests=devices.requests,
            constraints=devices.constraints,
            config=devices.config,
            allocation=None
            if allocation is None
            else AllocationResult.from_dict(allocation, "status.allocation"),
            reserved_for=tuple(
                ConsumerRef.from_dict(r, f"status.reservedFor[{i}]")
                for i, r in enumerate(as_list(status.get("reservedFor"), "status.reservedFor"))
            ),
            deleting=bool(meta.get("deletionTimestamp")),
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            finalizers=_str_list(meta, "finalizers", "metadata"),
            raw=obj,
        )


@dataclass(slots=True, eq=False)
class ResourceClaimTemplate:
    namespace: str
    name: str
    uid: str
    #: ``spec.metadata``: labels and annotations copied into generated claims.
    claim_metadata: Mapping[str, Any]
    #: ``spec.spec``: the ResourceClaimSpec every generated claim gets, as stored.
    spec: Mapping[str, Any]
    devices: DeviceClaim
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ResourceClaimTemplate:
        meta = as_mapping(obj.get("metadata"), "metadata")
        outer = as_mapping(obj.get("spec"), "spec")
        spec = as_mapping(outer.get("spec"), "spec.spec")
        return cls(
            namespace=_namespace(meta),
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            claim_metadata=as_mapping(outer.get("metadata"), "spec.metadata"),
            spec=spec,
            devices=DeviceClaim.from_spec(spec, "spec.spec"),
            raw=obj,
        )


# --------------------------------------------------------------------------- ResourceSlice


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicyRange:
    min: Fraction
    max: Fraction | None = None
    step: Fraction | None = None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str) -> CapacityRequestPolicy:
        p = as_mapping(data, where)
        default = p.get("default")
        valid_range = None
        if p.get("validRange") is not None:
            rpath = f"{where}.validRange"
            r = as_mapping(p["validRange"], rpath)
            if r.get("min") is None:
                raise InputError("Required value", field=f"{rpath}.min")
            valid_range = CapacityRequestPolicyRange(
                min=quantity(r["min"], f"{rpath}.min"),
                max=None if r.get("max") is None else quantity(r["max"], f"{rpath}.max"),
                step=None if r.get("step") is None else quantity(r["step"], f"{rpath}.step"),
            )
        return cls(
            default=None if default is None else quantity(default, f"{where}.default"),
            valid_values=tuple(
                quantity(v, f"{where}.validValues[{i}]")
                for i, v in enumerate(as_list(p.get("validValues"), f"{where}.validValues"))
            ),
            valid_range=valid_range,
        )


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Fraction
    request_policy: CapacityRequestPolicy | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceCapacity:
        c = as_mapping(data, where)
        if c.get("value") is None:
            raise InputError("Required value", field=f"{where}.value")
        policy = c.get("requestPolicy")
        return cls(
            value=quantity(c["value"], f"{where}.value"),
            request_policy=None
            if policy is None
            else CapacityRequestPolicy.from_dict(policy, f"{where}.requestPolicy"),
        )


def _counters(data: Any, where: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, counter in as_mapping(data, where).items():
        c = as_mapping(counter, f"{where}.{name}")
        if c.get("value") is None:
            raise InputError("Required value", field=f"{where}.{name}.value")
        out[str(name)] = quantity(c["value"], f"{where}.{name}.value")
    return out


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Fraction]

    @classmethod
    def from_dict(cls, data: Any, where: str) -> CounterSet:
        c = as_mapping(data, where)
        return cls(_str(c, "name", where, required=True), _counters(c.get("counters"), f"{where}.counters"))


@dataclass(frozen=True, slots=True)
class DeviceCounterConsumption:
    counter_set: str
    counters: Mapping[str, Fraction]
    compatibility_groups: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Any, where: str) -> DeviceCounterConsumption:
        c = as_mapping(data, where)
        return cls(
            _str(c, "counterSet", where, required=True),
            _counters(c.get("counters"), f"{where}.counters"),
            _str_list(c, "compatibilityGroups", where),
        )


_ATTRIBUTE_KINDS: Final = ("int", "bool", "string", "version")


def _attribute(data: Any, where: str) -> DeviceAttributeValue:
    a = as_mapping(data, where)
    present = [k for k in _ATTRIBUTE_KINDS if a.get(k) is not None]
    if len(present) != 1:
        raise InputError("exactly one value must be specified (int, bool, string or version)", field=where)
    kind = present[0]
    value = a[kind]
    if kind == "int":
        return as_int(value, f"{where}.int", minimum=INT64_MIN, maximum=INT64_MAX)
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError(f"must be true or false, got {value!r}", field=f"{where}.bool")
        return value
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", field=f"{where}.{kind}")
    return DeviceVersion(value) if kind == "version" else value


@dataclass(frozen=True, slots=True, eq=False)
class Device:
    name: str
    #: Attribute name as written (``model`` in the driver's domain, or ``example.com/model``) → value.
    attributes: Mapping[str, DeviceAttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    #: Per-device node selection (only with the slice's ``perDeviceNodeSelection``); "" when unset.
    node_name: str = ""
    node_selector: NodeSelector | None = None
    node_selector_raw: Mapping[str, Any] | None = field(default=None, repr=False)
    all_nodes: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool = False

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Device:
        d = as_mapping(data, where)
        apath = f"{where}.attributes"
        cpath = f"{where}.capacity"
        tpath = f"{where}.taints"
        kpath = f"{where}.consumesCounters"
        raw_selector = d.get("nodeSelector")
        return cls(
            name=_str(d, "name", where, required=True),
            attributes={
                str(k): _attribute(v, f"{apath}.{k}")
                for k, v in as_mapping(d.get("attributes"), apath).items()
            },
            capacity={
                str(k): DeviceCapacity.from_dict(v, f"{cpath}.{k}")
                for k, v in as_mapping(d.get("capacity"), cpath).items()
            },
            consumes_counters=tuple(
                DeviceCounterConsumption.from_dict(c, f"{kpath}[{i}]")
                for i, c in enumerate(as_list(d.get("consumesCounters"), kpath))
            ),
            node_name=_str(d, "nodeName", where),
            node_selector=_node_selector(d, "nodeSelector", where),
            node_selector_raw=None
            if raw_selector is None
            else as_mapping(raw_selector, f"{where}.nodeSelector"),
            all_nodes=_bool(d, "allNodes", where),
            taints=tuple(
                DeviceTaint.from_dict(t, f"{tpath}[{i}]")
                for i, t in enumerate(as_list(d.get("taints"), tpath))
            ),
            binds_to_node=_bool(d, "bindsToNode", where),
            binding_conditions=_str_list(d, "bindingConditions", where),
            binding_failure_conditions=_str_list(d, "bindingFailureConditions", where),
            allow_multiple_allocations=_bool(d, "allowMultipleAllocations", where),
        )


@dataclass(frozen=True, slots=True)
class ResourcePool:
    name: str
    generation: int
    resource_slice_count: int


@dataclass(slots=True, eq=False)
class ResourceSlice:
    name: str
    uid: str
    driver: str
    pool: ResourcePool
    #: Node-local pool: the node's name; "" when the slice uses another node selection.
    node_name: str
    node_selector: NodeSelector | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: tuple[Device, ...]
    shared_counters: tuple[CounterSet, ...]
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion") or "")

    @property
    def node_selector_raw(self) -> Mapping[str, Any] | None:
        selector = (self.raw.get("spec") or {}).get("nodeSelector")
        return selector if isinstance(selector, Mapping) else None

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ResourceSlice:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        pool = as_mapping(spec.get("pool"), "spec.pool")
        dpath = "spec.devices"
        spath = "spec.sharedCounters"
        return cls(
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            driver=_str(spec, "driver", "spec", required=True),
            pool=ResourcePool(
                name=_str(pool, "name", "spec.pool", required=True),
                generation=as_int(
                    pool.get("generation", 0) or 0,
                    "spec.pool.generation",
                    minimum=INT64_MIN,
                    maximum=INT64_MAX,
                ),
                resource_slice_count=as_int(
                    pool.get("resourceSliceCount", 0) or 0,
                    "spec.pool.resourceSliceCount",
                    minimum=INT64_MIN,
                    maximum=INT64_MAX,
                ),
            ),
            node_name=_str(spec, "nodeName", "spec"),
            node_selector=_node_selector(spec, "nodeSelector", "spec"),
            all_nodes=_bool(spec, "allNodes", "spec"),
            per_device_node_selection=_bool(spec, "perDeviceNodeSelection", "spec"),
            devices=tuple(
                Device.from_dict(d, f"{dpath}[{i}]")
                for i, d in enumerate(as_list(spec.get("devices"), dpath))
            ),
            shared_counters=tuple(
                CounterSet.from_dict(c, f"{spath}[{i}]")
                for i, c in enumerate(as_list(spec.get("sharedCounters"), spath))
            ),
            raw=obj,
        )


# --------------------------------------------------------------------------- pods


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One ``spec.resourceClaims`` entry: a claim by name, or a template to generate one from."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


def pod_resource_claims(spec: Mapping[str, Any]) -> tuple[PodResourceClaim, ...]:
    """Parse ``spec.resourceClaims``; exactly one of the two sources must be set in each."""
    out: list[PodResourceClaim] = []
    for i, raw in enumerate(as_list(spec.get("resourceClaims"), "spec.resourceClaims")):
        where = f"spec.resourceClaims[{i}]"
        c = as_mapping(raw, where)
        name = _str(c, "name", where, required=True)
        claim = _opt_str(c, "resourceClaimName", where) or None
        template = _opt_str(c, "resourceClaimTemplateName", where) or None
        if (claim is None) == (template is None):
            raise InputError(
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`", field=where
            )
        out.append(PodResourceClaim(name, claim, template))
    return tuple(out)


def pod_claim_statuses(status: Mapping[str, Any]) -> dict[str, str | None]:
    """``status.resourceClaimStatuses``: pod claim name → generated claim name (None: no claim was
    needed for that entry)."""
    out: dict[str, str | None] = {}
    path = "status.resourceClaimStatuses"
    for i, raw in enumerate(as_list(status.get("resourceClaimStatuses"), path)):
        where = f"{path}[{i}]"
        s = as_mapping(raw, where)
        out[_str(s, "name", where, required=True)] = _opt_str(s, "resourceClaimName", where) or None
    return out


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """Upstream ``resourceclaim.Name``'s answer for one pod claim entry."""

    #: The claim's name; None when there is none to use (see ``generated``).
    name: str | None
    #: The claim came from a template: it must be owned by the pod to be used.
    must_check_owner: bool
    #: False when the template's claim has not been generated yet (the pod must wait).
    generated: bool = True


class PodWithClaims(Protocol):
    """What the claim helpers read of a pod (:class:`kubesched.api.objects.Pod` is one)."""

    @property
    def claim_statuses(self) -> Mapping[str, str | None]: ...


def pod_claim_ref(pod: PodWithClaims, pod_claim: PodResourceClaim) -> PodClaimRef:
    if pod_claim.resource_claim_name is not None:
        return PodClaimRef(pod_claim.resource_claim_name, must_check_owner=False)
    statuses = pod.claim_statuses
    if pod_claim.name in statuses:
        # A recorded status without a name means no claim was needed for this entry.
        return PodClaimRef(statuses[pod_claim.name], must_check_owner=True)
    return PodClaimRef(None, must_check_owner=True, generated=False)


def pod_claim_name(pod: PodWithClaims, pod_claim: PodResourceClaim) -> str | None:
    """The name of the claim a pod claim entry stands for: the named claim, or the one generated
    from the template (``status.resourceClaimStatuses``); None when not generated (yet)."""
    return pod_claim_ref(pod, pod_claim).name
