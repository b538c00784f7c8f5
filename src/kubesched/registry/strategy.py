"""The base of every kind's strategy (upstream's ``rest.RESTCreateStrategy`` and friends): how an
object of one resource is defaulted on create, what an update may change, how it is validated, the
columns ``kubectl get`` prints and the discovery entry that serves it.

A kind with nothing special uses :class:`Strategy` as it is; a kind's module subclasses it and
overrides the hooks it needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.api.kinds import store_kind_in_group
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource_rules import resource_quantities
from kubesched.api.storage_rules import storage_quantities
from kubesched.errors import InputError
from kubesched.registry.errors import bad_request, invalid
from kubesched.store.base import ClusterStore, Obj
from kubesched.store.parsers import DEFAULT_PARSERS

T = TypeVar("T")

Column = tuple[str, str, int]  # name, type, priority (1: only with -o wide)
Row = list[Any]

NAME: Column = ("Name", "string", 0)
AGE: Column = ("Age", "string", 0)

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

#: Top-level fields every kind has.
_TYPE_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
#: Fields every kind may be selected by.
_META_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})

#: Quantities that parsed: requests repeat a few amounts ("100m", "1Gi"), each checked once.
_VALID_QUANTITIES: set[str] = set()
_VALID_QUANTITIES_KEPT = 4096
#: Objects (as JSON, name left out) the schedulers' parser accepted, and how many are kept.
_ACCEPTED_SHAPES: set[bytes] = set()
_ACCEPTED_SHAPES_KEPT = 1024


#: The verbs of a stored resource.
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    """What discovery says about one served resource."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: What discovery says clients may do with it (a review kind is only created).
    verbs: tuple[str, ...] = VERBS
    #: The kind the store keeps its objects under (``api/kinds.py``): the kind itself but where
    #: another group serves a kind of the same name.
    store_kind: str = ""

    def __post_init__(self) -> None:
        if not self.store_kind:
            object.__setattr__(self, "store_kind", store_kind_in_group(self.group, self.kind))

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def status_subresource(self) -> bool:
        return "status" in self.subresources


