"""Vectorized node-selector evaluation agrees with the scalar matchers of ``api/selectors``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node
from kubesched.api.selectors import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.cache.label_match import (
    field_requirement_mask,
    match_labels_mask,
    node_selector_mask,
    requirement_mask,
    term_mask,
)
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable

KEYS = ["a", "b", "zone", "example.com/gpu"]
VALUES = ["", "x", "y", "1", "10", "007", "-2", "+3", "9223372036854775807", "9223372036854775808", "1.5"]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=len(KEYS))
requirement_st = st.builds(
    NodeSelectorRequirement,
    key=st.sampled_from(KEYS),
    operator=st.sampled_from(OPERATORS),
    values=st.lists(st.sampled_from(VALUES), max_size=3).map(tuple),
)


def node(name: str, labels: dict[str, str]) -> Node:
    return Node.from_dict({"kind": "Node", "metadata": {"name": name, "labels": labels}})


def build_table(
    labels: list[dict[str, str]], relabel: dict[int, dict[str, str]], removed: set[int]
) -> tuple[NodeTable, dict[str, dict[str, str]]]:
    """A table with one node per entry, then some nodes relabelled and some removed (stale codes)."""
    table = NodeTable(capacity=2)  # small, so writes exercise growth
    current: dict[str, dict[str, str]] = {}
    for i, lab in enumerate(labels):
        table.write(i, NodeInfo(node(f"n{i}", lab)))
        current[f"n{i}"] = lab
    for i, lab in relabel.items():
        if i < len(labels):
            table.write(i, NodeInfo(node(f"n{i}", lab)))
            current[f"n{i}"] = lab
    for i in removed:
        if i < len(labels):
            table.clear(i)
            current.pop(f"n{i}")
    return table, current


@st.composite
def tables(draw: st.DrawFn) -> tuple[NodeTable, dict[str, dict[str, str]]]:
    labels = draw(st.lists(labels_st, min_size=1, max_size=8))
    relabel = draw(st.dictionaries(st.integers(0, 7), labels_st, max_size=3))
    removed = draw(st.sets(st.integers(0, 7), max_size=2))
    return build_table(labels, relabel, removed)


def field_st(names: list[str]) -> st.SearchStrategy[NodeSelectorRequirement]:
    return st.builds(
        NodeSelectorRequirement,
        key=st.sampled_from(["metadata.name", "metadata.name", "spec.other"]),
        operator=st.sampled_from(["In", "NotIn", "Exists"]),
        values=st.lists(st.sampled_from([*names, "missing"]), min_size=1, max_size=2).map(tuple),
    )


def check(table: NodeTable, current: dict[str, dict[str, str]], mask: np.ndarray, fn: object) -> None:
    assert mask.dtype == np.bool_
    assert mask.shape == (table.capacity,)
    for name, lab in current.items():
        slot = table.slot_of[name]
        assert bool(mask[slot]) == fn(name, lab), (name, lab)  # type: ignore[operator]


@settings(max_examples=300, deadline=None)
@given(tables(), requirement_st)
def test_requirement_matches_scalar(
    data: tuple[NodeTable, dict[str, dict[str, str]]], req: NodeSelectorRequirement
) -> None:
    table, current = data
    check(table, current, requirement_mask(table, req), lambda _n, lab: req.matches(lab))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_term_and_selector_match_scalar(data: st.DataObject) -> None:
    table, current = data.draw(tables())
    names = sorted(current) or ["n0"]
    terms = data.draw(
        st.lists(
            st.builds(
                NodeSelectorTerm,
                match_expressions=st.lists(requirement_st, max_size=3).map(tuple),
                match_fields=st.lists(field_st(names), max_size=2).map(tuple),
            ),
            min_size=1,
            max_size=3,
        )
    )
    selector = NodeSelector(tuple(terms))
    for term in terms:
        check(table, current, term_mask(table, term), term.matches)
    check(table, current, node_selector_mask(table, selector), selector.matches)
    # The slots form answers like the full form, in the order of the slots given.
    slots = np.array(sorted(table.slot_of[n] for n in current), dtype=np.int64)
    np.testing.assert_array_equal(
        node_selector_mask(table, selector, slots), node_selector_mask(table, selector)[slots]
    )
    for term in terms:
        for req in term.match_fields:
            np.testing.assert_array_equal(
                field_requirement_mask(table, req, slots[::-1]),
                field_requirement_mask(table, req)[slots[::-1]],
            )


@settings(max_examples=200, deadline=None)
@given(tables(), labels_st)
def test_match_labels_matches_scalar(
    data: tuple[NodeTable, dict[str, dict[str, str]]], wanted: dict[str, str]
) -> None:
    table, current = data
    expected = lambda _n, lab: all(lab.get(k) == v for k, v in wanted.items())  # noqa: E731
    check(table, current, match_labels_mask(table, wanted), expected)


def test_examples() -> None:
    table, _ = build_table(
        [{"kernel": "0206", "gpu": "nvidia"}, {"kernel": "0204"}, {"kernel": "abc"}, {}], {}, set()
    )
    gt = NodeSelectorRequirement("kernel", "Gt", ("0204",))
    assert requirement_mask(table, gt)[:4].tolist() == [True, False, False, False]
    lt = NodeSelectorRequirement("kernel", "Lt", ("300",))
    assert requirement_mask(table, lt)[:4].tolist() == [True, True, False, False]
    not_in = NodeSelectorRequirement("gpu", "NotIn", ("amd", "intel"))
    assert requirement_mask(table, not_in)[:4].tolist() == [True, True, True, True]
    unknown_key = NodeSelectorRequirement("nope", "In", ("x",))
    assert not requirement_mask(table, unknown_key).any()
    assert not term_mask(table, NodeSelectorTerm()).any()  # an empty term matches no node
    by_name = NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("n1",)),))
    assert term_mask(table, by_name)[:4].tolist() == [False, True, False, False]
    assert match_labels_mask(table, {})[:4].all()
    assert not match_labels_mask(table, {"gpu": "amd"}).any()
