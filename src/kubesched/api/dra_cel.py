"""CEL device selectors of Dynamic Resource Allocation (resource.k8s.io/v1), as the allocator runs them.

A DeviceClass or a request selects devices with CEL expressions over one variable, ``device``::

    device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100"
    device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0
    device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))

The environment is upstream's (``k8s.io/dynamic-resource-allocation/cel``) at the scheduler's
compatibility version: the standard macros, cel.bind, the string extensions (version 2), sets,
two-variable comprehensions, optional values, regular expressions (``matches``, ``find``,
``findAll``), Kubernetes' quantity and semver libraries and its list functions, and
``device.driver``, ``device.allowMultipleAllocations``, ``device.attributes[domain][id]`` and
``device.capacity[domain][id]`` (quantities). An attribute written without a domain belongs to
the device's driver. Looking up a domain the device does not have yields an empty map, so that
``"model" in device.attributes["other.example.com"]`` is false rather than an error, while a
missing attribute is the runtime error ``no such key: <id>``.

Expressions are parsed, type-checked and evaluated by the official CEL runtime (cel-cpp through
``cel-expr-python``), chosen by measurement (docs/dra.md). Compilation happens once per expression
(:func:`compile_selector` caches); a :class:`CELDevice` converts a device once and is reused for
every selector, so matching a selector against a device is one call into the runtime.

Costs: the worst-case cost is estimated statically with cel-go's rules (``max_cost``); the API
refuses a selector above :data:`CEL_SELECTOR_MAX_COST` with ``too complex, exceeds cost limit``
(:func:`selector_validation_error`). The runtime has no cost tracking; a selector whose worst case
exceeds the runtime limit (only possible for objects that skipped validation) fails every
evaluation with upstream's ``operation cancelled: actual cost limit exceeded`` instead of
running until the actual cost exceeds it.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final, TypeAlias

from cel_expr_python import cel as _cel

from kubesched.api.dra_cel_cost import (
    DEVICE_FIELDS,
    CheckedAst,
    Node,
    decode_checked_expr,
    estimate_cost,
    format_type,
)
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import DeviceAttributeValue, DeviceVersion

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_LENGTH",
    "CEL_SELECTOR_MAX_COST",
    "CELDevice",
    "CELError",
    "CompiledSelector",
    "DeviceAttributeValue",
    "DeviceVersion",
    "compile_selector",
    "selector_validation_error",
]

#: resource.k8s.io/v1 CELSelectorExpressionMaxCost: the cost limit of one selector.
CEL_SELECTOR_MAX_COST: Final = 1_000_000
#: resource.k8s.io/v1 CELSelectorExpressionMaxLength.
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024

_COST_LIMIT_EXCEEDED: Final = "operation cancelled: actual cost limit exceeded"
_QUANTITY_TAG: Final = "kubernetes.Quantity"
_SEMVER_TAG: Final = "kubernetes.Semver"
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


class CELError(Exception):
    """A selector that does not compile, or that failed or did not yield a bool for a device.

    The message is upstream's error text (``compilation failed: ...``, ``no such key: ...``).
    """


# --------------------------------------------------------------------------- semantic versions


_SEMVER_RE: Final = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)

_SemverKey: TypeAlias = tuple[int, int, int, tuple[tuple[int, int | str], ...]]


def _semver_error(text: str) -> str:
    if not text:
        return "Version string empty"
    parts = text.split("-", 1)[0].split("+", 1)[0].split(".")
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    for what, part in zip(("major", "minor", "patch"), parts, strict=True):
        if not part.isdigit():
            return f"Invalid character(s) found in {what} number {part!r}"
        if len(part) > 1 and part.startswith("0"):
            return f"Leading zeroes are not allowed in {what} number {part!r}"
    return f"invalid semantic version {text!r}"


@functools.lru_cache(maxsize=4096)
def _parse_semver(text: str) -> str:
    """Canonical form of a strict semantic version (build metadata dropped: it never compares)."""
    m = _SEMVER_RE.fullmatch(text)
    if m is None or any(int(g) > 2**64 - 1 for g in m.groups()[:3]):
        raise ValueError(_semver_error(text))
    canonical = f"{int(m[1])}.{int(m[2])}.{int(m[3])}"
    return canonical + (f"-{m[4]}" if m[4] else "")


def _normalize_semver(text: str) -> str:
    """Upstream's tolerant form: a leading "v", missing minor/patch and leading zeros are accepted."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return _parse_semver(".".join(parts))


