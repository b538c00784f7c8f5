"""Typed, defaulted and validated args for the in-tree plugins (``pluginConfig[*].args``).

Each model mirrors the ``kubescheduler.config.k8s.io/v1`` ``<Plugin>Args`` kind: camelCase field names
(snake_case is accepted too), unknown fields rejected, upstream defaults applied when a field is left
out, and upstream's validation rules checked. :func:`parse_args` turns a raw mapping into a model and
reports problems as :class:`~kubesched.errors.InputError` with a field path relative to ``args``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from kubesched.api.durations import parse_duration
from kubesched.api.node_affinity_terms import ADDED_AFFINITY_FIELD, parse_added_affinity
from kubesched.errors import InputError

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

#: Highest score a RequestedToCapacityRatio / VolumeBinding shape point may carry.
MAX_CUSTOM_PRIORITY_SCORE: Final = 10

Int32 = Annotated[StrictInt, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]

SCORING_STRATEGY_TYPES: Final = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
DEFAULTING_TYPES: Final = ("System", "List")
WHEN_UNSATISFIABLE_ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")
_TOPOLOGY_SPREAD_CONSTRAINT_FIELDS: Final = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ArgsError(ValueError):
    """A validation failure inside an args model, located by a path relative to the failing model."""

    def __init__(self, path: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.path: tuple[str | int, ...] = tuple(path)
        self.message = message


def qualified_name_problem(value: str) -> str | None:
    """Why *value* is not a valid label key / qualified name (``[prefix/]name``), or None if it is."""
    if not value:
        return "must not be empty"
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix:
            return "prefix part must not be empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return (
                "prefix part must be a lowercase DNS subdomain (letters, digits, '-' and '.', at most 253 "
                "characters)"
            )
    if not name:
        return "name part must not be empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_PART.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


class _Args(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        validate_default=False,
    )


class ResourceSpec(_Args):
    """A resource name and its weight in a scoring strategy."""

    name: str
    weight: Int64 = 0


class UtilizationShapePoint(_Args):
    """One point of a piecewise-linear utilization → score function."""

    utilization: Int32
    score: Int32


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


def _check_shape(shape: Sequence[UtilizationShapePoint], path: tuple[str | int, ...]) -> None:
    if not shape:
        raise ArgsError(path, "at least one point must be specified")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ArgsError(
                (*path, i, "utilization"),
                f"utilization values must be sorted in strictly increasing order, got "
                f"{shape[i].utilization} after {shape[i - 1].utilization}",
            )
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            raise ArgsError((*path, i, "utilization"), f"must be in range [0, 100], got {point.utilization}")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ArgsError(
                (*path, i, "score"), f"must be in range [0, {MAX_CUSTOM_PRIORITY_SCORE}], got {point.score}"
            )


class RequestedToCapacityRatioParam(_Args):
    """Shape of the RequestedToCapacityRatio scoring function."""

    shape: list[UtilizationShapePoint] = Field(default_factory=list)


class ScoringStrategy(_Args):
    """NodeResourcesFit scoring strategy."""

    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="after")
    def _default_and_validate(self) -> ScoringStrategy:
        if not self.resources:
            self.resources = _default_resources()
        for res in self.resources:
            if res.weight == 0:
                res.weight = 1
        if self.type not in SCORING_STRATEGY_TYPES:
            raise ArgsError(
                ("type",),
                f"unsupported scoring strategy type {self.type!r}; use one of: "
                + ", ".join(SCORING_STRATEGY_TYPES),
            )
        for i, res in enumerate(self.resources):
            if not 0 < res.weight <= 100:
                raise ArgsError(
                    ("resources", i, "weight"),
                    f"weight of resource {res.name!r} must be in range (0, 100], got {res.weight}",
                )
        if self.type == "RequestedToCapacityRatio":
            if self.requested_to_capacity_ratio is None:
                raise ArgsError(
                    ("requestedToCapacityRatio",),
                    "must be set when type is RequestedToCapacityRatio (give it a shape)",
                )
            _check_shape(self.requested_to_capacity_ratio.shape, ("requestedToCapacityRatio", "shape"))
        elif self.requested_to_capacity_ratio is not None:
            raise ArgsError(
                ("requestedToCapacityRatio",),
                f"must not be set when type is {self.type}; remove it or use type RequestedToCapacityRatio",
            )
        return self


class NodeResourcesFitArgs(_Args):
    """Args of the NodeResourcesFit plugin."""

    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: ScoringStrategy(type="LeastAllocated", resources=_default_resources())
    )

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesFitArgs:
        for i, res in enumerate(self.ignored_resources):
            problem = qualified_name_problem(res)
            if problem:
                raise ArgsError(("ignoredResources", i), f"invalid resource name {res!r}: {problem}")
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                raise ArgsError(
                    ("ignoredResourceGroups", i),
                    f"resource group name {group!r} must not contain '/' (give only the prefix)",
                )
            problem = qualified_name_problem(group)
            if problem:
                raise ArgsError(("ignoredResourceGroups", i), f"invalid resource group {group!r}: {problem}")
        return self


class NodeResourcesBalancedAllocationArgs(_Args):
    """Args of the NodeResourcesBalancedAllocation plugin."""

    resources: list[ResourceSpec] = Field(default_factory=_default_resources)

    @model_validator(mode="after")
    def _default_and_validate(self) -> NodeResourcesBalancedAllocationArgs:
        if not self.resources:
            self.resources = _default_resources()
        seen: set[str] = set()
        for i, res in enumerate(self.resources):
            if res.weight == 0:
                res.weight = 1
            if res.name in seen:
                raise ArgsError(("resources", i, "name"), f"duplicate resource {res.name!r}")
            seen.add(res.name)
            if res.weight != 1:
                raise ArgsError(("resources", i, "weight"), f"must be 1, got {res.weight}")
        return self


class NodeAffinityArgs(_Args):
    """Args of the NodeAffinity plugin. ``addedAffinity`` is kept raw (a v1 NodeAffinity object),
    checked as upstream's ValidateNodeAffinityArgs when the configuration is loaded."""

    added_affinity: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check_added_affinity(self) -> NodeAffinityArgs:
        if self.added_affinity is not None:
            try:
                parse_added_affinity(self.added_affinity)
            except InputError as exc:
                raise ArgsError((exc.field or ADDED_AFFINITY_FIELD,), exc.message) from None
        return self


