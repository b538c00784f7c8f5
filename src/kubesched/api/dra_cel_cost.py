"""The checked CEL syntax tree of a DRA selector, and its worst-case cost.

The CEL runtime we use (the official C++ implementation behind ``cel-expr-python``) type-checks
expressions but neither estimates costs nor exposes its syntax tree except as a serialized
``cel.expr.CheckedExpr`` protobuf. This module reads that message with a few lines of wire-format
decoding (no protobuf dependency) and computes the same static cost estimate as cel-go's
``checker.Cost`` with Kubernetes' cost estimator and the DRA size estimator, so that a selector over
the limit is refused as the API server refuses it.

Sizes follow the DRA device declaration: a driver name has at most 63 characters, a domain 63, an
attribute or capacity identifier 32, an attribute value 64, and a device has at most 32 attributes
and capacities per map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

__all__ = ["CheckedAst", "Node", "TypeDesc", "decode_checked_expr", "estimate_cost", "format_type"]

_UINT64_MAX: Final = 2**64 - 1
_STRING_TRAVERSAL_COST_FACTOR: Final = 0.1
_REGEX_STRING_LENGTH_COST_FACTOR: Final = 0.25
_LIST_CREATE_BASE_COST: Final = 10
_MAP_CREATE_BASE_COST: Final = 30
_STRUCT_CREATE_BASE_COST: Final = 40

# Limits from resource.k8s.io/v1 that bound the size of what a selector can reach.
DRIVER_NAME_MAX_LENGTH: Final = 63
DEVICE_MAX_DOMAIN_LENGTH: Final = 63
DEVICE_MAX_ID_LENGTH: Final = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: Final = 64
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: Final = 32

_ACCUMULATOR_NAMES: Final = frozenset({"@result", "__result__"})


# --------------------------------------------------------------------------- protobuf wire format


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = 0
    result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message: ints for varints/fixed, bytes for the rest."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    n = len(buf)
    while i < n:
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value = int.from_bytes(buf[i : i + 8], "little")
            i += 8
        elif wire == 2:
            length, i = _varint(buf, i)
            value = buf[i : i + length]
            i += length
        elif wire == 5:
            value = int.from_bytes(buf[i : i + 4], "little")
            i += 4
        else:  # pragma: no cover - groups are not used by cel.expr
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, value))
    return out


def _signed64(v: int) -> int:
    return v - 2**64 if v >= 2**63 else v


# --------------------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class TypeDesc:
    """A checked CEL type: ``kind`` is one of dyn, null, bool, int, uint, double, string, bytes, list,
    map, abstract, message, param, type, error, any, timestamp, duration, wrapper, function."""

    kind: str
    name: str = ""
    params: tuple[TypeDesc, ...] = ()


_DYN: Final = TypeDesc("dyn")
_PRIMITIVES: Final = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN: Final = {1: "any", 2: "timestamp", 3: "duration"}


def _decode_type(buf: bytes) -> TypeDesc:
    for number, value in _fields(buf):
        if number == 1:
            return _DYN
        if number == 2:
            return TypeDesc("null")
        if number == 3 and isinstance(value, int):
            return TypeDesc(_PRIMITIVES.get(value, "dyn"))
        if number == 4 and isinstance(value, int):
            return TypeDesc("wrapper", params=(TypeDesc(_PRIMITIVES.get(value, "dyn")),))
        if number == 5 and isinstance(value, int):
            return TypeDesc(_WELL_KNOWN.get(value, "dyn"))
        if number == 6 and isinstance(value, bytes):
            elem = [_decode_type(v) for n, v in _fields(value) if n == 1 and isinstance(v, bytes)]
            return TypeDesc("list", params=(elem[0] if elem else _DYN,))
        if number == 7 and isinstance(value, bytes):
            kv = {n: _decode_type(v) for n, v in _fields(value) if isinstance(v, bytes)}
            return TypeDesc("map", params=(kv.get(1, _DYN), kv.get(2, _DYN)))
        if number == 8:
            return TypeDesc("function")
        if number == 9 and isinstance(value, bytes):
            return TypeDesc("message", name=value.decode())
        if number == 10 and isinstance(value, bytes):
            return TypeDesc("param", name=value.decode())
        if number == 11 and isinstance(value, bytes):
            return TypeDesc("type", params=(_decode_type(value),))
        if number == 12:
            return TypeDesc("error")
        if number == 14 and isinstance(value, bytes):
            name = ""
            params: list[TypeDesc] = []
            for n, v in _fields(value):
                if n == 1 and isinstance(v, bytes):
                    name = v.decode()
                elif n == 2 and isinstance(v, bytes):
                    params.append(_decode_type(v))
            return TypeDesc("abstract", name=name, params=tuple(params))
    return _DYN


def format_type(t: TypeDesc) -> str:
    """The type's name as cel-go prints it in messages (``int``, ``list(string)``, ...)."""
    if t.kind in ("list", "type") or (t.kind == "abstract" and t.params):
        inner = ", ".join(format_type(p) for p in t.params)
        return f"{t.name or t.kind}({inner})"
    if t.kind == "map":
        return f"map({format_type(t.params[0])}, {format_type(t.params[1])})"
    if t.kind in ("abstract", "message", "param"):
        return t.name
    if t.kind == "null":
        return "null_type"
    if t.kind == "wrapper":
        return f"wrapper({format_type(t.params[0])})"
    if t.kind == "timestamp":
        return "google.protobuf.Timestamp"
    if t.kind == "duration":
        return "google.protobuf.Duration"
    if t.kind == "any":
        return "google.protobuf.Any"
    return t.kind


