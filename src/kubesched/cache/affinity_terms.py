"""A pod's inter-pod affinity terms, parsed once into hashable values (upstream ``fwk.AffinityTerm``).

A ``PodAffinityTerm`` says: "pods in these namespaces whose labels match this selector, counted per
value of this node label (the topology key)". Parsing resolves what upstream resolves when it builds a
``PodInfo``:

* the namespaces: the term's ``namespaces`` list, or the pod's own namespace when the list is empty
  and no ``namespaceSelector`` is given;
* the ``namespaceSelector``: absent means "no namespace" (``LabelSelector.nothing()``), ``{}`` means
  every namespace;
* ``matchLabelKeys`` / ``mismatchLabelKeys``: the API server merges them into the label selector when
  the pod is created (``key In (the pod's value)`` / ``key NotIn (the pod's value)``, only for keys the
  pod has, and only when the term has a label selector). The embedded cluster plays the API server, so
  the merge happens here.

Terms are frozen dataclasses with canonically ordered requirements, so identical terms of different
pods compare and hash equal: the pod index aggregates existing pods' terms by term.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesched.api.selectors import LabelSelector, Requirement
from kubesched.errors import InputError

__all__ = [
    "NO_TERMS",
    "AffinityTerm",
    "PodAffinityTerms",
    "WeightedAffinityTerm",
    "canonical_selector",
    "parse_pod_affinity_terms",
]

_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_NO_NAMESPACE: Final = LabelSelector.nothing()
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def canonical_selector(selector: LabelSelector) -> LabelSelector:
    """The same selector with requirements deduplicated and sorted, so equal meanings hash equal."""
    if selector.match_nothing or len(selector.requirements) <= 1:
        return selector
    reqs = sorted(
        {Requirement(r.key, r.operator, tuple(sorted(set(r.values)))) for r in selector.requirements},
        key=lambda r: (r.key, r.operator, r.values),
    )
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One processed ``PodAffinityTerm``."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    #: Namespaces whose labels match select too; ``nothing()`` when the term has no namespaceSelector.
    namespace_selector: LabelSelector = _NO_NAMESPACE

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]) -> bool:
        """Upstream ``AffinityTerm.Matches``: the pod's namespace is listed or its namespace's labels
        match the namespace selector, and its labels match the selector."""
        if namespace in self.namespaces or (
            not self.namespace_selector.match_nothing and self.namespace_selector.matches(namespace_labels)
        ):
            return self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """Everything of a pod's ``podAffinity`` / ``podAntiAffinity`` the scheduler uses."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    #: The pod lists preferred (anti-)affinity terms at all (upstream ``hasConstraints`` in PreScore).
    has_preferred: bool = False
    #: Why some list did not parse (that list is left empty, as upstream's PodInfo leaves it).
    error: str | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS: Final = PodAffinityTerms()


def _items(value: object, field: str) -> Sequence[object]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InputError(f"must be a list, not {type(value).__name__}", field=field)
    return value


def _mapping(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping, not {type(value).__name__}", field=field)
    return value


def _strings(value: object, field: str) -> tuple[str, ...]:
    items = _items(value, field)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InputError(f"must be a string, not {type(item).__name__}", field=f"{field}[{i}]")
    return tuple(str(i) for i in items)


def _merge_label_keys(
    selector: LabelSelector,
    match_keys: tuple[str, ...],
    mismatch_keys: tuple[str, ...],
    labels: Mapping[str, str],
) -> LabelSelector:
    extra = [Requirement(k, "In", (labels[k],)) for k in match_keys if k in labels]
    extra += [Requirement(k, "NotIn", (labels[k],)) for k in mismatch_keys if k in labels]
    if not extra:
        return selector
    return LabelSelector((*selector.requirements, *extra))


def parse_term(raw: object, field: str, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
    """Parse one ``PodAffinityTerm`` of a pod in ``namespace`` with ``labels``."""
    term = _mapping(raw, field)
    raw_selector = term.get("labelSelector")
    selector = LabelSelector.from_dict(raw_selector, f"{field}.labelSelector")
    if raw_selector is not None:
        selector = _merge_label_keys(
            selector,
            _strings(term.get("matchLabelKeys"), f"{field}.matchLabelKeys"),
            _strings(term.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys"),
            labels,
        )
    raw_ns_selector = term.get("namespaceSelector")
    ns_selector = LabelSelector.from_dict(raw_ns_selector, f"{field}.namespaceSelector")
    listed = _strings(term.get("namespaces"), f"{field}.namespaces")
    namespaces = frozenset(listed) if listed or raw_ns_selector is not None else frozenset((namespace,))
    topology_key = term.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise InputError("must be a string", field=f"{field}.topologyKey")
    return AffinityTerm(
        namespaces, canonical_selector(selector), topology_key, canonical_selector(ns_selector)
    )


def _parse_required(
    raw: object, field: str, namespace: str, labels: Mapping[str, str]
) -> tuple[AffinityTerm, ...]:
    return tuple(
        parse_term(item, f"{field}[{i}]", namespace, labels) for i, item in enumerate(_items(raw, field))
    )


def _parse_preferred(
    raw: object, field: str, namespace: str, labels: Mapping[str, str]
) -> tuple[WeightedAffinityTerm, ...]:
    out: list[WeightedAffinityTerm] = []
    for i, item in enumerate(_items(raw, field)):
        where = f"{field}[{i}]"
        weighted = _mapping(item, where)
        weight = weighted.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InputError(f"must be an integer, not {weight!r}", field=f"{where}.weight")
        term = parse_term(weighted.get("podAffinityTerm"), f"{where}.podAffinityTerm", namespace, labels)
        out.append(WeightedAffinityTerm(weight, term))
    return tuple(out)


def parse_pod_affinity_terms(
    affinity: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> PodAffinityTerms:
    """Parse ``spec.affinity.podAffinity`` and ``podAntiAffinity`` of a pod.

    Like upstream's ``PodInfo``, a list that does not parse is left empty and the first problem is
    kept in ``error`` (the incoming pod is then rejected at PreFilter; an existing pod just loses that
    list).
    """
    if not affinity:
        return NO_TERMS
    pod_affinity = affinity.get("podAffinity")
    anti_affinity = affinity.get("podAntiAffinity")
    if pod_affinity is None and anti_affinity is None:
        return NO_TERMS
    errors: list[str] = []
    parts: dict[str, Any] = {}
    has_preferred = False
    for name, section, key, what in (
        ("required_affinity", pod_affinity, _REQUIRED, "requiredAffinityTerms"),
        ("required_anti_affinity", anti_affinity, _REQUIRED, "requiredAntiAffinityTerms"),
        ("preferred_affinity", pod_affinity, _PREFERRED, "preferredAffinityTerms"),
        ("preferred_anti_affinity", anti_affinity, _PREFERRED, "preferredAntiAffinityTerms"),
    ):
        if not isinstance(section, Mapping):
            if section is not None:
                errors.append(f"{what}: must be a mapping, not {type(section).__name__}")
            continue
        raw = section.get(key)
        if raw is None:
            continue
        kind = "podAffinity" if section is pod_affinity else "podAntiAffinity"
        field = f"spec.affinity.{kind}.{key}"
        try:
            if key == _REQUIRED:
                parts[name] = _parse_required(raw, field, namespace, labels)
            else:
                has_preferred = has_preferred or bool(raw)
                parts[name] = _parse_preferred(raw, field, namespace, labels)
        except InputError as exc:
            errors.append(f"{what}: {exc}")
    return PodAffinityTerms(**parts, has_preferred=has_preferred, error="; ".join(errors) or None)
