"""Load-time validation of a pod's ``spec.affinity``, as the API server's ``ValidateAffinity`` does it.

The plugins parse affinity leniently (an unparsable term matches no node, as upstream's scheduler
does for objects that got past validation); a manifest is checked here first, so a bad operator,
value, weight or topology key is an input error naming its field instead of a scheduling outcome.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesched.api.fields import as_int, as_list, as_mapping
from kubesched.api.selectors import (
    LabelSelector,
    NodeSelector,
    PreferredSchedulingTerm,
    qualified_name_error,
)
from kubesched.errors import InputError

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def validate_affinity(raw: Any, field: str = "spec.affinity") -> None:
    """Raise :class:`InputError` naming the first field of ``spec.affinity`` the API would refuse."""
    affinity = as_mapping(raw, field)
    for key in affinity:
        if key not in _AFFINITY_KINDS:
            raise InputError(
                f"unknown field; expected one of {', '.join(_AFFINITY_KINDS)}", field=f"{field}.{key}"
            )
    node = affinity.get("nodeAffinity")
    if node is not None:
        _validate_node_affinity(as_mapping(node, f"{field}.nodeAffinity"), f"{field}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind)
        if section is not None:
            _validate_pod_affinity(as_mapping(section, f"{field}.{kind}"), f"{field}.{kind}")


def _validate_node_affinity(node: Mapping[str, Any], field: str) -> None:
    _reject_unknown(node, (REQUIRED, PREFERRED), field)
    required = node.get(REQUIRED)
    if required is not None:
        NodeSelector.from_dict(as_mapping(required, f"{field}.{REQUIRED}"), f"{field}.{REQUIRED}")
    for i, term in enumerate(as_list(node.get(PREFERRED), f"{field}.{PREFERRED}")):
        where = f"{field}.{PREFERRED}[{i}]"
        PreferredSchedulingTerm.from_dict(as_mapping(term, where), where)


def _validate_pod_affinity(section: Mapping[str, Any], field: str) -> None:
    _reject_unknown(section, (REQUIRED, PREFERRED), field)
    for i, term in enumerate(as_list(section.get(REQUIRED), f"{field}.{REQUIRED}")):
        _validate_pod_affinity_term(term, f"{field}.{REQUIRED}[{i}]")
    for i, item in enumerate(as_list(section.get(PREFERRED), f"{field}.{PREFERRED}")):
        where = f"{field}.{PREFERRED}[{i}]"
        weighted = as_mapping(item, where)
        _reject_unknown(weighted, ("weight", "podAffinityTerm"), where)
        weight = as_int(weighted.get("weight"), f"{where}.weight")
        if not 1 <= weight <= 100:
            raise InputError(f"must be in the range 1-100, got {weight}", field=f"{where}.weight")
        if weighted.get("podAffinityTerm") is None:
            raise InputError("is required", field=f"{where}.podAffinityTerm")
        _validate_pod_affinity_term(weighted.get("podAffinityTerm"), f"{where}.podAffinityTerm")


def _validate_pod_affinity_term(raw: Any, field: str) -> None:
    term = as_mapping(raw, field)
    _reject_unknown(
        term,
        (
            "labelSelector",
            "namespaceSelector",
            "namespaces",
            "topologyKey",
            "matchLabelKeys",
            "mismatchLabelKeys",
        ),
        field,
    )
    if term.get("labelSelector") is not None:
        LabelSelector.from_dict(
            as_mapping(term["labelSelector"], f"{field}.labelSelector"), f"{field}.labelSelector"
        )
    if term.get("namespaceSelector") is not None:
        LabelSelector.from_dict(
            as_mapping(term["namespaceSelector"], f"{field}.namespaceSelector"), f"{field}.namespaceSelector"
        )
    for i, ns in enumerate(as_list(term.get("namespaces"), f"{field}.namespaces")):
        if not isinstance(ns, str) or len(ns) > 63 or not _DNS1123_LABEL.fullmatch(ns):
            raise InputError(
                f"must be a namespace name (a DNS-1123 label), got {ns!r}", field=f"{field}.namespaces[{i}]"
            )
    topology_key = term.get("topologyKey")
    if topology_key is None or topology_key == "":
        raise InputError("can not be empty", field=f"{field}.topologyKey")
    if not isinstance(topology_key, str):
        raise InputError(f"must be a string, got {type(topology_key).__name__}", field=f"{field}.topologyKey")
    if (why := qualified_name_error(topology_key)) is not None:
        raise InputError(why, field=f"{field}.topologyKey")
    match_keys = _label_keys(term.get("matchLabelKeys"), f"{field}.matchLabelKeys")
    mismatch_keys = _label_keys(term.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys")
    if (match_keys or mismatch_keys) and term.get("labelSelector") is None:
        raise InputError(
            "must be set when matchLabelKeys or mismatchLabelKeys is", field=f"{field}.labelSelector"
        )
    for key in match_keys:
        if key in mismatch_keys:
            raise InputError(
                f"{key!r} is in both matchLabelKeys and mismatchLabelKeys", field=f"{field}.matchLabelKeys"
            )


def _label_keys(raw: Any, field: str) -> tuple[str, ...]:
    keys: list[str] = []
    for i, key in enumerate(as_list(raw, field)):
        if not isinstance(key, str):
            raise InputError(f"must be a string, got {type(key).__name__}", field=f"{field}[{i}]")
        if (why := qualified_name_error(key)) is not None:
            raise InputError(why, field=f"{field}[{i}]")
        keys.append(key)
    return tuple(keys)


def _reject_unknown(data: Mapping[str, Any], allowed: Sequence[str], field: str) -> None:
    for key in data:
        if key not in allowed:
            raise InputError(f"unknown field; expected one of {', '.join(allowed)}", field=f"{field}.{key}")