# --------------------------------------------------------------------------- expressions


@dataclass(slots=True)
class Node:
    """One expression of the syntax tree (cel.expr.Expr)."""

    id: int
    kind: str  # const, ident, select, call, list, map, struct, comprehension
    name: str = ""  # identifier, selected field or called function
    value: object = None  # a constant's value
    operand: Node | None = None  # select operand or call target
    args: list[Node] = field(default_factory=list)  # call arguments or list elements
    entries: list[tuple[Node, Node]] = field(default_factory=list)  # map entries
    test_only: bool = False
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None


def _decode_constant(buf: bytes) -> object:
    for number, value in _fields(buf):
        if number == 1:
            return None
        if number == 2 and isinstance(value, int):
            return bool(value)
        if number == 3 and isinstance(value, int):
            return _signed64(value)
        if number == 4 and isinstance(value, int):
            return ("uint", value)
        if number == 5 and isinstance(value, int):
            return ("double", value)
        if number == 6 and isinstance(value, bytes):
            return value.decode()
        if number == 7 and isinstance(value, bytes):
            return value
    return None


def _decode_expr(buf: bytes) -> Node:
    node = Node(id=0, kind="const")
    for number, value in _fields(buf):
        if number == 2 and isinstance(value, int):
            node.id = _signed64(value)
            continue
        if not isinstance(value, bytes):
            continue
        sub = _fields(value)
        if number == 3:
            node.kind = "const"
            node.value = _decode_constant(value)
        elif number == 4:
            node.kind = "ident"
            node.name = next((v.decode() for n, v in sub if n == 1 and isinstance(v, bytes)), "")
        elif number == 5:
            node.kind = "select"
            for n, v in sub:
                if n == 1 and isinstance(v, bytes):
                    node.operand = _decode_expr(v)
                elif n == 2 and isinstance(v, bytes):
                    node.name = v.decode()
                elif n == 3 and isinstance(v, int):
                    node.test_only = bool(v)
        elif number == 6:
            node.kind = "call"
            for n, v in sub:
                if n == 1 and isinstance(v, bytes):
                    node.operand = _decode_expr(v)
                elif n == 2 and isinstance(v, bytes):
                    node.name = v.decode()
                elif n == 3 and isinstance(v, bytes):
                    node.args.append(_decode_expr(v))
        elif number == 7:
            node.kind = "list"
            node.args = [_decode_expr(v) for n, v in sub if n == 1 and isinstance(v, bytes)]
        elif number == 8:
            message_name = ""
            for n, v in sub:
                if n == 1 and isinstance(v, bytes):
                    message_name = v.decode()
                elif n == 2 and isinstance(v, bytes):
                    key: Node | None = None
                    val: Node | None = None
                    for en, ev in _fields(v):
                        if en == 3 and isinstance(ev, bytes):
                            key = _decode_expr(ev)
                        elif en == 4 and isinstance(ev, bytes):
                            val = _decode_expr(ev)
                    if val is not None:
                        node.entries.append((key or Node(id=0, kind="const"), val))
            node.kind = "struct" if message_name else "map"
            node.name = message_name
        elif number == 9:
            node.kind = "comprehension"
            for n, v in sub:
                if not isinstance(v, bytes):
                    continue
                if n == 1:
                    node.iter_var = v.decode()
                elif n == 2:
                    node.iter_range = _decode_expr(v)
                elif n == 3:
                    node.accu_var = v.decode()
                elif n == 4:
                    node.accu_init = _decode_expr(v)
                elif n == 5:
                    node.loop_condition = _decode_expr(v)
                elif n == 6:
                    node.loop_step = _decode_expr(v)
                elif n == 7:
                    node.result = _decode_expr(v)
                elif n == 8:
                    node.iter_var2 = v.decode()
    return node