class Strategy:
    """The rules of one resource; the defaults here fit a kind with a spec and a status."""

    #: Top-level fields the kind has besides apiVersion, kind and metadata (unknown ones are refused
    #: under fieldValidation=Strict and warned about otherwise).
    top_fields: frozenset[str] = frozenset({"spec", "status"})
    #: Whether spec changes bump metadata.generation.
    generation: bool = False
    #: The columns of its ``as=Table`` rows.
    columns: tuple[Column, ...] = (NAME, AGE)
    #: The fields a field selector may name besides metadata.name and metadata.namespace.
    field_paths: frozenset[str] = frozenset()
    #: The feature gate the kind is served behind (None: always served).
    feature_gate: str | None = None
    #: Whether decoding a written body fills in the kind's defaults, as upstream's codec runs a
    #: kind's registered defaulting functions on every decode (create, update and patch alike).
    defaults_on_decode: bool = False

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.kind = resource.kind
        self.store_kind = resource.store_kind
        #: Every field a body may carry at the top level.
        self.known_fields = self.top_fields | _TYPE_FIELDS
        #: Every field a field selector may name.
        self.selectable_fields = self.field_paths | _META_SELECTABLE

    def served(self) -> bool:
        """Whether the API serves the kind now (its feature gate, if any, is on)."""
        return self.feature_gate is None or DEFAULT_FEATURE_GATES.enabled(self.feature_gate)

    # -- names -----------------------------------------------------------------------------------
    def name_valid(self, name: str) -> bool:
        """An object's name must be a lowercase RFC 1123 subdomain."""
        return len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name) is not None

    # -- create ----------------------------------------------------------------------------------
    def defaults(self, obj: dict[str, Any]) -> None:
        """Fill in what the API server (or a kubelet) would before the schedulers see the object."""

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Drop what the server owns from a new object and start its generation."""
        meta = obj["metadata"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(key, None)
        if self.generation:
            meta["generation"] = 1

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        """What the kind's storage hands out before ``new`` is stored, on create (``old`` None) and
        on update of the main resource, reading what others hold in ``store`` (a Service's cluster
        IP and node ports); a refusal is an :class:`ApiError`."""

    # -- update ----------------------------------------------------------------------------------
    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        """Keep what a write of the main resource may not change: uid, creationTimestamp, the
        status of a kind with a status subresource; bump the generation of a changed spec."""
        meta = new["metadata"]
        for key in ("uid", "creationTimestamp"):
            meta[key] = old["metadata"].get(key)
        if self.resource.status_subresource():
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if self.generation:
            generation = int(old["metadata"].get("generation") or 1)
            meta["generation"] = generation + 1 if new.get("spec") != old.get("spec") else generation

    def prepare_for_status_update(self, old: Obj, new: dict[str, Any]) -> None:
        """What a write of the status subresource sets besides the status it carries (``new`` is
        ``old`` with the written status)."""

    # -- validation ------------------------------------------------------------------------------
    def decode(self, body: dict[str, Any]) -> None:
        """What reading a written body into the kind's internal form does, on every write before
        :meth:`validate` (upstream's decoding, conversion and defaulting of the served version): a
        field of the wrong type is a 400, and a kind whose served form differs from what is kept
        converts it here (a Secret's ``stringData`` goes into ``data``)."""
        if self.defaults_on_decode:
            self.defaults(body)

    def validate(self, body: dict[str, Any]) -> None:
        """The schedulers' own parser must accept what is stored: its complaint is a 422. A
        quantity that does not parse is a 400, as upstream's decoder refuses it before validation."""
        self.check_quantities(body)
        parse = DEFAULT_PARSERS.get(self.store_kind)
        if parse is not None:
            self.check_parses(parse, body, str(body["metadata"].get("name", "")))

    def check_quantities(self, body: Mapping[str, Any]) -> None:
        res = self.resource
        for value in quantities(body):
            if type(value) is str and value in _VALID_QUANTITIES:
                continue
            try:
                parse_quantity(value)
            except (QuantityError, TypeError, ValueError):
                raise bad_request(
                    f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                ) from None
            if type(value) is str:
                _remember(_VALID_QUANTITIES, value, _VALID_QUANTITIES_KEPT)

    def check_parses(self, parse: Any, body: Mapping[str, Any], name: str) -> None:
        """``parse`` (one of the store's parsers) must accept ``body``; a refusal is a 422."""
        res = self.resource
        shape = _shape_key(body)
        if shape is not None and shape in _ACCEPTED_SHAPES:
            return  # the same object but for its (non-empty) name was accepted before
        try:
            parse(body, None)
        except InputError as exc:
            field = exc.field or ""
            raise invalid(
                res.kind, res.group, name, [("FieldValueInvalid", field, f"Invalid value: {exc.message}")]
            ) from None
        except Exception as exc:
            raise invalid(
                res.kind, res.group, name, [("FieldValueInvalid", "", f"Invalid value: {exc}")]
            ) from None
        if shape is not None:
            _remember(_ACCEPTED_SHAPES, shape, _ACCEPTED_SHAPES_KEPT)

    # -- tables ----------------------------------------------------------------------------------
    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        """One object's cells under :attr:`columns`."""
        return [meta_of(obj).get("name"), age(meta_of(obj).get("creationTimestamp"), now)]


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def age(ts: Any, now: float) -> str:
    """The Age column of a timestamp."""
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(str(ts)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(max(0.0, now - then))


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def _remember(seen: set[T], value: T, kept: int) -> None:
    """Add ``value`` to a set of values known good, emptied when it holds ``kept`` of them."""
    if len(seen) >= kept:
        seen.clear()
    seen.add(value)


def _shape_key(body: Mapping[str, Any]) -> bytes | None:
    """The object as JSON with its name left out, for objects whose name is a non-empty string
    (what the schedulers' parser checks of a name); None when it cannot be encoded as JSON. The
    pods of one client usually differ only by name: the parser's verdict on one holds for all."""
    meta = body.get("metadata")
    if type(meta) is not dict or type(meta.get("name")) is not str or not meta["name"]:
        return None
    try:
        return orjson.dumps({**body, "metadata": {**meta, "name": ""}})
    except (TypeError, orjson.JSONEncodeError):
        return None


def quantities(obj: Mapping[str, Any]) -> list[Any]:
    """The resource quantities of a pod (or a workload's pod template), a node, a storage object or
    a ``resource.k8s.io`` object."""
    out: list[Any] = [value for _, value in storage_quantities(obj)]
    out += [value for _, value in resource_quantities(obj)]
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        spec = spec["template"].get("spec")
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            containers = spec.get(key)
            for c in containers if isinstance(containers, list) else []:
                resources = c.get("resources") if isinstance(c, dict) else None
                for part in ("requests", "limits"):
                    amounts = resources.get(part) if isinstance(resources, dict) else None
                    if isinstance(amounts, dict):
                        out.extend(amounts.values())
        overhead = spec.get("overhead")
        if isinstance(overhead, dict):
            out.extend(overhead.values())
    status = obj.get("status")
    if obj.get("kind") == "Node" and isinstance(status, dict):
        for part in ("capacity", "allocatable"):
            amounts = status.get(part)
            if isinstance(amounts, dict):
                out.extend(amounts.values())
    return out