class InterPodAffinityArgs(_Args):
    """Args of the InterPodAffinity plugin."""

    hard_pod_affinity_weight: Int32 = 1
    ignore_preferred_terms_of_existing_pods: StrictBool = False

    @model_validator(mode="after")
    def _validate(self) -> InterPodAffinityArgs:
        if not 0 <= self.hard_pod_affinity_weight <= 100:
            raise ArgsError(
                ("hardPodAffinityWeight",), f"must be in range [0, 100], got {self.hard_pod_affinity_weight}"
            )
        return self


def _check_default_constraint(c: Any, path: tuple[str | int, ...]) -> tuple[str, str]:
    if not isinstance(c, Mapping):
        raise ArgsError(path, "must be a mapping (a v1 TopologySpreadConstraint)")
    for key in c:
        if key not in _TOPOLOGY_SPREAD_CONSTRAINT_FIELDS:
            raise ArgsError(
                (*path, str(key)),
                "unknown field; a TopologySpreadConstraint has: "
                + ", ".join(sorted(_TOPOLOGY_SPREAD_CONSTRAINT_FIELDS)),
            )
    max_skew = c.get("maxSkew")
    if isinstance(max_skew, bool) or not isinstance(max_skew, int) or max_skew <= 0:
        raise ArgsError((*path, "maxSkew"), f"must be an integer greater than 0, got {max_skew!r}")
    key = c.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise ArgsError(
            (*path, "topologyKey"), "is required (a node label key such as topology.kubernetes.io/zone)"
        )
    problem = qualified_name_problem(key)
    if problem:
        raise ArgsError((*path, "topologyKey"), f"invalid label key {key!r}: {problem}")
    action = c.get("whenUnsatisfiable")
    if not action:
        raise ArgsError(
            (*path, "whenUnsatisfiable"), "is required: " + " or ".join(WHEN_UNSATISFIABLE_ACTIONS)
        )
    if action not in WHEN_UNSATISFIABLE_ACTIONS:
        raise ArgsError(
            (*path, "whenUnsatisfiable"),
            f"unsupported value {action!r}; use one of: " + ", ".join(WHEN_UNSATISFIABLE_ACTIONS),
        )
    if c.get("labelSelector") is not None:
        raise ArgsError(
            (*path, "labelSelector"),
            "must not be set: default constraints take their selector from each pod's owning workload",
        )
    return key, str(action)