@dataclass(slots=True)
class CheckedAst:
    """A type-checked expression: the tree, the type of each node, the overloads of each call and
    the source offset of each node."""

    expr: Node
    types: dict[int, TypeDesc]
    overloads: dict[int, tuple[str, ...]]
    positions: dict[int, int]
    line_offsets: list[int]

    def location(self, node_id: int) -> tuple[int, int]:
        """1-based line and column of a node, as cel-go reports them."""
        offset = self.positions.get(node_id, 0)
        line = 1
        start = 0
        for end in self.line_offsets:
            if offset < end:
                break
            line += 1
            start = end
        return line, offset - start + 1


def _decode_map_entries(buf: bytes) -> tuple[int, bytes] | None:
    key: int | None = None
    val: bytes | None = None
    for n, v in _fields(buf):
        if n == 1 and isinstance(v, int):
            key = _signed64(v)
        elif n == 2 and isinstance(v, bytes):
            val = v
    if key is None:
        return None
    return key, val or b""


def decode_checked_expr(serialized: bytes) -> CheckedAst:
    """Decode the ``google.protobuf.Any``-wrapped ``cel.expr.CheckedExpr`` the runtime serializes."""
    payload = serialized
    any_fields = _fields(serialized)
    if any_fields and any_fields[0][0] == 1:
        payload = next((v for n, v in any_fields if n == 2 and isinstance(v, bytes)), b"")
    types: dict[int, TypeDesc] = {}
    overloads: dict[int, tuple[str, ...]] = {}
    positions: dict[int, int] = {}
    line_offsets: list[int] = []
    expr = Node(id=0, kind="const")
    for number, value in _fields(payload):
        if not isinstance(value, bytes):
            continue
        if number == 2:
            entry = _decode_map_entries(value)
            if entry is not None:
                ids = tuple(v.decode() for n, v in _fields(entry[1]) if n == 3 and isinstance(v, bytes))
                overloads[entry[0]] = ids
        elif number == 3:
            entry = _decode_map_entries(value)
            if entry is not None:
                types[entry[0]] = _decode_type(entry[1])
        elif number == 4:
            expr = _decode_expr(value)
        elif number == 5:
            for n, v in _fields(value):
                if n == 3:
                    if isinstance(v, int):
                        line_offsets.append(v)
                    else:  # packed
                        i = 0
                        while i < len(v):
                            off, i = _varint(v, i)
                            line_offsets.append(off)
                elif n == 4 and isinstance(v, bytes):
                    pos = _decode_map_entries(v)
                    if pos is not None:
                        positions[pos[0]] = next(
                            (x for m, x in _fields(v) if m == 2 and isinstance(x, int)), 0
                        )
    return CheckedAst(expr, types, overloads, positions, line_offsets)