@functools.lru_cache(maxsize=4096)
def _semver_key(canonical: str) -> _SemverKey:
    core, _, pre = canonical.partition("-")
    major, minor, patch = (int(x) for x in core.split("."))
    ids: tuple[tuple[int, int | str], ...] = ()
    if pre:
        ids = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))
    return major, minor, patch, ids


@functools.lru_cache(maxsize=65536)
def _semver_compare(a: str, b: str) -> int:
    ka, kb = _semver_key(a), _semver_key(b)
    if ka[:3] != kb[:3]:
        return -1 if ka[:3] < kb[:3] else 1
    pa, pb = ka[3], kb[3]
    if pa == pb:
        return 0
    # A version without pre-release identifiers has higher precedence than one with them.
    if not pa:
        return 1
    if not pb:
        return -1
    return -1 if pa < pb else 1


# --------------------------------------------------------------------------- runtime values
#
# The runtime cannot hold opaque values, so a quantity is the one-entry map
# {"kubernetes.Quantity": "<numerator>/<denominator>"} and a version {"kubernetes.Semver": "1.2.3"}.
# Both forms are canonical, so CEL's map equality is value equality as upstream's. The type checker
# sees the opaque types kubernetes.Quantity and kubernetes.Semver, so an expression cannot treat
# them as maps.


def _quantity_value(q: Fraction) -> dict[str, str]:
    return {_QUANTITY_TAG: f"{q.numerator}/{q.denominator}"}


@functools.lru_cache(maxsize=8192)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _as_quantity(v: Any) -> Fraction:
    if isinstance(v, dict):
        text = v.get(_QUANTITY_TAG)
        if isinstance(text, str):
            return _fraction(text)
    raise ValueError("no such overload")


def _as_semver(v: Any) -> str:
    if isinstance(v, dict):
        text = v.get(_SEMVER_TAG)
        if isinstance(text, str):
            return text
    raise ValueError("no such overload")


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, dict) and isinstance(b, dict):
        qa = a.get(_QUANTITY_TAG)
        qb = b.get(_QUANTITY_TAG)
        if isinstance(qa, str) and isinstance(qb, str):
            return _compare_quantity_text(qa, qb)
        va = a.get(_SEMVER_TAG)
        vb = b.get(_SEMVER_TAG)
        if isinstance(va, str) and isinstance(vb, str):
            return _semver_compare(va, vb)
    raise ValueError("no such overload")


@functools.lru_cache(maxsize=65536)
def _compare_quantity_text(a: str, b: str) -> int:
    # Selectors compare many devices against a few literals: the pairs repeat.
    qa, qb = _fraction(a), _fraction(b)
    return (qa > qb) - (qa < qb)


def _fn_quantity(text: str) -> dict[str, str]:
    try:
        return _quantity_value(_parse_k8s_quantity(text))
    except QuantityError:
        raise ValueError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ) from None


@functools.lru_cache(maxsize=4096)
def _parse_k8s_quantity(text: str) -> Fraction:
    return parse_quantity(text)


def _fn_is_quantity(text: str) -> bool:
    try:
        _parse_k8s_quantity(text)
    except QuantityError:
        return False
    return True


def _fn_semver(text: str, normalize: bool = False) -> dict[str, str]:
    return {_SEMVER_TAG: _normalize_semver(text) if normalize else _parse_semver(text)}


def _fn_is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _fn_semver(text, normalize)
    except ValueError:
        return False
    return True


def _fn_sign(v: Any) -> int:
    q = _as_quantity(v)
    return (q > 0) - (q < 0)


def _fn_as_integer(v: Any) -> int:
    q = _as_quantity(v)
    if q.denominator != 1 or not _INT64_MIN <= q.numerator <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return q.numerator


