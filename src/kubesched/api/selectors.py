"""Label selectors and node selectors (node affinity) with Kubernetes matching semantics.

Two selector languages exist in the Kubernetes API and they differ in ways that matter:

* :class:`LabelSelector` (``metav1.LabelSelector``, used by pod affinity, topology spread,
  PodDisruptionBudgets, ...) has ``matchLabels`` and ``matchExpressions`` with the operators
  ``In``, ``NotIn``, ``Exists`` and ``DoesNotExist``. An *empty* selector ``{}`` matches
  everything, while a *missing* selector (``None``) matches nothing for most API fields (for
  example a pod affinity term without a ``labelSelector`` selects no pods). ``from_dict(None)``
  therefore returns :meth:`LabelSelector.nothing`.
* :class:`NodeSelector` (``v1.NodeSelector``, node affinity) is an OR of
  :class:`NodeSelectorTerm`, each an AND of requirements that additionally support ``Gt`` and
  ``Lt`` and a ``matchFields`` list on ``metadata.name``. Unlike a label selector, a term with
  no requirements matches *no* node.

Validation mirrors the API server and ``labels.NewRequirement``: label keys must be qualified
names and values valid label values; violations raise :class:`~kubesched.errors.InputError`
with the full field path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kubesched.errors import InputError

__all__ = [
    "LABEL_SELECTOR_OPERATORS",
    "NODE_FIELD_SELECTOR_KEYS",
    "NODE_SELECTOR_OPERATORS",
    "LabelSelector",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "Requirement",
    "label_value_error",
    "qualified_name_error",
]

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
GT: Final = "Gt"
LT: Final = "Lt"

LABEL_SELECTOR_OPERATORS: Final[tuple[str, ...]] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
NODE_SELECTOR_OPERATORS: Final[tuple[str, ...]] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
#: The only field a node selector's ``matchFields`` may use (upstream API validation).
NODE_FIELD_SELECTOR_KEYS: Final[tuple[str, ...]] = ("metadata.name",)
_NODE_FIELD_OPERATORS: Final[tuple[str, ...]] = (IN, NOT_IN)

_NAME_RE: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_GO_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


# --------------------------------------------------------------------------- validation helpers


def qualified_name_error(name: str) -> str | None:
    """Why ``name`` is not a valid label key (``[prefix/]name``), or ``None`` if it is."""
    parts = name.split("/")
    if len(parts) > 2:
        return f"{name!r} is not a qualified name: at most one '/' is allowed"
    if len(parts) == 2:
        prefix, short = parts
        if not prefix:
            return f"{name!r} is not a qualified name: the prefix before '/' must not be empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return (
                f"{name!r} is not a qualified name: prefix {prefix!r} must be a DNS subdomain "
                "(lowercase alphanumerics, '-' and '.', at most 253 characters)"
            )
    else:
        short = parts[0]
    if not short:
        return f"{name!r} is not a qualified name: the name part must not be empty"
    if len(short) > 63 or not _NAME_RE.fullmatch(short):
        return (
            f"{name!r} is not a qualified name: the name part must be at most 63 alphanumerics, "
            "'-', '_' or '.', starting and ending with an alphanumeric"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value (empty is valid), or ``None`` if it is."""
    if value and (len(value) > 63 or not _NAME_RE.fullmatch(value)):
        return (
            f"{value!r} is not a valid label value: at most 63 alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def _join(field: str, child: str) -> str:
    if not field:
        return child
    return f"{field}{child}" if child.startswith("[") else f"{field}.{child}"


def _mapping(data: object, field: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise InputError(f"must be a mapping, not {type(data).__name__}", field=field)
    for key in data:
        if not isinstance(key, str):
            raise InputError(f"field names must be strings, not {key!r}", field=field)
    return data


def _reject_unknown(data: Mapping[str, object], allowed: Sequence[str], field: str) -> None:
    """Unknown fields are errors: a typo such as ``matchExpression`` would otherwise widen a selector."""
    for key in data:
        if key not in allowed:
            raise InputError(
                f"unknown field {key!r} (expected one of: {', '.join(allowed)})", field=_join(field, key)
            )


def _string(data: Mapping[str, object], key: str, field: str, *, required: bool) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise InputError("is required", field=_join(field, key))
        return ""
    if not isinstance(value, str):
        raise InputError(f"must be a string, not {type(value).__name__}", field=_join(field, key))
    return value


def _string_list(data: Mapping[str, object], key: str, field: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    path = _join(field, key)
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InputError(f"must be a list of strings, not {type(value).__name__}", field=path)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InputError(f"must be a string, not {type(item).__name__}", field=f"{path}[{i}]")
    return tuple(value)


def _list(data: Mapping[str, object], key: str, field: str) -> Sequence[object]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InputError(f"must be a list, not {type(value).__name__}", field=_join(field, key))
    return value


def _parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits, int64 range; else ``None``."""
    if not _GO_INT_RE.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _parse_requirement(
    data: object, field: str, operators: Sequence[str]
) -> tuple[str, str, tuple[str, ...]]:
    """Parse and validate one ``{key, operator, values}`` expression; returns its three parts."""
    expr = _mapping(data, field)
    _reject_unknown(expr, ("key", "operator", "values"), field)
    key = _string(expr, "key", field, required=True)
    if (why := qualified_name_error(key)) is not None:
        raise InputError(why, field=_join(field, "key"))
    operator = _string(expr, "operator", field, required=True)
    if operator not in operators:
        raise InputError(
            f"unsupported operator {operator!r} (supported: {', '.join(operators)})",
            field=_join(field, "operator"),
        )
    values = _string_list(expr, "values", field)
    values_field = _join(field, "values")
    if operator in (IN, NOT_IN) and not values:
        raise InputError(f"must have at least one value when operator is {operator!r}", field=values_field)
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise InputError(f"must be empty when operator is {operator!r}", field=values_field)
    if operator in (GT, LT):
        if len(values) != 1:
            raise InputError(f"must have exactly one value when operator is {operator!r}", field=values_field)
        if _parse_go_int64(values[0]) is None:
            raise InputError(
                f"{values[0]!r} is not an integer; operator {operator!r} compares integers",
                field=f"{values_field}[0]",
            )
    for i, value in enumerate(values):
        if (why := label_value_error(value)) is not None:
            raise InputError(why, field=f"{values_field}[{i}]")
    return key, operator, values


def _label_requirement_matches(
    key: str, operator: str, values: tuple[str, ...], labels: Mapping[str, str]
) -> bool:
    """Shared matcher for both selector languages (``labels.Requirement.Matches``)."""
    if operator == IN:
        return key in labels and labels[key] in values
    if operator == NOT_IN:
        return key not in labels or labels[key] not in values
    if operator == EXISTS:
        return key in labels
    if operator == DOES_NOT_EXIST:
        return key not in labels
    if operator in (GT, LT):
        if key not in labels or len(values) != 1:
            return False
        have = _parse_go_int64(labels[key])
        want = _parse_go_int64(values[0])
        if have is None or want is None:  # a non-integer label never satisfies Gt/Lt
            return False
        return have > want if operator == GT else have < want
    return False  # an operator nobody validated matches nothing rather than everything


# --------------------------------------------------------------------------- label selectors


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry (or one ``matchLabels`` pair, as ``In`` with one value)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``NotIn``/``DoesNotExist`` match objects that lack the key, as upstream."""
        return _label_requirement_matches(self.key, self.operator, self.values, labels)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: the AND of its requirements.

    ``LabelSelector()`` (no requirements) is the empty selector and matches everything;
    :meth:`nothing` is what a *missing* selector means for most API fields and matches no labels.
    """

    requirements: tuple[Requirement, ...] = ()
    match_nothing: bool = False

    @classmethod
    def nothing(cls) -> LabelSelector:
        """The selector that matches no object (``labels.Nothing()``)."""
        return cls((), match_nothing=True)

    @classmethod
    def everything(cls) -> LabelSelector:
        """The empty selector, which matches every object (``labels.Everything()``)."""
        return cls(())

    @classmethod
    def from_match_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """Equality-only selector, e.g. a pod's ``nodeSelector`` map (already validated)."""
        return cls(tuple(Requirement(k, IN, (v,)) for k, v in sorted(labels.items())))

    @property
    def is_empty(self) -> bool:
        """True for the empty selector ``{}``, which matches everything."""
        return not self.requirements and not self.match_nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.match_nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @classmethod
    def from_dict(cls, data: Mapping[str, object] | None, field: str) -> LabelSelector:
        """Parse a ``metav1.LabelSelector``; ``None`` (field absent) gives :meth:`nothing`."""
        if data is None:
            return cls.nothing()
        selector = _mapping(data, field)
        _reject_unknown(selector, ("matchLabels", "matchExpressions"), field)
        requirements: list[Requirement] = []

        match_labels = selector.get("matchLabels")
        labels_field = _join(field, "matchLabels")
        if match_labels is not None:
            pairs = _mapping(match_labels, labels_field)
            for key, value in pairs.items():
                if (why := qualified_name_error(key)) is not None:
                    raise InputError(why, field=labels_field)
                if not isinstance(value, str):
                    raise InputError(
                        f"value of {key!r} must be a string, not {type(value).__name__}", field=labels_field
                    )
                if (why := label_value_error(value)) is not None:
                    raise InputError(f"value of {key!r}: {why}", field=labels_field)
                requirements.append(Requirement(key, IN, (value,)))

        exprs_field = _join(field, "matchExpressions")
        for i, expr in enumerate(_list(selector, "matchExpressions", field)):
            key, operator, values = _parse_requirement(expr, f"{exprs_field}[{i}]", LABEL_SELECTOR_OPERATORS)
            requirements.append(Requirement(key, operator, values))
        return cls(tuple(requirements))


# --------------------------------------------------------------------------- node selectors


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """A node affinity expression; ``Gt``/``Lt`` compare the label as a 64-bit integer."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Match against node labels (``matchExpressions`` semantics)."""
        return _label_requirement_matches(self.key, self.operator, self.values, labels)

    def matches_field(self, node_name: str) -> bool:
        """Match against node fields (``matchFields`` semantics); only ``metadata.name`` exists."""
        if self.key != "metadata.name":
            return False
        if self.operator == IN:
            return node_name in self.values
        if self.operator == NOT_IN:
            return node_name not in self.values
        return False

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> NodeSelectorRequirement:
        key, operator, values = _parse_requirement(data, field, NODE_SELECTOR_OPERATORS)
        return cls(key, operator, values)

    @classmethod
    def field_from_dict(cls, data: Mapping[str, object], field: str) -> NodeSelectorRequirement:
        """Parse a ``matchFields`` entry: key ``metadata.name``, ``In``/``NotIn``, one value."""
        expr = _mapping(data, field)
        _reject_unknown(expr, ("key", "operator", "values"), field)
        key = _string(expr, "key", field, required=True)
        if key not in NODE_FIELD_SELECTOR_KEYS:
            raise InputError(
                f"unsupported field selector key {key!r} (supported: {', '.join(NODE_FIELD_SELECTOR_KEYS)})",
                field=_join(field, "key"),
            )
        operator = _string(expr, "operator", field, required=True)
        if operator not in _NODE_FIELD_OPERATORS:
            raise InputError(
                f"unsupported operator {operator!r} for matchFields (supported: In, NotIn)",
                field=_join(field, "operator"),
            )
        values = _string_list(expr, "values", field)
        if len(values) != 1:
            raise InputError(
                f"must have exactly one value when operator is {operator!r} in matchFields",
                field=_join(field, "values"),
            )
        return cls(key, operator, values)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """The AND of label expressions and field expressions; an empty term matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_expressions and not self.match_fields

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if self.is_empty:
            return False
        if not all(r.matches(labels) for r in self.match_expressions):
            return False
        # Upstream only consults fields a node has; a nameless node skips matchFields.
        return not node_name or all(r.matches_field(node_name) for r in self.match_fields)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> NodeSelectorTerm:
        term = _mapping(data, field)
        _reject_unknown(term, ("matchExpressions", "matchFields"), field)
        exprs_field = _join(field, "matchExpressions")
        fields_field = _join(field, "matchFields")
        expressions = tuple(
            NodeSelectorRequirement.from_dict(_mapping(e, f"{exprs_field}[{i}]"), f"{exprs_field}[{i}]")
            for i, e in enumerate(_list(term, "matchExpressions", field))
        )
        fields = tuple(
            NodeSelectorRequirement.field_from_dict(
                _mapping(e, f"{fields_field}[{i}]"), f"{fields_field}[{i}]"
            )
            for i, e in enumerate(_list(term, "matchFields", field))
        )
        return cls(expressions, fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """``requiredDuringSchedulingIgnoredDuringExecution``: matches if ANY term matches."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return any(term.matches(node_name, labels) for term in self.terms)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> NodeSelector:
        """Parse a ``v1.NodeSelector``; at least one term is required, as the API server demands."""
        selector = _mapping(data, field)
        _reject_unknown(selector, ("nodeSelectorTerms",), field)
        terms_field = _join(field, "nodeSelectorTerms")
        raw_terms = _list(selector, "nodeSelectorTerms", field)
        if not raw_terms:
            raise InputError("must have at least one node selector term", field=terms_field)
        return cls(
            tuple(
                NodeSelectorTerm.from_dict(_mapping(t, f"{terms_field}[{i}]"), f"{terms_field}[{i}]")
                for i, t in enumerate(raw_terms)
            )
        )


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A weighted node preference; matching nodes gain ``weight`` in the NodeAffinity score."""

    weight: int
    preference: NodeSelectorTerm

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return self.preference.matches(node_name, labels)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> PreferredSchedulingTerm:
        """Parse and validate; weight must be an integer in 1..100, as the API server demands."""
        term = _mapping(data, field)
        _reject_unknown(term, ("weight", "preference"), field)
        weight = term.get("weight")
        weight_field = _join(field, "weight")
        if weight is None:
            raise InputError("is required", field=weight_field)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InputError(f"must be an integer, not {type(weight).__name__}", field=weight_field)
        if not 1 <= weight <= 100:
            raise InputError(f"must be in the range 1-100, got {weight}", field=weight_field)
        preference_field = _join(field, "preference")
        raw_preference = term.get("preference")
        if raw_preference is None:  # a missing preference is an empty term, which matches no node
            return cls(weight, NodeSelectorTerm())
        return cls(
            weight, NodeSelectorTerm.from_dict(_mapping(raw_preference, preference_field), preference_field)
        )