# --------------------------------------------------------------------------- cost estimation


@dataclass(frozen=True, slots=True)
class Estimate:
    """A [min, max] range of sizes or costs with saturating arithmetic, as cel-go's estimates."""

    min: int
    max: int

    def add(self, o: Estimate) -> Estimate:
        return Estimate(min(self.min + o.min, _UINT64_MAX), min(self.max + o.max, _UINT64_MAX))

    def multiply(self, o: Estimate) -> Estimate:
        return Estimate(min(self.min * o.min, _UINT64_MAX), min(self.max * o.max, _UINT64_MAX))

    def factor(self, f: float) -> Estimate:
        return Estimate(_by_factor(self.min, f), _by_factor(self.max, f))

    def union(self, o: Estimate) -> Estimate:
        return Estimate(min(self.min, o.min), max(self.max, o.max))


def _by_factor(x: int, f: float) -> int:
    if x > 0 and f > 0 and float(x) > _UINT64_MAX / f:
        return _UINT64_MAX
    value = math.ceil(float(x) * f)
    return _UINT64_MAX if value >= 2.0**64 else int(value)


_UNKNOWN: Final = Estimate(0, _UINT64_MAX)
_ZERO: Final = Estimate(0, 0)
_ONE: Final = Estimate(1, 1)


@dataclass(frozen=True, slots=True)
class _EntrySize:
    container: str  # "list" or "map"
    key: Estimate
    val: Estimate


@dataclass(frozen=True, slots=True)
class _DeclNode:
    """A node of the declared ``device`` type: what the size estimator knows about a path."""

    max_elements: int | None
    kind: str
    fields: tuple[tuple[str, _DeclNode], ...] = ()
    key: _DeclNode | None = None
    elem: _DeclNode | None = None


_ATTRIBUTE: Final = _DeclNode(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH, "any")
_QUANTITY: Final = _DeclNode(None, "struct")
_DOMAIN: Final = _DeclNode(DEVICE_MAX_DOMAIN_LENGTH, "string")
_ID: Final = _DeclNode(DEVICE_MAX_ID_LENGTH, "string")
_INNER_ATTRIBUTES: Final = _DeclNode(
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE, "map", key=_ID, elem=_ATTRIBUTE
)
_INNER_CAPACITY: Final = _DeclNode(MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE, "map", key=_ID, elem=_QUANTITY)
_DEVICE: Final = _DeclNode(
    None,
    "struct",
    fields=(
        ("driver", _DeclNode(DRIVER_NAME_MAX_LENGTH, "string")),
        ("allowMultipleAllocations", _DeclNode(1, "bool")),
        (
            "attributes",
            _DeclNode(MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE, "map", key=_DOMAIN, elem=_INNER_ATTRIBUTES),
        ),
        (
            "capacity",
            _DeclNode(MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE, "map", key=_DOMAIN, elem=_INNER_CAPACITY),
        ),
    ),
)
DEVICE_FIELDS: Final = frozenset(name for name, _ in _DEVICE.fields)