def _fn_is_integer(v: Any) -> bool:
    q = _as_quantity(v)
    return q.denominator == 1 and _INT64_MIN <= q.numerator <= _INT64_MAX


def _fn_as_float(v: Any) -> float:
    return float(_as_quantity(v))


def _fn_add(a: Any, b: Any) -> dict[str, str]:
    other = Fraction(b) if isinstance(b, int) else _as_quantity(b)
    return _quantity_value(_as_quantity(a) + other)


def _fn_sub(a: Any, b: Any) -> dict[str, str]:
    other = Fraction(b) if isinstance(b, int) else _as_quantity(b)
    return _quantity_value(_as_quantity(a) - other)


def _fn_major(v: Any) -> int:
    return _semver_key(_as_semver(v))[0]


def _fn_minor(v: Any) -> int:
    return _semver_key(_as_semver(v))[1]


def _fn_patch(v: Any) -> int:
    return _semver_key(_as_semver(v))[2]


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _fn_find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _fn_find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


def _list_ordered(values: list[Any]) -> bool:
    return all(_cmp_any(values[i], values[i + 1]) <= 0 for i in range(len(values) - 1))


def _cmp_any(a: Any, b: Any) -> int:
    if isinstance(a, dict) or isinstance(b, dict):
        return _cmp(a, b)
    return int(a > b) - int(a < b)


def _fn_sum(values: list[Any]) -> Any:
    if values and isinstance(values[0], dict):
        return _quantity_value(sum((_as_quantity(v) for v in values), Fraction(0)))
    return sum(values)


def _fn_min(values: list[Any]) -> Any:
    if not values:
        raise ValueError("min called on empty list")
    best = values[0]
    for v in values[1:]:
        if _cmp_any(v, best) < 0:
            best = v
    return best


def _fn_max(values: list[Any]) -> Any:
    if not values:
        raise ValueError("max called on empty list")
    best = values[0]
    for v in values[1:]:
        if _cmp_any(v, best) > 0:
            best = v
    return best


# --------------------------------------------------------------------------- environments

_T = _cel.Type
_QUANTITY_TYPE = _T.AbstractType(_QUANTITY_TAG)
_SEMVER_TYPE = _T.AbstractType(_SEMVER_TAG)
_RUNTIME_OPAQUE = _T.Map(_T.STRING, _T.STRING)

_ENV_CONFIG_YAML: Final = """\
extensions:
  - name: bindings
  - name: strings
    version: 2
  - name: sets
  - name: two-var-comprehensions
  - name: optional
  - name: lists
    version: 2
"""

