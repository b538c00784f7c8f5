"""What kube-apiserver does to the ``resource.k8s.io/v1`` kinds before it stores them: the defaults
of ``pkg/apis/resource/v1`` (``defaults.go`` and the types' ``+default`` tags) and the rules of
``pkg/apis/resource/validation``, for create, update and a ResourceClaim's status.

``serve`` answers a broken rule with a 422 naming every field (``registry/resource/``),
``simulate`` stops at the first with a located error (``api/manifests.py``); both read the rules
from here. Each rule gives a :data:`Cause` as upstream's ``field.Error`` words it: its type, its
field path (``spec.devices.requests[0].exactly.count``, map keys in brackets:
``spec.devices[0].attributes[model]``) and its text.

The fields are those of v1.35: list-typed attributes, derived attributes and the other fields of
later alpha features are not read. The rules read defensively: a field of the wrong JSON type is
left to the typed views of :mod:`kubesched.api.resource`, which refuse it with their own message.
Every rule reads the object with the API's defaults applied (an absent ``allocationMode`` is
``ExactCount``), so the rules hold whether or not the defaults ran first.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubesched.api.dra_cel import CEL_SELECTOR_MAX_COST, CELError, compile_selector
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    BINDING_CONDITIONS_MAX_SIZE,
    BINDING_FAILURE_CONDITIONS_MAX_SIZE,
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_CONSTRAINTS_MAX_SIZE,
    DEVICE_REQUESTS_MAX_SIZE,
    DEVICE_SELECTORS_MAX_SIZE,
    DEVICE_TAINTS_MAX_LENGTH,
    DRIVER_NAME_MAX_LENGTH,
    FIRST_AVAILABLE_MAX_SIZE,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    POOL_NAME_MAX_LENGTH,
    RESERVED_FOR_MAX_SIZE,
    RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    RESOURCE_SLICE_MAX_COUNTER_SETS,
    RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
    RESOURCE_SLICE_MAX_DEVICES,
    RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES,
    TOLERATION_OP_EQUAL,
    TOLERATION_OP_EXISTS,
)
from kubesched.errors import InputError

#: One broken rule: (reason, field path, message), the reason as a ``Status`` cause names it.
Cause = tuple[str, str, str]

#: ``DeviceMaxIDLength``: the name part of a qualified attribute or capacity name.
DEVICE_MAX_ID_LENGTH: Final = 32
#: ``DeviceMaxDomainLength``: its domain.
DEVICE_MAX_DOMAIN_LENGTH: Final = 63
#: Map keys longer than this are shortened in the middle in field paths (upstream
#: ``truncateIfTooLong`` with the longest valid qualified name).
_MAX_QUALIFIED_KEY: Final = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
_DNS1123_LABEL_MAX: Final = 63

_TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")
_TOLERATION_OPERATORS: Final = (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS)
_ALLOCATION_MODES: Final = (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT)
_CONFIG_SOURCES: Final = (CONFIG_SOURCE_CLAIM, CONFIG_SOURCE_CLASS)

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = "(" + _QUALIFIED_NAME_FMT + ")?"
_C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
_DNS1123_LABEL: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME: Final = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE: Final = re.compile(_LABEL_VALUE_FMT)
_C_IDENTIFIER: Final = re.compile(_C_IDENTIFIER_FMT)
_NUMERIC: Final = r"(0|[1-9]\d*)"
_PRE_RELEASE: Final = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD: Final = r"[0-9a-zA-Z-]+"
_SEMVER: Final = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRE_RELEASE}(\.{_PRE_RELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?"
)
_REQUEST_REF_MESSAGE: Final = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
_NODE_SELECTION: Final = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
_DEVICE_NODE_SELECTION: Final = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
    "is set to true in the ResourceSlice spec"
)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` (examples joined as it joins them, two spaces included)."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


_LABEL_MESSAGE: Final = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
_SUBDOMAIN_MESSAGE: Final = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_MESSAGE: Final = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    _QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
_LABEL_VALUE_MESSAGE: Final = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)
_C_IDENTIFIER_MESSAGE: Final = _regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'",
    _C_IDENTIFIER_FMT,
    "my_name",
    "MY_NAME",
    "MyName",
)


# -- how upstream words a broken rule ------------------------------------------------------------
def go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, numbers and booleans bare, a nil
    value as ``"null"``; structures as JSON (upstream prints Go's own syntax)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def required(path: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", path, f"Required value: {detail}" if detail else "Required value")


def invalid(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueInvalid", path, f"Invalid value: {go_value(value)}: {detail}")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return (
        "FieldValueNotSupported",
        path,
        f"Unsupported value: {go_value(value)}: supported values: {listed}",
    )


def forbidden(path: str, detail: str) -> Cause:
    return ("FieldValueForbidden", path, f"Forbidden: {detail}")


def duplicate(path: str, value: Any) -> Cause:
    return ("FieldValueDuplicate", path, f"Duplicate value: {go_value(value)}")


def too_long(path: str, limit: int) -> Cause:
    return ("FieldValueTooLong", path, f"Too long: may not be more than {limit} bytes")


def too_many(path: str, actual: int, limit: int) -> Cause:
    items = "item" if limit == 1 else "items"
    return ("FieldValueTooMany", path, f"Too many: {actual}: must have at most {limit} {items}")


def immutable(path: str, value: Any) -> Cause:
    return invalid(path, value, "field is immutable")


def first_error(causes: list[Cause]) -> InputError | None:
    """The first broken rule as a located :class:`InputError` (what ``simulate`` reports)."""
    if not causes:
        return None
    _, path, message = causes[0]
    return InputError(message, field=path or None)


# -- apimachinery's name checks ------------------------------------------------------------------
def dns1123_label_errors(value: str) -> list[str]:
    out = []
    if len(value) > _DNS1123_LABEL_MAX:
        out.append(f"must be no more than {_DNS1123_LABEL_MAX} characters")
    if not _DNS1123_LABEL.fullmatch(value):
        out.append(_LABEL_MESSAGE)
    return out


def dns1123_subdomain_errors(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        out.append(_SUBDOMAIN_MESSAGE)
    return out


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` (label keys, taint keys)."""
    out: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            out += [f"prefix part {msg}" for msg in dns1123_subdomain_errors(prefix)]
    else:
        return [
            f"a qualified name {_QUALIFIED_MESSAGE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        out.append(f"name part {_QUALIFIED_MESSAGE}")
    return out


def label_value_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        out.append(_LABEL_VALUE_MESSAGE)
    return out


def _each(path: str, value: str, messages: list[str]) -> list[Cause]:
    return [invalid(path, value, msg) for msg in messages]


def _label_name(path: str, value: str) -> list[Cause]:
    """``ValidateLabelName``."""
    return _each(path, value, qualified_name_errors(value))


def _dns_label(path: str, value: str) -> list[Cause]:
    """``ValidateDNS1123Label``: device, request and counter names."""
    return _each(path, value, dns1123_label_errors(value))


def driver_name_errors(path: str, name: str) -> list[Cause]:
    """``ValidateCSIDriverName``, which DRA driver names share: required, at most 63 bytes, a DNS
    subdomain in lower case."""
    out = []
    if not name:
        out.append(required(path))
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        out.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    out += _each(path, name, dns1123_subdomain_errors(name.lower()))
    return out


def _pool_name(path: str, name: str) -> list[Cause]:
    if not name:
        return [required(path)]
    out = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        out.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        out += _each(path, part, dns1123_subdomain_errors(part))
    return out


def _c_identifier(path: str, value: str) -> list[Cause]:
    out = []
    if len(value) > DEVICE_MAX_ID_LENGTH:
        out.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.fullmatch(value):
        out.append(invalid(path, value, _C_IDENTIFIER_MESSAGE))
    return out


def qualified_attribute_errors(path: str, name: str) -> list[Cause]:
    """``validateQualifiedName``: an attribute or capacity name, a C identifier with an optional
    domain (a driver name) before one slash."""
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(path, parts[0])
    if len(parts) > 2:
        return [invalid(path, name, "must not contain more than one slash")]
    domain, ident = parts
    out = (
        [invalid(path, "", "the domain must not be empty")]
        if not domain
        else driver_name_errors(path, domain)
    )
    out += [invalid(path, "", "the name must not be empty")] if not ident else _c_identifier(path, ident)
    return out


def fully_qualified_attribute_errors(path: str, name: str) -> list[Cause]:
    """``validateFullyQualifiedName``: a qualified name that has its domain."""
    out = qualified_attribute_errors(path, name)
    if "/" not in name:
        out.append(
            invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")
        )
    return out


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: not native (a domain other than ``kubernetes.io``),
    not a quota name, and still a qualified name with ``requests.`` in front."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


# -- reading fields defensively ------------------------------------------------------------------
def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    """A string field; "" when absent (or of another type: the typed view refuses that)."""
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _truncated(key: str, limit: int) -> str:
    """Upstream ``truncateIfTooLong``: a long map key shown with its middle left out."""
    limit = max(limit, 16)
    if len(key) <= limit:
        return key
    remaining = limit - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


def _too_many(items: list[Any], limit: int, path: str) -> list[Cause]:
    """The size check of ``validateSlice`` / ``validateSet``: past the limit nothing else is
    checked (upstream's guard against huge lists)."""
    return [too_many(path, len(items), limit)] if limit >= 0 and len(items) > limit else []


def _duplicates(keys: Iterable[Any], path: str) -> list[Cause]:
    """The uniqueness check of ``validateSet``: a repeated key is named at its index."""
    seen: set[Any] = set()
    out = []
    for i, key in enumerate(keys):
        if key in seen:
            out.append(duplicate(f"{path}[{i}]", key))
        else:
            seen.add(key)
    return out


# -- defaults ------------------------------------------------------------------------------------
def _default_request(request: dict[str, Any]) -> None:
    """``SetDefaults_ExactDeviceRequest`` / ``SetDefaults_DeviceSubRequest``, and the tolerations'
    ``operator: Equal``."""
    if not request.get("allocationMode"):
        request["allocationMode"] = ALLOCATION_MODE_EXACT_COUNT
    if request["allocationMode"] == ALLOCATION_MODE_EXACT_COUNT and not request.get("count"):
        request["count"] = 1
    _default_tolerations(request)


def _default_tolerations(owner: dict[str, Any]) -> None:
    for toleration in _l(owner.get("tolerations")):
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = TOLERATION_OP_EQUAL


def _default_device_claim(spec: Any) -> None:
    devices = _m(spec).get("devices")
    for request in _l(devices.get("requests") if isinstance(devices, Mapping) else None):
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in _l(request.get("firstAvailable")):
            if isinstance(sub, dict):
                _default_request(sub)


def default_resource_claim(obj: dict[str, Any]) -> None:
    _default_device_claim(obj.get("spec"))
    allocation = _m(_m(obj.get("status")).get("allocation"))
    for result in _l(_m(allocation.get("devices")).get("results")):
        if isinstance(result, dict):
            _default_tolerations(result)


def default_resource_claim_template(obj: dict[str, Any]) -> None:
    _default_device_claim(_m(obj.get("spec")).get("spec"))


def default_resource_slice(obj: dict[str, Any]) -> None:
    """``SetDefaults_DeviceTaint``: a taint without ``timeAdded`` gets now, in whole seconds."""
    now: str | None = None
    for device in _l(_m(obj.get("spec")).get("devices")):
        for taint in _l(device.get("taints") if isinstance(device, Mapping) else None):
            if isinstance(taint, dict) and not taint.get("timeAdded"):
                now = now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                taint["timeAdded"] = now


def _defaulted(obj: Mapping[str, Any], default: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(dict(obj))
    default(copied)
    return copied


# -- node selectors (pkg/apis/core/validation) ---------------------------------------------------
def node_selector_causes(selector: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateNodeSelector`` without empty terms."""
    terms_path = f"{path}.nodeSelectorTerms"
    terms = _l(selector.get("nodeSelectorTerms"))
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    out: list[Cause] = []
    for i, raw in enumerate(terms):
        term, where = _m(raw), f"{terms_path}[{i}]"
        expressions, fields = _l(term.get("matchExpressions")), _l(term.get("matchFields"))
        if not expressions and not fields:
            out.append(required(where, "must have at least one node selector requirement"))
            continue
        for j, req in enumerate(expressions):
            out += _node_requirement(_m(req), f"{where}.matchExpressions[{j}]")
        for j, req in enumerate(fields):
            out += _node_field_requirement(_m(req), f"{where}.matchFields[{j}]")
    return out


def _node_requirement(req: Mapping[str, Any], path: str) -> list[Cause]:
    operator, values = _s(req.get("operator")), _l(req.get("values"))
    out: list[Cause] = []
    if operator in ("In", "NotIn"):
        if not values:
            out.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            out.append(
                forbidden(
                    f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            out.append(
                required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
            )
    else:
        out.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    return out + _label_name(f"{path}.key", _s(req.get("key")))


def _node_field_requirement(req: Mapping[str, Any], path: str) -> list[Cause]:
    operator, values = _s(req.get("operator")), _l(req.get("values"))
    out: list[Cause] = []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            out.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        out.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    key = _s(req.get("key"))
    if key != "metadata.name":
        out.append(invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            out += _each(f"{path}.values[{i}]", _s(value), dns1123_subdomain_errors(_s(value)))
    return out


# -- pieces shared by claims, templates and classes ----------------------------------------------
def _cel_expression(path: str, expression: str, stored: bool) -> list[Cause]:
    """``validateCELExpression``: an expression already stored is taken as valid; a new one must be
    short enough, compile and stay within the cost limit in the worst case."""
    if stored:
        return []
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    try:
        selector = compile_selector(expression)
    except CELError as exc:
        return [invalid(path, expression, str(exc))]
    if selector.max_cost > CEL_SELECTOR_MAX_COST:
        return [forbidden(path, "too complex, exceeds cost limit")]
    return []


def _selectors(selectors: Any, path: str, stored: bool) -> list[Cause]:
    items = _l(selectors)
    if (out := _too_many(items, DEVICE_SELECTORS_MAX_SIZE, path)) or not items:
        return out
    for i, raw in enumerate(items):
        cel = _m(raw).get("cel")
        if cel is None:
            out.append(required(f"{path}[{i}].cel"))
        elif isinstance(cel, Mapping) and isinstance(cel.get("expression", ""), str):
            out += _cel_expression(f"{path}[{i}].cel.expression", cel.get("expression", ""), stored)
    return out


def _opaque_parameters(value: Any, path: str, stored: bool) -> list[Cause]:
    """``validateRawExtension``: a JSON object, of bounded size on create."""
    if value is None:
        return [required(path)]
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if not stored and size > OPAQUE_PARAMETERS_MAX_LENGTH:
        return [too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)]
    if not isinstance(value, Mapping):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _device_configuration(config: Mapping[str, Any], path: str, stored: bool) -> list[Cause]:
    opaque = config.get("opaque")
    if opaque is None:
        return [required(f"{path}.opaque")]
    opaque = _m(opaque)
    out = driver_name_errors(f"{path}.opaque.driver", _s(opaque.get("driver")))
    return out + _opaque_parameters(opaque.get("parameters"), f"{path}.opaque.parameters", stored)


def _toleration(toleration: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateDeviceToleration``."""
    out: list[Cause] = []
    key, value = _s(toleration.get("key")), _s(toleration.get("value"))
    operator, effect = _s(toleration.get("operator")), _s(toleration.get("effect"))
    if key:
        out += _label_name(f"{path}.key", key)
    if operator == TOLERATION_OP_EXISTS:
        if value:
            out.append(invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif operator == TOLERATION_OP_EQUAL:
        out += _each(f"{path}.value", value, label_value_errors(value))
    elif not operator:
        out.append(required(f"{path}.operator"))
    else:
        out.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        out.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return out


def _tolerations(owner: Mapping[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    for i, toleration in enumerate(_l(owner.get("tolerations"))):
        out += _toleration(_m(toleration), f"{path}.tolerations[{i}]")
    return out


def _allocation_mode(request: Mapping[str, Any], path: str) -> list[Cause]:
    mode = _s(request.get("allocationMode"))
    if request.get("count") is not None and _int(request.get("count")) is None:
        return []  # not a number: the typed view says so
    count = _int(request.get("count")) or 0
    if mode == ALLOCATION_MODE_ALL:
        if count != 0:
            return [invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")]
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count <= 0:
            return [invalid(f"{path}.count", count, "must be greater than zero")]
    else:
        return [not_supported(f"{path}.allocationMode", mode, _ALLOCATION_MODES)]
    return []


def _device_class_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    return _each(path, name, dns1123_subdomain_errors(name))


def _request_body(request: Mapping[str, Any], path: str, stored: bool) -> list[Cause]:
    """What ``exactly`` and each ``firstAvailable`` entry share: class, selectors, mode, count,
    tolerations."""
    out = _device_class_name(_s(request.get("deviceClassName")), f"{path}.deviceClassName")
    out += _selectors(request.get("selectors"), f"{path}.selectors", stored)
    out += _allocation_mode(request, path)
    return out + _tolerations(request, path)


class RequestNames:
    """Upstream ``requestNames``: request name → its subrequest names (None without any)."""

    def __init__(self, requests: Iterable[Any]) -> None:
        self.names: dict[str, set[str] | None] = {}
        for raw in requests:
            request = _m(raw)
            subs = _l(request.get("firstAvailable"))
            self.names[_s(request.get("name"))] = {_s(_m(s).get("name")) for s in subs} if subs else None

    def has(self, ref: str) -> bool:
        parts = ref.split("/")
        if len(parts) > 2 or parts[0] not in self.names:
            return False
        if len(parts) == 1:
            return True
        subs = self.names[parts[0]]
        return subs is not None and parts[1] in subs


def _request_ref(ref: str, path: str, names: RequestNames) -> list[Cause]:
    parts = ref.split("/")
    if len(parts) > 2:
        return [invalid(path, ref, _REQUEST_REF_MESSAGE)]
    out: list[Cause] = []
    for part in parts:
        out += _dns_label(path, part)
    if not names.has(ref):
        out.append(invalid(path, ref, _REQUEST_REF_MESSAGE))
    return out


def _request_refs(refs: Any, path: str, names: RequestNames) -> list[Cause]:
    items = [_s(r) for r in _l(refs)]
    if out := _too_many(items, DEVICE_REQUESTS_MAX_SIZE, path):
        return out
    for i, ref in enumerate(items):
        out += _request_ref(ref, f"{path}[{i}]", names)
    return out + _duplicates(items, path)


def _device_request(request: Mapping[str, Any], path: str, stored: bool) -> list[Cause]:
    """``validateDeviceRequest``: a name and exactly one of ``exactly`` / ``firstAvailable``."""
    out = _dns_label(f"{path}.name", _s(request.get("name")))
    subs, exactly = _l(request.get("firstAvailable")), request.get("exactly")
    if not subs and exactly is None:
        out.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif subs and exactly is not None:
        out.append(
            invalid(
                path,
                None,
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )
        )
    elif subs:
        where = f"{path}.firstAvailable"
        if too := _too_many(subs, FIRST_AVAILABLE_MAX_SIZE, where):
            return out + too
        for i, raw in enumerate(subs):
            sub = _m(raw)
            out += _dns_label(f"{where}[{i}].name", _s(sub.get("name")))
            out += _request_body(sub, f"{where}[{i}]", stored)
        out += _duplicates((_s(_m(s).get("name")) for s in subs), where)
    else:
        out += _request_body(_m(exactly), f"{path}.exactly", stored)
    return out


def device_claim_causes(devices: Mapping[str, Any], path: str, stored: bool = False) -> list[Cause]:
    """``validateDeviceClaim``: requests, constraints naming them, configuration for them."""
    requests = _l(devices.get("requests"))
    names = RequestNames(requests)
    out = _too_many(requests, DEVICE_REQUESTS_MAX_SIZE, f"{path}.requests")
    if not out:
        for i, request in enumerate(requests):
            out += _device_request(_m(request), f"{path}.requests[{i}]", stored)
        out += _duplicates((_s(_m(r).get("name")) for r in requests), f"{path}.requests")
    constraints = _l(devices.get("constraints"))
    if too := _too_many(constraints, DEVICE_CONSTRAINTS_MAX_SIZE, f"{path}.constraints"):
        out += too
    else:
        for i, raw in enumerate(constraints):
            constraint, where = _m(raw), f"{path}.constraints[{i}]"
            out += _request_refs(constraint.get("requests"), f"{where}.requests", names)
            if constraint.get("matchAttribute") is not None:
                out += fully_qualified_attribute_errors(
                    f"{where}.matchAttribute", _s(constraint["matchAttribute"])
                )
            elif constraint.get("distinctAttribute") is not None:
                out += fully_qualified_attribute_errors(
                    f"{where}.distinctAttribute", _s(constraint["distinctAttribute"])
                )
            else:
                out.append(required(f"{where}.matchAttribute"))
    configs = _l(devices.get("config"))
    if too := _too_many(configs, DEVICE_CONFIG_MAX_SIZE, f"{path}.config"):
        out += too
    else:
        for i, raw in enumerate(configs):
            config, where = _m(raw), f"{path}.config[{i}]"
            out += _request_refs(config.get("requests"), f"{where}.requests", names)
            out += _device_configuration(config, where, stored)
    return out


def _template_metadata(meta: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateTemplateObjectMeta``: the labels and annotations a generated claim gets."""
    out: list[Cause] = []
    for key, value in _m(meta.get("labels")).items():
        out += _label_name(f"{path}.labels", str(key))
        out += _each(f"{path}.labels", _s(value), label_value_errors(_s(value)))
    for key in _m(meta.get("annotations")):
        out += _label_name(f"{path}.annotations", str(key).lower())
    return out


# -- DeviceClass ---------------------------------------------------------------------------------
def _device_class_spec(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    # Selectors and config exactly as stored before are not checked again (upstream's ratcheting).
    stored = old is not None and spec.get("selectors") == old.get("selectors")
    out = _selectors(spec.get("selectors"), "spec.selectors", stored)
    configs = _l(spec.get("config"))
    stored = old is not None and spec.get("config") == old.get("config")
    if too := _too_many(configs, DEVICE_CONFIG_MAX_SIZE, "spec.config"):
        out += too
    else:
        for i, config in enumerate(configs):
            out += _device_configuration(_m(config), f"spec.config[{i}]", stored)
    name = spec.get("extendedResourceName")
    if isinstance(name, str) and not is_extended_resource_name(name):
        out.append(invalid("spec.extendedResourceName", name, "must be a valid extended resource name"))
    return out


def validate_device_class(obj: Mapping[str, Any]) -> list[Cause]:
    return _device_class_spec(_m(obj.get("spec")), None)


def validate_device_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return _device_class_spec(_m(new.get("spec")), _m(old.get("spec")))


# -- ResourceClaim and ResourceClaimTemplate -----------------------------------------------------
def validate_resource_claim(obj: Mapping[str, Any]) -> list[Cause]:
    obj = _defaulted(obj, default_resource_claim)
    return device_claim_causes(_m(_m(obj.get("spec")).get("devices")), "spec.devices")


def validate_resource_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateResourceClaimUpdate``: the spec is immutable."""
    new_spec = _defaulted(new, default_resource_claim).get("spec")
    if new_spec != _defaulted(old, default_resource_claim).get("spec"):
        return [immutable("spec", new_spec)]
    return []


def validate_resource_claim_template(obj: Mapping[str, Any]) -> list[Cause]:
    obj = _defaulted(obj, default_resource_claim_template)
    spec = _m(obj.get("spec"))
    out = _template_metadata(_m(spec.get("metadata")), "spec.metadata")
    return out + device_claim_causes(_m(_m(spec.get("spec")).get("devices")), "spec.spec.devices")


def validate_resource_claim_template_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    new_spec = _defaulted(new, default_resource_claim_template).get("spec")
    if new_spec != _defaulted(old, default_resource_claim_template).get("spec"):
        return [immutable("spec", new_spec)]
    return []


def _binding_conditions(owner: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateDeviceBindingParameters``."""
    conditions = [_s(c) for c in _l(owner.get("bindingConditions"))]
    failures = [_s(c) for c in _l(owner.get("bindingFailureConditions"))]
    out: list[Cause] = []
    for key, items, limit in (
        ("bindingConditions", conditions, BINDING_CONDITIONS_MAX_SIZE),
        ("bindingFailureConditions", failures, BINDING_FAILURE_CONDITIONS_MAX_SIZE),
    ):
        if too := _too_many(items, limit, f"{path}.{key}"):
            out += too
            continue
        for i, item in enumerate(items):
            out += _label_name(f"{path}.{key}[{i}]", item)
    out += _duplicates(conditions, f"{path}.bindingConditions")
    seen: set[str] = set()
    for i, item in enumerate(failures):
        where = f"{path}.bindingFailureConditions[{i}]"
        if item in seen:
            out.append(duplicate(where, item))
        seen.add(item)
        if item in conditions:
            out.append(
                invalid(where, item, "bindingFailureConditions must not overlap with bindingConditions")
            )
    if not conditions and failures:
        out.append(
            invalid(
                f"{path}.bindingConditions",
                conditions,
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conditions:
        out.append(
            invalid(
                f"{path}.bindingFailureConditions",
                failures,
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    return out


_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _allocation(allocation: Mapping[str, Any], path: str, names: RequestNames) -> list[Cause]:
    """``validateAllocationResult`` for a new allocation."""
    devices = _m(allocation.get("devices"))
    results = _l(devices.get("results"))
    out = _too_many(results, ALLOCATION_RESULTS_MAX_SIZE, f"{path}.devices.results")
    if not out:
        for i, raw in enumerate(results):
            result, where = _m(raw), f"{path}.devices.results[{i}]"
            out += _request_ref(_s(result.get("request")), f"{where}.request", names)
            out += driver_name_errors(f"{where}.driver", _s(result.get("driver")))
            out += _pool_name(f"{where}.pool", _s(result.get("pool")))
            out += _dns_label(f"{where}.device", _s(result.get("device")))
            out += _binding_conditions(result, where)
            out += _tolerations(result, where)
            share = result.get("shareID")
            if isinstance(share, str) and not _UUID.fullmatch(share):
                out.append(
                    invalid(
                        f"{where}.shareID",
                        share,
                        "uid must be in RFC 4122 normalized form, "
                        "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
                    )
                )
    configs = _l(devices.get("config"))
    if too := _too_many(configs, 2 * DEVICE_CONFIG_MAX_SIZE, f"{path}.devices.config"):
        out += too
    else:
        for i, raw in enumerate(configs):
            config, where = _m(raw), f"{path}.devices.config[{i}]"
            source = _s(config.get("source"))
            if not source:
                out.append(required(f"{where}.source"))
            elif source not in _CONFIG_SOURCES:
                out.append(not_supported(f"{where}.source", source, _CONFIG_SOURCES))
            out += _request_refs(config.get("requests"), f"{where}.requests", names)
            out += _device_configuration(config, where, False)
    selector = allocation.get("nodeSelector")
    if isinstance(selector, Mapping):
        out += node_selector_causes(selector, f"{path}.nodeSelector")
    return out


def validate_resource_claim_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateResourceClaimStatusUpdate``: consumers named once each (at most 256), reserved
    only while allocated and never newly while the claim is being deleted; an allocation, once
    made, is kept as it is until it is removed."""
    new = _defaulted(new, default_resource_claim)
    old = _defaulted(old, default_resource_claim)
    status, old_status = _m(new.get("status")), _m(old.get("status"))
    names = RequestNames(_l(_m(_m(new.get("spec")).get("devices")).get("requests")))
    reserved = _l(status.get("reservedFor"))
    out = _too_many(reserved, RESERVED_FOR_MAX_SIZE, "status.reservedFor")
    if not out:
        for i, raw in enumerate(reserved):
            ref, where = _m(raw), f"status.reservedFor[{i}]"
            for key in ("resource", "name", "uid"):
                if not _s(ref.get(key)):
                    out.append(required(f"{where}.{key}"))
        out += _duplicates((_s(_m(r).get("uid")) for r in reserved), "status.reservedFor")
    allocation, old_allocation = status.get("allocation"), old_status.get("allocation")
    out += _device_statuses(status, allocation)
    if reserved:
        if allocation is None:
            out.append(forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif _m(new.get("metadata")).get("deletionTimestamp"):
            before = {json.dumps(r, sort_keys=True) for r in _l(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in before for r in reserved):
                out.append(
                    forbidden(
                        "status.reservedFor",
                        "new entries may not be added while `deallocationRequested` or "
                        "`deletionTimestamp` are set",
                    )
                )
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            out.append(immutable("status.allocation", allocation))
    elif isinstance(allocation, Mapping):
        out += _allocation(allocation, "status.allocation", names)
    return out


def _device_statuses(status: Mapping[str, Any], allocation: Any) -> list[Cause]:
    """``status.devices``: each names an allocated device (with its share), once."""
    allocated = {
        (_s(r.get("driver")), _s(r.get("pool")), _s(r.get("device")), _s(r.get("shareID")))
        for r in (_m(x) for x in _l(_m(_m(allocation).get("devices")).get("results")))
    }
    out: list[Cause] = []
    keys = []
    for i, raw in enumerate(_l(status.get("devices"))):
        device, where = _m(raw), f"status.devices[{i}]"
        key = (
            _s(device.get("driver")),
            _s(device.get("pool")),
            _s(device.get("device")),
            _s(device.get("shareID")),
        )
        keys.append("/".join(k for k in key if k))
        out += driver_name_errors(f"{where}.driver", key[0])
        out += _pool_name(f"{where}.pool", key[1])
        out += _dns_label(f"{where}.device", key[2])
        if key not in allocated:
            out.append(invalid(where, keys[-1], "must be an allocated device in the claim"))
    return out + _duplicates(keys, "status.devices")


# -- ResourceSlice -------------------------------------------------------------------------------
def _attribute(attribute: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateDeviceAttribute``: exactly one typed value."""
    out: list[Cause] = []
    set_fields = [k for k in ("bool", "int", "string", "version") if attribute.get(k) is not None]
    string, version = attribute.get("string"), attribute.get("version")
    if isinstance(string, str) and len(string) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        out.append(too_long(f"{path}.string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if isinstance(version, str):
        if not _SEMVER.fullmatch(version):
            out.append(
                invalid(f"{path}.version", version, "must be a string compatible with semver.org spec 2.0.0")
            )
        if len(version) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            out.append(too_long(f"{path}.version", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if not set_fields:
        out.append(invalid(path, "", "exactly one value must be specified"))
    elif len(set_fields) > 1:
        out.append(invalid(path, dict(attribute), "exactly one value must be specified"))
    return out


def _capacity(capacity: Mapping[str, Any], path: str, multiple: bool) -> list[Cause]:
    """A device's capacity: a request policy only on a device that allows multiple allocations,
    with one of its two forms and a default that fits it."""
    policy = capacity.get("requestPolicy")
    if policy is None:
        return []
    where = f"{path}.requestPolicy"
    if not multiple:
        return [forbidden(where, "allowMultipleAllocations must be true")]
    policy = _m(policy)
    valid_values, valid_range = _l(policy.get("validValues")), policy.get("validRange")
    if valid_values and valid_range is not None:
        return [
            forbidden(
                where,
                'exactly one policy can be specified, cannot specify "validValues" and "validRange" '
                "at the same time",
            )
        ]
    if (valid_values or valid_range is not None) and policy.get("default") is None:
        kind = "validValues" if valid_values else "validRange"
        return [required(f"{where}.default", f"required when {kind} is defined")]
    out: list[Cause] = []
    maximum = _quantity(capacity.get("value"))
    if valid_values and maximum is not None:
        parsed = [_quantity(v) for v in valid_values]
        for i in range(1, len(parsed)):
            a, b = parsed[i - 1], parsed[i]
            if a is not None and b is not None and a > b:
                out.append(
                    invalid(
                        f"{where}.validValues[{i}]",
                        str(valid_values[i]),
                        "values must be sorted in ascending order",
                    )
                )
        default = _quantity(policy.get("default"))
        for i, value in enumerate(parsed):
            if value is not None and value > maximum:
                out.append(
                    invalid(
                        f"{where}.validValues[{i}]",
                        str(valid_values[i]),
                        f"option is larger than capacity value: {capacity.get('value')}",
                    )
                )
        if default not in parsed:
            out.append(
                invalid(
                    f"{where}.validValues",
                    str(policy.get("default")),
                    "default value is not valid according to the requestPolicy",
                )
            )
    elif isinstance(valid_range, Mapping) and valid_range.get("min") is None:
        out.append(required(f"{where}.validRange.min", "required when validRange is defined"))
    return out


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _taint(taint: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateDeviceTaint``."""
    out = _label_name(f"{path}.key", _s(taint.get("key")))
    value, effect = _s(taint.get("value")), _s(taint.get("effect"))
    if value:
        out += _each(f"{path}.value", value, label_value_errors(value))
    if not effect:
        out.append(required(f"{path}.effect"))
    elif effect not in _TAINT_EFFECTS:
        out.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return out


def _counters(counters: Any, path: str) -> list[Cause]:
    """A counter map: at most 32, DNS-label names (upstream names the map, not the key)."""
    counters = _m(counters)
    if len(counters) > RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET:
        return [too_many(path, len(counters), RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET)]
    out: list[Cause] = []
    for name in counters:
        out += _dns_label(path, str(name))
    return out


def _device(
    device: Mapping[str, Any], old: Mapping[str, Any] | None, path: str, per_device: bool
) -> list[Cause]:
    """``validateDevice``."""
    out = _dns_label(f"{path}.name", _s(device.get("name")))
    attributes, capacity = _m(device.get("attributes")), _m(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        out.append(
            invalid(
                path,
                total,
                "the total number of attributes and capacities must not exceed "
                f"{RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}",
            )
        )
    for name, attribute in attributes.items():
        out += qualified_attribute_errors(f"{path}.attributes", str(name))
        out += _attribute(_m(attribute), f"{path}.attributes[{_truncated(str(name), _MAX_QUALIFIED_KEY)}]")
    if old is None or old.get("capacity") != device.get("capacity"):
        multiple = device.get("allowMultipleAllocations") is True
        for name, value in capacity.items():
            out += qualified_attribute_errors(f"{path}.capacity", str(name))
            out += _capacity(
                _m(value), f"{path}.capacity[{_truncated(str(name), _MAX_QUALIFIED_KEY)}]", multiple
            )
    if old is None or old.get("taints") != device.get("taints"):
        taints = _l(device.get("taints"))
        if too := _too_many(taints, DEVICE_TAINTS_MAX_LENGTH, f"{path}.taints"):
            out += too
        else:
            for i, taint in enumerate(taints):
                out += _taint(_m(taint), f"{path}.taints[{i}]")
    consumes = _l(device.get("consumesCounters"))
    where = f"{path}.consumesCounters"
    if too := _too_many(consumes, RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE, where):
        out += too
    else:
        for i, raw in enumerate(consumes):
            consumption = _m(raw)
            counter_set = _s(consumption.get("counterSet"))
            if not counter_set:
                out.append(required(f"{where}[{i}].counterSet"))
            else:
                out += _dns_label(f"{where}[{i}].counterSet", counter_set)
            if not _m(consumption.get("counters")):
                out.append(required(f"{where}[{i}].counters"))
            else:
                out += _counters(consumption.get("counters"), f"{where}[{i}].counters")
        out += _duplicates((_s(_m(c).get("counterSet")) for c in consumes), where)
    node_name, selector, all_nodes = (
        device.get("nodeName"),
        device.get("nodeSelector"),
        device.get("allNodes"),
    )
    if per_device:
        chosen: list[str] = []
        if node_name is not None:
            if _s(node_name):
                chosen.append("`nodeName`")
                out += _each(f"{path}.nodeName", _s(node_name), dns1123_subdomain_errors(_s(node_name)))
            else:
                out.append(invalid(f"{path}.nodeName", _s(node_name), "must not be empty"))
        if selector is not None:
            chosen.append("`nodeSelector`")
            out += node_selector_causes(_m(selector), f"{path}.nodeSelector")
        if all_nodes is not None:
            if all_nodes is True:
                chosen.append("`allNodes`")
            else:
                out.append(invalid(f"{path}.allNodes", all_nodes, "must be either unset or set to true"))
        if not chosen:
            out.append(required(path, _DEVICE_NODE_SELECTION))
        elif len(chosen) > 1:
            out.append(invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_NODE_SELECTION))
    elif node_name is not None or selector is not None or all_nodes is not None:
        out.append(
            invalid(
                path,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
                "is set to true in the ResourceSlice spec",
            )
        )
    return out + _binding_conditions(device, path)


def _slice_spec(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    """``validateResourceSliceSpec``."""
    out = driver_name_errors("spec.driver", _s(spec.get("driver")))
    pool = _m(spec.get("pool"))
    out += _pool_name("spec.pool.name", _s(pool.get("name")))
    count, generation = _int(pool.get("resourceSliceCount")) or 0, _int(pool.get("generation")) or 0
    if count <= 0:
        out.append(invalid("spec.pool.resourceSliceCount", count, "must be greater than zero"))
    if generation < 0:
        out.append(invalid("spec.pool.generation", generation, "must be greater than or equal to zero"))
    if old is not None:
        old_pool = _m(old.get("pool"))
        if pool.get("name") != old_pool.get("name"):
            out.append(immutable("spec.pool.name", pool.get("name")))
        if spec.get("driver") != old.get("driver"):
            out.append(immutable("spec.driver", spec.get("driver")))
        if spec.get("nodeName") != old.get("nodeName"):
            out.append(immutable("spec.nodeName", spec.get("nodeName")))
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if _s(node_name):
            chosen.append("`nodeName`")
            out += _each("spec.nodeName", _s(node_name), dns1123_subdomain_errors(_s(node_name)))
        else:
            out.append(
                invalid("spec.nodeName", _s(node_name), "must be either unset or set to a non-empty string")
            )
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("`nodeSelector`")
        out += node_selector_causes(_m(selector), "spec.nodeSelector")
        terms = _l(_m(selector).get("nodeSelectorTerms"))
        if len(terms) != 1:
            out.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms", terms, "must have exactly one node selector term"
                )
            )
    for key in ("allNodes", "perDeviceNodeSelection"):
        value = spec.get(key)
        if value is None:
            continue
        if value is True:
            chosen.append(f"`{key}`")
        else:
            out.append(invalid(f"spec.{key}", value, "must be either unset or set to true"))
    if not chosen:
        out.append(required("spec", _NODE_SELECTION))
    elif len(chosen) > 1:
        out.append(
            invalid("spec", "{" + ", ".join(chosen) + "}", f"{_NODE_SELECTION}, but multiple fields are set")
        )
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        out.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = _l(spec.get("devices"))
    advanced = any(_l(_m(d).get("taints")) or _l(_m(d).get("consumesCounters")) for d in devices)
    limit = RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES if advanced else RESOURCE_SLICE_MAX_DEVICES
    if too := _too_many(devices, limit, "spec.devices"):
        out += too
    else:
        old_devices = {_s(_m(d).get("name")): _m(d) for d in _l((old or {}).get("devices"))}
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, raw in enumerate(devices):
            device = _m(raw)
            out += _device(device, old_devices.get(_s(device.get("name"))), f"spec.devices[{i}]", per_device)
        out += _duplicates((_s(_m(d).get("name")) for d in devices), "spec.devices")
    counter_sets = _l(spec.get("sharedCounters"))
    if too := _too_many(counter_sets, RESOURCE_SLICE_MAX_COUNTER_SETS, "spec.sharedCounters"):
        out += too
    else:
        for i, raw in enumerate(counter_sets):
            counter_set, where = _m(raw), f"spec.sharedCounters[{i}]"
            name = _s(counter_set.get("name"))
            out += [required(f"{where}.name")] if not name else _dns_label(f"{where}.name", name)
            if not _m(counter_set.get("counters")):
                out.append(required(f"{where}.counters"))
            else:
                out += _counters(counter_set.get("counters"), f"{where}.counters")
        out += _duplicates((_s(_m(c).get("name")) for c in counter_sets), "spec.sharedCounters")
    return out


def validate_resource_slice(obj: Mapping[str, Any]) -> list[Cause]:
    return _slice_spec(_m(obj.get("spec")), None)


def validate_resource_slice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return _slice_spec(_m(new.get("spec")), _m(old.get("spec")))


# -- by kind -------------------------------------------------------------------------------------
Rules = Callable[[Mapping[str, Any]], list[Cause]]
UpdateRules = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Cause]]

#: Kind → its rules on create (and on every write).
VALIDATE: Final[Mapping[str, Rules]] = {
    "DeviceClass": validate_device_class,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "ResourceSlice": validate_resource_slice,
}
#: Kind → what an update of the object itself may not change.
VALIDATE_UPDATE: Final[Mapping[str, UpdateRules]] = {
    "DeviceClass": validate_device_class_update,
    "ResourceClaim": validate_resource_claim_update,
    "ResourceClaimTemplate": validate_resource_claim_template_update,
    "ResourceSlice": validate_resource_slice_update,
}
#: Kind → its defaults.
DEFAULTS: Final[Mapping[str, Callable[[dict[str, Any]], None]]] = {
    "ResourceClaim": default_resource_claim,
    "ResourceClaimTemplate": default_resource_claim_template,
    "ResourceSlice": default_resource_slice,
}


def resource_quantities(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The quantities of a ResourceSlice (device capacities, counters) and of a claim's capacity
    requests, each with its field: one that does not parse is a 400 in serve."""
    kind = obj.get("kind")
    out: list[tuple[str, Any]] = []
    if kind == "ResourceSlice":
        spec = _m(obj.get("spec"))
        for i, raw in enumerate(_l(spec.get("devices"))):
            device = _m(raw)
            for name, capacity in _m(device.get("capacity")).items():
                if isinstance(capacity, Mapping) and "value" in capacity:
                    out.append((f"spec.devices[{i}].capacity[{name}].value", capacity["value"]))
            for j, consumption in enumerate(_l(device.get("consumesCounters"))):
                for name, counter in _m(_m(consumption).get("counters")).items():
                    if isinstance(counter, Mapping) and "value" in counter:
                        out.append(
                            (
                                f"spec.devices[{i}].consumesCounters[{j}].counters[{name}].value",
                                counter["value"],
                            )
                        )
        for i, raw in enumerate(_l(spec.get("sharedCounters"))):
            for name, counter in _m(_m(raw).get("counters")).items():
                if isinstance(counter, Mapping) and "value" in counter:
                    out.append((f"spec.sharedCounters[{i}].counters[{name}].value", counter["value"]))
    elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
        spec = _m(obj.get("spec"))
        if kind == "ResourceClaimTemplate":
            spec = _m(spec.get("spec"))
        for i, raw in enumerate(_l(_m(spec.get("devices")).get("requests"))):
            request = _m(raw)
            parts = [("exactly", _m(request.get("exactly")))]
            parts += [
                (f"firstAvailable[{j}]", _m(s)) for j, s in enumerate(_l(request.get("firstAvailable")))
            ]
            for where, body in parts:
                for name, value in _m(_m(body.get("capacity")).get("requests")).items():
                    out.append((f"spec.devices.requests[{i}].{where}.capacity.requests[{name}]", value))
    return out