def _decl_for_path(path: tuple[str, ...], for_type: bool = False) -> _DeclNode | None:
    """The declared node a path reaches. Sizes are only known for attribute values reached by
    name (as upstream's size estimator); ``for_type`` also follows a name into any map's values."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for name in path[1:]:
        if name in ("@items", "@values"):
            if node.elem is None:
                return None
            node = node.elem
        elif name == "@keys":
            if node.key is None:
                return None
            node = node.key
        else:
            found = dict(node.fields).get(name)
            if found is None:
                # Every attribute of a domain has the same bound, whatever its name.
                if node.elem is _ATTRIBUTE or (for_type and node.kind == "map" and node.elem is not None):
                    node = node.elem
                    continue
                return None
            node = found
    return node


@dataclass(slots=True)
class _LocalVar:
    path: tuple[str, ...]
    size: Estimate | None
    entry: _EntrySize | None


_FIXED_COST_FUNCTIONS: Final = frozenset(
    {
        "sign",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "add",
        "sub",
        "major",
        "minor",
        "patch",
        "getScheme",
        "getHostname",
        "getHost",
        "getPort",
        "getEscapedPath",
        "getQuery",
    }
)
_OPAQUE_EQUALITY_TYPES: Final = frozenset({"kubernetes.Quantity", "kubernetes.Semver"})
_STRING_COMPARISONS: Final = frozenset(
    {
        "less_string",
        "greater_string",
        "less_equals_string",
        "greater_equals_string",
        "less_bytes",
        "greater_bytes",
        "less_equals_bytes",
        "greater_equals_bytes",
        "equals",
        "not_equals",
    }
)


class _Coster:
    """cel-go's checker.Cost with Kubernetes' library cost estimator and DRA's size estimator."""

    def __init__(self, ast: CheckedAst) -> None:
        self.ast = ast
        self.paths: dict[int, tuple[str, ...]] = {}
        self.local: dict[str, list[_LocalVar]] = {}
        self.sizes: dict[int, Estimate] = {}
        self.entries: dict[int, _EntrySize] = {}

    # -- bookkeeping
    def type_of(self, e: Node) -> TypeDesc:
        decl = _decl_for_path(self.path(e), for_type=True)
        if decl is not None:
            return _decl_type(decl)
        return self.ast.types.get(e.id, _DYN)

    def path(self, e: Node) -> tuple[str, ...]:
        if e.kind == "ident":
            stack = self.local.get(e.name)
            if stack:
                return stack[-1].path
        return self.paths.get(e.id, ())

    def push(self, name: str, var: _LocalVar) -> None:
        self.local.setdefault(name, []).append(var)

    def pop(self, name: str) -> None:
        stack = self.local.get(name)
        if stack:
            stack.pop()

    def size(self, e: Node) -> Estimate | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        if e.kind == "const":
            v = e.value
            if isinstance(v, str):
                return Estimate(len(v), len(v))
            if isinstance(v, bytes):
                return Estimate(len(v), len(v))
            return _ONE
        if e.kind == "list":
            return Estimate(len(e.args), len(e.args))
        if e.kind == "map":
            return Estimate(len(e.entries), len(e.entries))
        path = self.path(e)
        if path and path[0] in _ACCUMULATOR_NAMES:
            path = ()
        decl = _decl_for_path(path)
        if decl is not None and decl.max_elements is not None:
            est = Estimate(0, decl.max_elements)
            self.sizes[e.id] = est
            return est
        t = self.ast.types.get(e.id, _DYN)
        if t.kind in ("bool", "double", "duration", "int", "timestamp", "uint"):
            return _ONE
        if e.kind == "ident":
            stack = self.local.get(e.name)
            if stack and stack[-1].size is not None:
                return stack[-1].size
        return None

    def size_or_unknown(self, e: Node) -> Estimate:
        s = self.size(e)
        return _UNKNOWN if s is None else s

    def entry(self, e: Node) -> _EntrySize | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if e.kind == "ident":
            stack = self.local.get(e.name)
            if stack and stack[-1].entry is not None:
                return stack[-1].entry
        return None

    # -- the walk
    def cost(self, e: Node | None) -> Estimate:
        if e is None:
            return _ZERO
        if e.kind == "const":
            return _ZERO
        if e.kind == "ident":
            stack = self.local.get(e.name)
            self.paths[e.id] = stack[-1].path if stack else (e.name,)
            return _ONE
        if e.kind == "select":
            return self.cost_select(e)
        if e.kind == "call":
            return self.cost_call(e)
        if e.kind == "list":
            total = _ZERO
            item = Estimate(0 if not e.args else _UINT64_MAX, 0)
            for a in e.args:
                total = total.add(self.cost(a))
                item = item.union(self.size_or_unknown(a))
            self.entries[e.id] = _EntrySize("list", _ONE, item)
            return total.add(Estimate(_LIST_CREATE_BASE_COST, _LIST_CREATE_BASE_COST))
        if e.kind == "map":
            total = _ZERO
            empty = not e.entries
            ks = Estimate(0 if empty else _UINT64_MAX, 0)
            vs = Estimate(0 if empty else _UINT64_MAX, 0)
            for k, v in e.entries:
                total = total.add(self.cost(k)).add(self.cost(v))
                ks = ks.union(self.size_or_unknown(k))
                vs = vs.union(self.size_or_unknown(v))
            self.entries[e.id] = _EntrySize("map", ks, vs)
            return total.add(Estimate(_MAP_CREATE_BASE_COST, _MAP_CREATE_BASE_COST))
        if e.kind == "struct":
            total = _ZERO
            for _, v in e.entries:
                total = total.add(self.cost(v))
            return total.add(Estimate(_STRUCT_CREATE_BASE_COST, _STRUCT_CREATE_BASE_COST))
        if e.kind == "comprehension":
            if self.is_bind(e):
                return self.cost_bind(e)
            return self.cost_comprehension(e)
        return _ZERO

    def cost_select(self, e: Node) -> Estimate:
        assert e.operand is not None
        if e.test_only:
            # Presence tests are free in Kubernetes' environments (PresenceTestHasCost(false)).
            return self.cost(e.operand)
        total = self.cost(e.operand)
        if self.type_of(e.operand).kind in ("map", "message", "param"):
            total = total.add(_ONE)
        self.paths[e.id] = (*self.path(e.operand), e.name)
        return total

    def cost_call(self, e: Node) -> Estimate:
        if e.name == "dyn" and len(e.args) == 1 and e.operand is None:
            arg_cost = self.cost(e.args[0])
            s = self.size(e.args[0])
            if s is not None:
                self.sizes[e.id] = s
            en = self.entry(e.args[0])
            if en is not None:
                self.entries[e.id] = en
            return _ONE.add(arg_cost)
        arg_costs = [self.cost(a) for a in e.args]
        overload_ids = self.ast.overloads.get(e.id, ())
        if not overload_ids:
            return _ZERO
        if e.name == "@in" and len(e.args) == 2:
            # The checker sees `device` as a map of dyn; the declared device type says which
            # container the right-hand side is, and with it which overload upstream picks.
            container = self.type_of(e.args[1]).kind
            if container in ("map", "list"):
                overload_ids = (f"in_{container}",)
        total = _ZERO
        if e.operand is not None:
            total = total.add(self.cost(e.operand))
        fn: Estimate | None = None
        result_size: Estimate | None = None
        for overload in overload_ids:
            call_cost, rsize = self.function_cost(e, overload, arg_costs)
            fn = call_cost if fn is None else fn.union(call_cost)
            if rsize is not None:
                result_size = rsize if result_size is None else result_size.union(rsize)
            if overload in ("index_list", "index_map") and e.args:
                en = self.entry(e.args[0])
                result_size = en.val if en is not None else None
                suffix = "@items" if overload == "index_list" else "@values"
                self.paths[e.id] = (*self.path(e.args[0]), suffix)
            if result_size is None:
                result_size = self.size(e)
        if result_size is not None:
            self.sizes[e.id] = result_size
        return total.add(fn if fn is not None else _ZERO)

    def function_cost(
        self, e: Node, overload: str, arg_costs: list[Estimate]
    ) -> tuple[Estimate, Estimate | None]:
        args = e.args
        target = e.operand
        arg_sum = _ZERO
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        k8s = self.k8s_call_cost(e)
        if k8s is not None:
            return k8s[0].add(arg_sum), k8s[1]
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(_STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), None
        if overload in ("in_list",) and len(args) == 2:
            return self.size_or_unknown(args[1]).factor(1).add(arg_sum), None
        if overload in ("matches_string", "matches") and target is not None and len(args) == 1:
            str_cost = self.size_or_unknown(target).add(_ONE).factor(_STRING_TRAVERSAL_COST_FACTOR)
            regex_cost = self.size_or_unknown(args[0]).factor(_REGEX_STRING_LENGTH_COST_FACTOR)
            return str_cost.multiply(regex_cost).add(arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            s = self.size_or_unknown(target).factor(_STRING_TRAVERSAL_COST_FACTOR)
            sub = self.size_or_unknown(args[0]).factor(_STRING_TRAVERSAL_COST_FACTOR)
            return s.multiply(sub).add(arg_sum), None
        if overload in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs[0], arg_costs[1]
            return Estimate(lhs.min, lhs.add(rhs).max), None
        if overload == "conditional":
            size = self.size_or_unknown(args[1]).union(self.size_or_unknown(args[2]))
            e1, e2 = self.entry(args[1]), self.entry(args[2])
            if e1 is not None and e2 is not None:
                self.entries[e.id] = _EntrySize(e1.container, e1.key.union(e2.key), e1.val.union(e2.val))
            return arg_costs[0].add(arg_costs[1].union(arg_costs[2])), size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = self.size_or_unknown(args[0]).add(self.size_or_unknown(args[1]))
            e1, e2 = self.entry(args[0]), self.entry(args[1])
            if e1 is not None and e2 is not None:
                self.entries[e.id] = _EntrySize(e1.container, e1.key.union(e2.key), e1.val.union(e2.val))
            if overload == "add_list":
                return _ONE.add(arg_sum), result
            return result.factor(_STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), result
        if overload in _STRING_COMPARISONS and len(args) == 2:
            lhs = self.size_or_unknown(args[0])
            rhs = self.size_or_unknown(args[1])
            smallest = min(lhs.max, rhs.max)
            low = 1 if smallest > 0 else 0
            return Estimate(low, smallest).factor(_STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), None
        return _ONE.add(arg_sum), None

    def k8s_call_cost(self, e: Node) -> tuple[Estimate, Estimate | None] | None:
        """Kubernetes' library.CostEstimator.EstimateCallCost for the functions this environment has."""
        name = e.name
        target = e.operand
        args = e.args
        if name in _FIXED_COST_FUNCTIONS:
            return _ONE, None
        if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return self.size_or_unknown(args[0]).factor(_STRING_TRAVERSAL_COST_FACTOR), None
        if name in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            s = self.size_or_unknown(target)
            return s.factor(_STRING_TRAVERSAL_COST_FACTOR), s
        if name == "split" and target is not None:
            s = self.size_or_unknown(target)
            most = s.max
            if len(args) > 1 and args[1].kind == "const" and isinstance(args[1].value, int):
                most = args[1].value
            return s.factor(2 * _STRING_TRAVERSAL_COST_FACTOR), Estimate(0, most)
        if name == "replace" and target is not None and len(args) >= 2:
            s = self.size_or_unknown(target)
            return s.factor(2 * _STRING_TRAVERSAL_COST_FACTOR), None
        if name in ("find", "findAll") and target is not None and args:
            s = self.size_or_unknown(target)
            str_cost = s.add(_ONE).factor(_STRING_TRAVERSAL_COST_FACTOR)
            regex_cost = self.size_or_unknown(args[0]).factor(_REGEX_STRING_LENGTH_COST_FACTOR)
            return str_cost.multiply(regex_cost), Estimate(0, s.max)
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            t = self.type_of(target)
            s = self.size_or_unknown(target)
            if t.kind == "list":
                elem = t.params[0] if t.params else _DYN
                el_cost = _ONE
                if elem.kind in ("string", "bytes"):
                    el_cost = el_cost.add(_UNKNOWN.factor(_STRING_TRAVERSAL_COST_FACTOR))
                return s.multiply(el_cost), None
            if t.kind == "string":
                return s.factor(_STRING_TRAVERSAL_COST_FACTOR), None
        if name == "_==_" and len(args) == 2:
            lt, rt = self.type_of(args[0]), self.type_of(args[1])
            if lt == rt and lt.kind == "abstract" and lt.name in _OPAQUE_EQUALITY_TYPES:
                return _ONE, None
        return None

    def is_bind(self, e: Node) -> bool:
        r = e.iter_range
        c = e.loop_condition
        return (
            r is not None
            and r.kind == "list"
            and not r.args
            and c is not None
            and c.kind == "const"
            and c.value is False
            and e.accu_var not in _ACCUMULATOR_NAMES
        )

    def cost_bind(self, e: Node) -> Estimate:
        assert e.accu_init is not None and e.result is not None
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push(
            e.accu_var, _LocalVar(self.path(e.accu_init), self.size(e.accu_init), self.entry(e.accu_init))
        )
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        s = self.size(e.result)
        if s is not None:
            self.sizes[e.id] = s
        en = self.entry(e.result)
        if en is not None:
            self.entries[e.id] = en
        return total

    def cost_comprehension(self, e: Node) -> Estimate:
        assert e.iter_range is not None and e.accu_init is not None
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push(
            e.accu_var, _LocalVar(self.path(e.accu_init), self.size(e.accu_init), self.entry(e.accu_init))
        )
        rng = e.iter_range
        en = self.entry(rng)
        container = en.container if en is not None else ""
        if not container:
            container = self.type_of(rng).kind
        range_path = self.path(rng)
        if e.iter_var2:
            key_size = en.key if en is not None else None
            val_size = en.val if en is not None else None
            key_sub = "@indices" if container == "list" else "@keys"
            val_sub = "@items" if container == "list" else "@values"
            self.push(e.iter_var, _LocalVar((*range_path, key_sub), key_size, None))
            self.push(e.iter_var2, _LocalVar((*range_path, val_sub), val_size, None))
        else:
            if container == "list":
                single_size = en.val if en is not None else None
                sub = "@items"
            else:
                single_size = en.key if en is not None else None
                sub = "@keys"
            self.push(e.iter_var, _LocalVar((*range_path, sub), single_size, None))
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self.pop(e.iter_var)
        if e.iter_var2:
            self.pop(e.iter_var2)
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(rng)
        total = total.add(count.multiply(step.add(loop)))
        init = e.accu_init
        if init.kind == "const":
            s = self.size(init)
            if s is not None:
                self.sizes[e.id] = s
        elif init.kind in ("list", "map"):
            self.sizes[e.id] = count
            if e.loop_step is not None:
                step_entry = self.entry(e.loop_step)
                if step_entry is not None:
                    self.entries[e.id] = step_entry
        return total


def _decl_type(decl: _DeclNode) -> TypeDesc:
    if decl is _QUANTITY:
        return TypeDesc("abstract", name="kubernetes.Quantity")
    if decl is _DEVICE:
        return TypeDesc("message", name="kubernetes.DRADevice")
    if decl.kind == "map" and decl.key is not None and decl.elem is not None:
        return TypeDesc("map", params=(_decl_type(decl.key), _decl_type(decl.elem)))
    return TypeDesc(decl.kind)


def estimate_cost(ast: CheckedAst) -> tuple[Estimate, TypeDesc]:
    """The worst-case cost range of evaluating ``ast`` against any valid device, and the type of
    the expression as upstream's checker sees it (which knows the declared fields of ``device``)."""
    coster = _Coster(ast)
    cost = coster.cost(ast.expr)
    decl = _decl_for_path(coster.path(ast.expr), for_type=True)
    output = _decl_type(decl) if decl is not None else ast.types.get(ast.expr.id, _DYN)
    return cost, output
