"""Node selectors evaluated over every slot of a :class:`NodeTable` at once.

The scalar matchers in :mod:`kubesched.api.selectors` answer for one node; these answer with a boolean
array indexed like the table (or like ``slots`` when given), using the dictionary-encoded label
columns: an ``In`` is a comparison of int codes, an operator over many values is one gather through a
small per-code lookup table, and ``Gt``/``Lt`` parse the column's vocabulary once per call instead of
every node's label. ``matchFields`` on ``metadata.name`` goes through ``NodeTable.slot_of``.

Semantics are exactly those of the scalar matchers (and of upstream ``labels.Requirement.Matches`` /
``nodeaffinity.NodeSelector``): ``NotIn`` and ``DoesNotExist`` match nodes without the key, ``Gt``/``Lt``
never match a label that is not a base-10 int64, a term with no requirements matches no node, and a
selector matches when any of its terms does.

Slots that hold no node are evaluated like a node without labels; callers combine the result with
their candidate mask.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.selectors import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.cache.node_table import LabelColumn, NodeTable

__all__ = [
    "field_requirement_mask",
    "match_labels_mask",
    "node_selector_mask",
    "requirement_mask",
    "term_mask",
    "terms_mask",
]

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

NODE_NAME_FIELD: Final = "metadata.name"
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None when it would fail."""
    if not _GO_INT.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _size(table: NodeTable, slots: IntArray | None) -> int:
    return table.capacity if slots is None else len(slots)


def _codes(column: LabelColumn, slots: IntArray | None) -> NDArray[np.int32]:
    return column.codes if slots is None else column.codes[slots]


def _constant(table: NodeTable, slots: IntArray | None, value: bool) -> BoolArray:
    return np.full(_size(table, slots), value, dtype=np.bool_)


def _through_lookup(codes: NDArray[np.int32], per_code: BoolArray, absent: bool) -> BoolArray:
    """``per_code[code]`` for each slot, ``absent`` where the label is missing (code -1)."""
    # The extra last entry is what code -1 indexes.
    lookup = np.append(per_code, absent)
    result: BoolArray = lookup[codes]
    return result


def requirement_mask(
    table: NodeTable, req: NodeSelectorRequirement, slots: IntArray | None = None
) -> BoolArray:
    """Where the label expression ``req`` (a ``matchExpressions`` entry) holds."""
    op = req.operator
    column = table.labels.get(req.key)
    if op == "Exists":
        if column is None:
            return _constant(table, slots, False)
        present: BoolArray = _codes(column, slots) >= 0
        return present
    if op == "DoesNotExist":
        if column is None:
            return _constant(table, slots, True)
        absent: BoolArray = _codes(column, slots) < 0
        return absent
    if op in ("In", "NotIn"):
        negate = op == "NotIn"
        if column is None:
            return _constant(table, slots, negate)
        wanted = sorted({column.vocab[v] for v in req.values if v in column.vocab})
        codes = _codes(column, slots)
        if not wanted:
            return np.full(len(codes), negate, dtype=np.bool_)
        if len(wanted) == 1:
            hit: BoolArray = codes != wanted[0] if negate else codes == wanted[0]
            return hit
        per_code = np.zeros(len(column.values), dtype=np.bool_)
        per_code[wanted] = True
        if negate:
            np.logical_not(per_code, out=per_code)
        return _through_lookup(codes, per_code, absent=negate)
    if op in ("Gt", "Lt"):
        if column is None or len(req.values) != 1:
            return _constant(table, slots, False)
        bound = _go_int64(req.values[0])
        if bound is None:
            return _constant(table, slots, False)
        per_code = np.zeros(len(column.values), dtype=np.bool_)
        for code, text in enumerate(column.values):
            number = _go_int64(text)
            if number is not None:
                per_code[code] = number > bound if op == "Gt" else number < bound
        return _through_lookup(_codes(column, slots), per_code, absent=False)
    return _constant(table, slots, False)  # an operator nobody validated matches nothing


def field_requirement_mask(
    table: NodeTable, req: NodeSelectorRequirement, slots: IntArray | None = None
) -> BoolArray:
    """Where the field expression ``req`` (a ``matchFields`` entry on ``metadata.name``) holds."""
    if req.key != NODE_NAME_FIELD or req.operator not in ("In", "NotIn"):
        return _constant(table, slots, False)
    negate = req.operator == "NotIn"
    named = [s for s in (table.slot_of.get(v) for v in req.values) if s is not None]
    if slots is None:
        mask = np.zeros(table.capacity, dtype=np.bool_)
        mask[named] = True
    elif len(named) == 1:
        mask = slots == named[0]
    else:
        mask = np.isin(slots, named)
    if negate:
        np.logical_not(mask, out=mask)
    return mask


def term_mask(table: NodeTable, term: NodeSelectorTerm, slots: IntArray | None = None) -> BoolArray:
    """Where every expression and field requirement of ``term`` holds; an empty term matches nothing."""
    if term.is_empty:
        return _constant(table, slots, False)
    mask: BoolArray | None = None
    for req in term.match_expressions:
        part = requirement_mask(table, req, slots)
        mask = part if mask is None else np.logical_and(mask, part, out=mask)
    for req in term.match_fields:
        part = field_requirement_mask(table, req, slots)
        mask = part if mask is None else np.logical_and(mask, part, out=mask)
    assert mask is not None
    return mask


def terms_mask(
    table: NodeTable, terms: Iterable[NodeSelectorTerm], slots: IntArray | None = None
) -> BoolArray:
    """Where any of ``terms`` matches (no terms: nothing matches)."""
    mask = _constant(table, slots, False)
    for term in terms:
        np.logical_or(mask, term_mask(table, term, slots), out=mask)
    return mask


def node_selector_mask(table: NodeTable, selector: NodeSelector, slots: IntArray | None = None) -> BoolArray:
    """Where the ``v1.NodeSelector`` matches: the OR of its terms."""
    return terms_mask(table, selector.terms, slots)


def match_labels_mask(
    table: NodeTable, labels: Mapping[str, str], slots: IntArray | None = None
) -> BoolArray:
    """Where a node carries every ``key: value`` of ``labels`` (a pod's ``nodeSelector``)."""
    mask = _constant(table, slots, True)
    for key, value in labels.items():
        column = table.labels.get(key)
        code = None if column is None else column.vocab.get(value)
        if column is None or code is None:
            return _constant(table, slots, False)
        np.logical_and(mask, _codes(column, slots) == code, out=mask)
    return mask