# (function, overload id, result, parameters, member, runtime parameters, implementation)
_Decl: TypeAlias = tuple[str, str, Any, list[Any], bool, list[Any], Callable[..., Any]]
_DECLS: Final[list[_Decl]] = [
    ("quantity", "string_to_quantity", _QUANTITY_TYPE, [_T.STRING], False, [_T.STRING], _fn_quantity),
    ("isQuantity", "is_quantity_string", _T.BOOL, [_T.STRING], False, [_T.STRING], _fn_is_quantity),
    ("sign", "quantity_sign", _T.INT, [_QUANTITY_TYPE], False, [_RUNTIME_OPAQUE], _fn_sign),
    ("sign", "quantity_sign_member", _T.INT, [_QUANTITY_TYPE], True, [_RUNTIME_OPAQUE], _fn_sign),
    (
        "isGreaterThan",
        "quantity_is_greater_than",
        _T.BOOL,
        [_QUANTITY_TYPE, _QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        lambda a, b: _cmp(a, b) > 0,
    ),
    (
        "isGreaterThan",
        "semver_is_greater_than",
        _T.BOOL,
        [_SEMVER_TYPE, _SEMVER_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        lambda a, b: _cmp(a, b) > 0,
    ),
    (
        "isLessThan",
        "quantity_is_less_than",
        _T.BOOL,
        [_QUANTITY_TYPE, _QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        lambda a, b: _cmp(a, b) < 0,
    ),
    (
        "isLessThan",
        "semver_is_less_than",
        _T.BOOL,
        [_SEMVER_TYPE, _SEMVER_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        lambda a, b: _cmp(a, b) < 0,
    ),
    (
        "compareTo",
        "quantity_compare_to",
        _T.INT,
        [_QUANTITY_TYPE, _QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        _cmp,
    ),
    (
        "compareTo",
        "semver_compare_to",
        _T.INT,
        [_SEMVER_TYPE, _SEMVER_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        _cmp,
    ),
    (
        "asApproximateFloat",
        "quantity_get_float",
        _T.DOUBLE,
        [_QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE],
        _fn_as_float,
    ),
    ("asInteger", "quantity_get_int", _T.INT, [_QUANTITY_TYPE], True, [_RUNTIME_OPAQUE], _fn_as_integer),
    ("isInteger", "quantity_is_integer", _T.BOOL, [_QUANTITY_TYPE], True, [_RUNTIME_OPAQUE], _fn_is_integer),
    (
        "add",
        "quantity_add",
        _QUANTITY_TYPE,
        [_QUANTITY_TYPE, _QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        _fn_add,
    ),
    (
        "add",
        "quantity_add_int",
        _QUANTITY_TYPE,
        [_QUANTITY_TYPE, _T.INT],
        True,
        [_RUNTIME_OPAQUE, _T.INT],
        _fn_add,
    ),
    (
        "sub",
        "quantity_sub",
        _QUANTITY_TYPE,
        [_QUANTITY_TYPE, _QUANTITY_TYPE],
        True,
        [_RUNTIME_OPAQUE, _RUNTIME_OPAQUE],
        _fn_sub,
    ),
    (
        "sub",
        "quantity_sub_int",
        _QUANTITY_TYPE,
        [_QUANTITY_TYPE, _T.INT],
        True,
        [_RUNTIME_OPAQUE, _T.INT],
        _fn_sub,
    ),
    ("semver", "string_to_semver", _SEMVER_TYPE, [_T.STRING], False, [_T.STRING], _fn_semver),
    (
        "semver",
        "string_bool_to_semver",
        _SEMVER_TYPE,
        [_T.STRING, _T.BOOL],
        False,
        [_T.STRING, _T.BOOL],
        _fn_semver,
    ),
    ("isSemver", "is_semver_string", _T.BOOL, [_T.STRING], False, [_T.STRING], _fn_is_semver),
    (
        "isSemver",
        "is_semver_string_bool",
        _T.BOOL,
        [_T.STRING, _T.BOOL],
        False,
        [_T.STRING, _T.BOOL],
        _fn_is_semver,
    ),
    ("major", "semver_major", _T.INT, [_SEMVER_TYPE], True, [_RUNTIME_OPAQUE], _fn_major),
    ("minor", "semver_minor", _T.INT, [_SEMVER_TYPE], True, [_RUNTIME_OPAQUE], _fn_minor),
    ("patch", "semver_patch", _T.INT, [_SEMVER_TYPE], True, [_RUNTIME_OPAQUE], _fn_patch),
    ("find", "string_find_string", _T.STRING, [_T.STRING, _T.STRING], True, [_T.STRING, _T.STRING], _fn_find),
    (
        "findAll",
        "string_find_all_string",
        _T.List(_T.STRING),
        [_T.STRING, _T.STRING],
        True,
        [_T.STRING, _T.STRING],
        _fn_find_all,
    ),
    (
        "findAll",
        "string_find_all_string_int",
        _T.List(_T.STRING),
        [_T.STRING, _T.STRING, _T.INT],
        True,
        [_T.STRING, _T.STRING, _T.INT],
        _fn_find_all,
    ),
]


_ORDERED_ELEMENTS: Final = {
    "int": _T.INT,
    "uint": _T.UINT,
    "double": _T.DOUBLE,
    "string": _T.STRING,
    "bool": _T.BOOL,
}
_SUMMABLE_ELEMENTS: Final = ("int", "uint", "double")
for _elem_name, _elem in _ORDERED_ELEMENTS.items():
    _list = _T.List(_elem)
    _DECLS.append(
        ("isSorted", f"list_{_elem_name}_is_sorted", _T.BOOL, [_list], True, [_T.LIST], _list_ordered)
    )
    _DECLS.append(("min", f"list_{_elem_name}_min", _elem, [_list], True, [_T.LIST], _fn_min))
    _DECLS.append(("max", f"list_{_elem_name}_max", _elem, [_list], True, [_T.LIST], _fn_max))
    if _elem_name in _SUMMABLE_ELEMENTS:
        _DECLS.append(("sum", f"list_{_elem_name}_sum", _elem, [_list], True, [_T.LIST], _fn_sum))


def _function_decls(check: bool) -> list[Any]:
    """Declarations for the checking environment (opaque types) or the runtime one (their forms)."""
    by_name: dict[str, list[Any]] = {}
    seen: set[tuple[str, int, bool, tuple[str, ...]]] = set()
    for name, overload_id, result, params, member, runtime_params, impl in _DECLS:
        if check:
            overload = _cel.Overload(overload_id, result, params, is_member=member)
        else:
            # The runtime dispatches on argument kinds, so overloads that only differ in opaque
            # types (quantity or semver) share one implementation that tells them apart itself.
            key = (name, len(runtime_params), member, tuple(t.name() for t in runtime_params))
            if key in seen:
                continue
            seen.add(key)
            overload = _cel.Overload(overload_id, _T.DYN, runtime_params, is_member=member, impl=impl)
        by_name.setdefault(name, []).append(overload)
    return [_cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]


def _new_env(check: bool) -> Any:
    return _cel.NewEnv(
        config=_cel.NewEnvConfigFromYaml(_ENV_CONFIG_YAML),
        variables={"device": _T.Map(_T.STRING, _T.DYN)},
        functions=_function_decls(check),
    )


_CHECK_ENV: Final = _new_env(check=True)
_RUNTIME_ENV: Final = _new_env(check=False)


# --------------------------------------------------------------------------- devices


def _split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


class CELDevice:
    """One device as selectors see it, converted once and reused for every selector."""

    __slots__ = (
        "_activation",
        "_attribute_domains",
        "_capacity_domains",
        "_data",
        "_error",
        "_variants",
        "allow_multiple_allocations",
        "driver",
    )

    def __init__(
        self,
        driver: str,
        attributes: Mapping[str, DeviceAttributeValue],
        capacity: Mapping[str, Fraction],
        allow_multiple_allocations: bool = False,
    ) -> None:
        self.driver = driver
        self.allow_multiple_allocations = allow_multiple_allocations
        self._error: str | None = None
        attrs: dict[str, dict[str, Any]] = {}
        for name, value in attributes.items():
            domain, ident = _split_qualified_name(name, driver)
            converted: Any = value
            if isinstance(value, DeviceVersion):
                try:
                    converted = {_SEMVER_TAG: _parse_semver(str(value))}
                except ValueError as err:
                    # Upstream reports a broken version when the device is matched, not earlier.
                    if self._error is None:
                        self._error = f"attribute {name}: parse semantic version: {err}"
                    continue
            elif not isinstance(value, bool | int | str):
                if self._error is None:
                    self._error = f"attribute {name}: unsupported attribute value"
                continue
            attrs.setdefault(domain, {})[ident] = converted
        caps: dict[str, dict[str, Any]] = {}
        for name, quantity in capacity.items():
            domain, ident = _split_qualified_name(name, driver)
            caps.setdefault(domain, {})[ident] = _quantity_value(Fraction(quantity))
        self._attribute_domains = frozenset(attrs)
        self._capacity_domains = frozenset(caps)
        self._data: dict[str, Any] = {
            "driver": driver,
            "allowMultipleAllocations": allow_multiple_allocations,
            "attributes": attrs,
            "capacity": caps,
        }
        self._activation: Any = _RUNTIME_ENV.Activation({"device": self._data})
        self._variants: dict[tuple[frozenset[str], frozenset[str]], Any] | None = None

    def _activation_with(self, attribute_domains: frozenset[str], capacity_domains: frozenset[str]) -> Any:
        """The activation where the given domains exist (empty when the device lacks them)."""
        missing_attrs = attribute_domains - self._attribute_domains
        missing_caps = capacity_domains - self._capacity_domains
        if not missing_attrs and not missing_caps:
            return self._activation
        key = (missing_attrs, missing_caps)
        if self._variants is None:
            self._variants = {}
        activation = self._variants.get(key)
        if activation is None:
            attrs = dict(self._data["attributes"])
            attrs.update((d, {}) for d in missing_attrs)
            caps = dict(self._data["capacity"])
            caps.update((d, {}) for d in missing_caps)
            data = {**self._data, "attributes": attrs, "capacity": caps}
            activation = _RUNTIME_ENV.Activation({"device": data})
            self._variants[key] = activation
        return activation


# --------------------------------------------------------------------------- selectors

_STATUS_PREFIX_RE: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX_RE: Final = re.compile(r" \[[A-Z_]+\]$")
_KEY_NOT_FOUND_RE: Final = re.compile(r'Key not found in map : "(.*)"$', re.DOTALL)
_NO_OVERLOAD_RE: Final = re.compile(r"^No matching overloads found : ")


def _runtime_message(raw: str) -> str:
    """The runtime's error text in cel-go's words, so messages read as upstream's."""
    text = _STATUS_SUFFIX_RE.sub("", _STATUS_PREFIX_RE.sub("", raw.strip()))
    m = _KEY_NOT_FOUND_RE.search(text)
    if m:
        return f"no such key: {m.group(1)}"
    if _NO_OVERLOAD_RE.search(text):
        return "no such overload"
    if text == "divide by zero":
        return "division by zero"
    if text == "integer overflow":
        return "integer overflow"
    return text


def _compile_message(raw: str) -> str:
    text = _STATUS_SUFFIX_RE.sub("", _STATUS_PREFIX_RE.sub("", raw.strip()))
    return text


class CompiledSelector:
    """A compiled selector: evaluate it against any number of devices."""

    __slots__ = (
        "_attribute_domains",
        "_capacity_domains",
        "_over_limit",
        "_program",
        "expression",
        "max_cost",
    )

    def __init__(
        self,
        expression: str,
        program: Any,
        max_cost: int,
        attribute_domains: frozenset[str],
        capacity_domains: frozenset[str],
    ) -> None:
        self.expression = expression
        #: The worst-case cost estimate (cel-go's units); compare with :data:`CEL_SELECTOR_MAX_COST`.
        self.max_cost = max_cost
        self._program = program
        self._attribute_domains = attribute_domains
        self._capacity_domains = capacity_domains
        self._over_limit = max_cost > CEL_SELECTOR_MAX_COST

    def matches(self, device: CELDevice) -> bool:
        """Whether the device is selected; raises :class:`CELError` on a runtime error or a non-bool."""
        if self._over_limit:
            raise CELError(_COST_LIMIT_EXCEEDED)
        if device._error is not None:
            raise CELError(device._error)
        activation = device._activation
        if not (
            self._attribute_domains <= device._attribute_domains
            and self._capacity_domains <= device._capacity_domains
        ):
            activation = device._activation_with(self._attribute_domains, self._capacity_domains)
        result = self._program.eval(activation)
        value = result.value()
        if value is True or value is False:
            return bool(value)
        kind = result.type()
        if kind == _T.ERROR:
            raise CELError(_runtime_message(str(value)))
        type_name = kind.name().lower()
        if type_name.startswith("map") and isinstance(value, dict):
            if _QUANTITY_TAG in value:
                type_name = _QUANTITY_TAG
            elif _SEMVER_TAG in value:
                type_name = _SEMVER_TAG
        type_name = {"int64": "int", "uint64": "uint"}.get(type_name, type_name)
        raise CELError(
            f"CEL result of type {type_name} could not be converted to bool: "
            f"unsupported type conversion from '{type_name}' to bool"
        )

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"


def _located(ast: CheckedAst, node: Node, expression: str, message: str) -> str:
    """An error in cel-go's format: position, message and the source line with a caret."""
    line, column = ast.location(node.id)
    lines = expression.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{column}: {message}\n | {source}\n | {'.' * (column - 1)}^"


def _is_device(node: Node | None, shadowed: frozenset[str]) -> bool:
    return node is not None and node.kind == "ident" and node.name == "device" and "device" not in shadowed


def _inspect(ast: CheckedAst, expression: str) -> tuple[frozenset[str], frozenset[str]]:
    """Check the fields read from ``device`` and collect the domains looked up by a literal key."""
    attr_domains: set[str] = set()
    cap_domains: set[str] = set()

    def visit(node: Node | None, shadowed: frozenset[str]) -> None:
        if node is None:
            return
        if node.kind == "select" and _is_device(node.operand, shadowed) and node.name not in DEVICE_FIELDS:
            raise CELError(
                "compilation failed: " + _located(ast, node, expression, f"undefined field '{node.name}'")
            )
        target: Node | None = None
        key: str | None = None
        if node.kind == "call" and node.name == "_[_]" and len(node.args) == 2:
            target = node.args[0]
            if node.args[1].kind == "const" and isinstance(node.args[1].value, str):
                key = node.args[1].value
        elif node.kind == "select":
            target, key = node.operand, node.name
        if (
            target is not None
            and key is not None
            and target.kind == "select"
            and _is_device(target.operand, shadowed)
        ):
            if target.name == "attributes":
                attr_domains.add(key)
            elif target.name == "capacity":
                cap_domains.add(key)
        if node.kind == "comprehension":
            visit(node.iter_range, shadowed)
            visit(node.accu_init, shadowed)
            inner = shadowed | {node.iter_var, node.iter_var2, node.accu_var}
            visit(node.loop_condition, inner)
            visit(node.loop_step, inner)
            visit(node.result, shadowed | {node.accu_var})
            return
        visit(node.operand, shadowed)
        for a in node.args:
            visit(a, shadowed)
        for k, v in node.entries:
            visit(k, shadowed)
            visit(v, shadowed)

    visit(ast.expr, frozenset())
    return frozenset(attr_domains), frozenset(cap_domains)


_cache: dict[str, CompiledSelector | CELError] = {}
_cache_lock = threading.Lock()
_CACHE_LIMIT: Final = 8192


def _compile(expression: str) -> CompiledSelector:
    try:
        checked = _CHECK_ENV.compile(expression)
    except RuntimeError as err:
        raise CELError("compilation failed: " + _compile_message(str(err))) from None
    ast = decode_checked_expr(checked.serialize())
    attr_domains, cap_domains = _inspect(ast, expression)
    cost, output = estimate_cost(ast)
    if output.kind not in ("bool", "dyn", "any"):
        raise CELError(f"must evaluate to bool or the unknown type, not {format_type(output)}")
    try:
        program = _RUNTIME_ENV.compile(expression, disable_check=True)
    except RuntimeError as err:  # pragma: no cover - the checker accepted it, so the parser does
        raise CELError("program instantiation failed: " + _compile_message(str(err))) from None
    return CompiledSelector(expression, program, cost.max, attr_domains, cap_domains)


def compile_selector(expression: str) -> CompiledSelector:
    """Compile a selector once; later calls with the same text return the same object.

    Raises :class:`CELError` with upstream's message when the expression does not compile.
    """
    hit = _cache.get(expression)
    if hit is None:
        try:
            hit = _compile(expression)
        except CELError as err:
            hit = err
        with _cache_lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            hit = _cache.setdefault(expression, hit)
    if isinstance(hit, CELError):
        raise CELError(*hit.args)
    return hit


def selector_validation_error(expression: str) -> str | None:
    """What the API server says about a selector's expression, or None when it is valid.

    Upstream's field errors: too long, the compile error's detail, or ``too complex, exceeds cost
    limit`` when the worst-case cost is above :data:`CEL_SELECTOR_MAX_COST`.
    """
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return f"may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
    try:
        selector = compile_selector(expression)
    except CELError as err:
        return str(err)
    if selector.max_cost > CEL_SELECTOR_MAX_COST:
        return "too complex, exceeds cost limit"
    return None