class PodTopologySpreadArgs(_Args):
    """Args of the PodTopologySpread plugin. ``defaultConstraints`` are kept raw (v1 constraints)."""

    default_constraints: list[dict[str, Any]] = Field(default_factory=list)
    defaulting_type: str = "System"

    @model_validator(mode="after")
    def _default_and_validate(self) -> PodTopologySpreadArgs:
        if self.defaulting_type == "":
            self.defaulting_type = "System"
        if self.defaulting_type not in DEFAULTING_TYPES:
            raise ArgsError(
                ("defaultingType",),
                f"unsupported value {self.defaulting_type!r}; use one of: " + ", ".join(DEFAULTING_TYPES),
            )
        if self.defaulting_type == "System" and self.default_constraints:
            raise ArgsError(
                ("defaultingType",),
                "must be List when defaultConstraints are given (System uses the built-in constraints)",
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            ident = _check_default_constraint(c, ("defaultConstraints", i))
            if ident in seen:
                raise ArgsError(
                    ("defaultConstraints", i),
                    f"duplicate constraint for topologyKey {ident[0]!r} and whenUnsatisfiable {ident[1]!r}",
                )
            seen.add(ident)
        return self


class DefaultPreemptionArgs(_Args):
    """Args of the DefaultPreemption plugin."""

    min_candidate_nodes_percentage: Int32 = 10
    min_candidate_nodes_absolute: Int32 = 100

    @model_validator(mode="after")
    def _validate(self) -> DefaultPreemptionArgs:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if not 0 <= pct <= 100:
            raise ArgsError(("minCandidateNodesPercentage",), f"must be in range [0, 100], got {pct}")
        if absolute < 0:
            raise ArgsError(("minCandidateNodesAbsolute",), f"must be 0 or greater, got {absolute}")
        if pct == 0 and absolute == 0:
            raise ArgsError(
                ("minCandidateNodesPercentage",),
                "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be 0",
            )
        return self


class VolumeBindingArgs(_Args):
    """Args of the VolumeBinding plugin."""

    bind_timeout_seconds: Int64 = 600
    shape: list[UtilizationShapePoint] | None = None

    @model_validator(mode="after")
    def _validate(self) -> VolumeBindingArgs:
        if self.bind_timeout_seconds < 0:
            raise ArgsError(("bindTimeoutSeconds",), f"must be 0 or greater, got {self.bind_timeout_seconds}")
        if self.shape is not None:
            _check_shape(self.shape, ("shape",))
        return self


class DynamicResourcesArgs(_Args):
    """Args of the DynamicResources plugin: Go durations, as ``metav1.Duration`` writes them."""

    #: How long the search for devices may take per node (DRASchedulerFilterTimeout); 0: no limit.
    filter_timeout: str = "10s"
    #: How long PreBind waits for devices' binding conditions (DRADeviceBindingConditions).
    binding_timeout: str = "10m0s"

    @model_validator(mode="after")
    def _validate(self) -> DynamicResourcesArgs:
        for name, value in (("filterTimeout", self.filter_timeout), ("bindingTimeout", self.binding_timeout)):
            try:
                parse_duration(value)
            except InputError as exc:
                raise ArgsError((name,), str(exc)) from None
        return self

    @property
    def filter_timeout_seconds(self) -> float:
        return parse_duration(self.filter_timeout)

    @property
    def binding_timeout_seconds(self) -> float:
        return parse_duration(self.binding_timeout)


#: Upstream in-tree args kinds, keyed by plugin name (the kind is ``<name>Args``).
ARGS_MODELS: dict[str, type[BaseModel]] = {
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "NodeAffinity": NodeAffinityArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
    "VolumeBinding": VolumeBindingArgs,
    "DynamicResources": DynamicResourcesArgs,
}


def format_path(path: Sequence[str | int]) -> str:
    """``("a", 0, "b")`` → ``"a[0].b"``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def _describe(err: Mapping[str, Any]) -> tuple[tuple[str | int, ...], str]:
    loc: tuple[str | int, ...] = tuple(err.get("loc", ()))
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, ArgsError):
        return (*loc, *cause.path), cause.message
    given = err.get("input")
    if kind == "extra_forbidden":
        return loc, "unknown field; remove it (check the spelling: fields are camelCase)"
    if kind == "missing":
        return loc, "is required"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return loc, f"must be an integer, got {given!r}"
    if kind in ("greater_than_equal", "less_than_equal"):
        return loc, f"is out of range for its integer type, got {given!r}"
    if kind == "string_type":
        return loc, f"must be a string, got {given!r}"
    if kind == "bool_type":
        return loc, f"must be true or false, got {given!r}"
    if kind in ("list_type",):
        return loc, f"must be a list, got {type(given).__name__}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return loc, f"must be a mapping, got {type(given).__name__}"
    message = str(err.get("msg", "is invalid"))
    return loc, message[0].lower() + message[1:] if message else "is invalid"


def parse_args(model: type[BaseModel], raw: Any) -> BaseModel:
    """Build *model* from *raw* (``None`` means "all defaults").

    Raises :class:`InputError` whose ``field`` is relative to the args object (``scoringStrategy.type``),
    or None when the args object itself is wrong.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InputError(f"args must be a mapping (the fields of {model.__name__}), got {type(raw).__name__}")
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        path, message = _describe(exc.errors(include_url=False)[0])
        raise InputError(message, field=format_path(path) or None) from None
