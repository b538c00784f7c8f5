"""Node affinity terms read from raw v1 objects: a ``preferredDuringSchedulingIgnoredDuringExecution``
list and the NodeAffinity a scheduler profile adds (NodeAffinityArgs ``addedAffinity``), parsed as
upstream's ``nodeaffinity.NewNodeSelector`` and ``NewPreferredSchedulingTerms`` do.

Kept apart from the NodeAffinity plugin so that the configuration's args validation (which sits
below the plugins) checks ``addedAffinity`` when the file is loaded and names the field in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesched.api.fields import INT32_MAX
from kubesched.api.selectors import NodeSelectorTerm
from kubesched.errors import InputError

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
NODE_AFFINITY_FIELDS: Final = (REQUIRED, PREFERRED)
#: Where ``addedAffinity`` sits in a plugin's args.
ADDED_AFFINITY_FIELD: Final = "addedAffinity"

WeightedTerm = tuple[int, NodeSelectorTerm]


def join_field(path: str, child: str | int) -> str:
    return f"{path}[{child}]" if isinstance(child, int) else f"{path}.{child}"


def list_items(value: object) -> Sequence[object] | None:
    """A list field, or None when it is not one."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return None


def _weight(raw: object, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"must be an integer, got {raw!r}", field=field)
    if not 0 <= raw <= INT32_MAX:
        raise InputError(f"must be in range [0, {INT32_MAX}], got {raw}", field=field)
    return raw


def parse_preferred_terms(raw: object, field: str) -> tuple[WeightedTerm, ...]:
    """Parse ``preferredDuringSchedulingIgnoredDuringExecution``; weight-0 and empty terms are dropped
    (upstream ``NewPreferredSchedulingTerms``). Raises :class:`InputError` naming the bad field."""
    items = list_items(raw)
    if items is None:
        raise InputError(f"must be a list, got {type(raw).__name__}", field=field)
    out: list[WeightedTerm] = []
    for i, item in enumerate(items):
        item_field = join_field(field, i)
        if not isinstance(item, Mapping):
            raise InputError(f"must be a mapping, got {type(item).__name__}", field=item_field)
        unknown = sorted(str(k) for k in item if k not in ("weight", "preference"))
        if unknown:
            raise InputError(
                "unknown field; expected weight and preference", field=join_field(item_field, unknown[0])
            )
        weight = _weight(item.get("weight", 0), join_field(item_field, "weight"))
        preference = item.get("preference")
        pref_field = join_field(item_field, "preference")
        if preference is None:
            continue
        if not isinstance(preference, Mapping):
            raise InputError(f"must be a mapping, got {type(preference).__name__}", field=pref_field)
        term = NodeSelectorTerm.from_dict(preference, pref_field)
        if weight == 0 or term.is_empty:
            continue
        out.append((weight, term))
    return tuple(out)


def parse_added_affinity(
    raw: Mapping[str, Any], field: str = ADDED_AFFINITY_FIELD
) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[WeightedTerm, ...]]:
    """Parse a profile's ``addedAffinity`` strictly (a bad config is an error, unlike a pod's lazy
    terms): the required terms (None when absent) and the weighted preferred terms. Raises
    :class:`InputError` naming the bad field below ``field``."""
    for key in raw:
        if key not in NODE_AFFINITY_FIELDS:
            raise InputError(
                "unknown field; a NodeAffinity has: " + ", ".join(NODE_AFFINITY_FIELDS),
                field=join_field(field, str(key)),
            )
    required: tuple[NodeSelectorTerm, ...] | None = None
    raw_required = raw.get(REQUIRED)
    if raw_required is not None:
        req_field = join_field(field, REQUIRED)
        if not isinstance(raw_required, Mapping):
            raise InputError(f"must be a mapping, got {type(raw_required).__name__}", field=req_field)
        for key in raw_required:
            if key != "nodeSelectorTerms":
                raise InputError(
                    "unknown field; a NodeSelector has: nodeSelectorTerms",
                    field=join_field(req_field, str(key)),
                )
        terms_field = join_field(req_field, "nodeSelectorTerms")
        raw_terms = raw_required.get("nodeSelectorTerms")
        items = list_items(raw_terms) if raw_terms is not None else ()
        if items is None:
            raise InputError(f"must be a list, got {type(raw_terms).__name__}", field=terms_field)
        parsed: list[NodeSelectorTerm] = []
        for i, raw_term in enumerate(items):
            term_field = join_field(terms_field, i)
            if not isinstance(raw_term, Mapping):
                raise InputError(f"must be a mapping, got {type(raw_term).__name__}", field=term_field)
            term = NodeSelectorTerm.from_dict(raw_term, term_field)
            if not term.is_empty:
                parsed.append(term)
        required = tuple(parsed)
    preferred: tuple[WeightedTerm, ...] = ()
    raw_preferred = raw.get(PREFERRED)
    if raw_preferred is not None:
        preferred = parse_preferred_terms(raw_preferred, join_field(field, PREFERRED))
    return required, preferred


__all__ = [
    "ADDED_AFFINITY_FIELD",
    "NODE_AFFINITY_FIELDS",
    "PREFERRED",
    "REQUIRED",
    "WeightedTerm",
    "join_field",
    "list_items",
    "parse_added_affinity",
    "parse_preferred_terms",
]
