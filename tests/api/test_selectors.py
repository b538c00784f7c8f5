"""Label selector and node selector semantics and validation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
    label_value_error,
    qualified_name_error,
)
from kubesched.errors import InputError

FIELD = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
NODE_FIELD = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


# ----------------------------------------------------------------------------- label selectors


def test_empty_selector_matches_everything() -> None:
    sel = LabelSelector.from_dict({}, FIELD)
    assert sel.is_empty
    assert sel.matches({})
    assert sel.matches({"a": "b"})
    assert LabelSelector.everything() == sel


def test_missing_selector_matches_nothing() -> None:
    sel = LabelSelector.from_dict(None, FIELD)
    assert sel == LabelSelector.nothing()
    assert not sel.is_empty
    assert not sel.matches({})
    assert not sel.matches({"a": "b"})


def test_null_fields_are_absent() -> None:
    sel = LabelSelector.from_dict({"matchLabels": None, "matchExpressions": None}, FIELD)
    assert sel.is_empty


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"foo": "bar"}}, {"foo": "bar"}, True),
        ({"matchLabels": {"foo": "bar"}}, {"foo": "bar", "x": "y"}, True),
        ({"matchLabels": {"foo": "bar"}}, {"foo": "baz"}, False),
        ({"matchLabels": {"foo": "bar"}}, {}, False),
        ({"matchLabels": {"foo": "bar", "a": "b"}}, {"foo": "bar"}, False),
        ({"matchLabels": {"foo": ""}}, {"foo": ""}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "In", "values": ["a", "b"]}]}, {"foo": "b"}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "In", "values": ["a", "b"]}]}, {"foo": "c"}, False),
        ({"matchExpressions": [{"key": "foo", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["a"]}]}, {"foo": "b"}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["a"]}]}, {"foo": "a"}, False),
        # NotIn and DoesNotExist match objects without the key.
        ({"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, {"foo": ""}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, {"bar": "x"}, False),
        ({"matchExpressions": [{"key": "foo", "operator": "DoesNotExist"}]}, {"bar": "x"}, True),
        ({"matchExpressions": [{"key": "foo", "operator": "DoesNotExist"}]}, {"foo": "x"}, False),
        ({"matchExpressions": [{"key": "foo", "operator": "Exists", "values": []}]}, {"foo": "x"}, True),
        # matchLabels and matchExpressions are ANDed.
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"app": "web", "tier": "fe"},
            True,
        ),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"app": "web"},
            False,
        ),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}],
            },
            {"app": "web"},
            False,
        ),
        (
            {"matchExpressions": [{"key": "example.com/zone", "operator": "In", "values": ["z1"]}]},
            {"example.com/zone": "z1"},
            True,
        ),
    ],
)
def test_label_selector_matches(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.from_dict(selector, FIELD).matches(labels) is expected


def test_from_match_labels() -> None:
    sel = LabelSelector.from_match_labels({"b": "2", "a": "1"})
    assert sel.requirements == (Requirement("a", "In", ("1",)), Requirement("b", "In", ("2",)))
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
    assert LabelSelector.from_match_labels({}).is_empty


def test_selectors_are_hashable() -> None:
    a = LabelSelector.from_dict({"matchLabels": {"a": "1"}}, FIELD)
    b = LabelSelector.from_dict({"matchLabels": {"a": "1"}}, FIELD)
    assert a == b
    assert len({a, b, LabelSelector.nothing(), LabelSelector.everything()}) == 3


@pytest.mark.parametrize(
    ("selector", "field", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            ".matchExpressions[0].values",
            "at least one value",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
            ".matchExpressions[0].values",
            "at least one",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            ".matchExpressions[0].values",
            "must be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]},
            ".matchExpressions[0].values",
            "must be empty",
        ),
        (
            {
                "matchExpressions": [
                    {"key": "a", "operator": "Exists"},
                    {"key": "b", "operator": "Gt", "values": ["1"]},
                ]
            },
            ".matchExpressions[1].operator",
            "unsupported operator 'Gt'",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]},
            ".matchExpressions[0].operator",
            "'in'",
        ),
        ({"matchExpressions": [{"key": "a"}]}, ".matchExpressions[0].operator", "required"),
        ({"matchExpressions": [{"operator": "Exists"}]}, ".matchExpressions[0].key", "required"),
        (
            {"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]},
            ".matchExpressions[0].key",
            "qualified name",
        ),
        (
            {"matchExpressions": [{"key": "", "operator": "Exists"}]},
            ".matchExpressions[0].key",
            "qualified name",
        ),
        (
            {"matchExpressions": [{"key": 5, "operator": "Exists"}]},
            ".matchExpressions[0].key",
            "must be a string",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            ".matchExpressions[0].values",
            "list",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
            ".matchExpressions[0].values[0]",
            "string",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "-bad"]}]},
            ".matchExpressions[0].values[1]",
            "label value",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "extra": 1}]},
            ".matchExpressions[0].extra",
            "unknown",
        ),
        ({"matchExpressions": {"key": "a"}}, ".matchExpressions", "must be a list"),
        ({"matchExpressions": ["x"]}, ".matchExpressions[0]", "mapping"),
        ({"matchLabels": ["a"]}, ".matchLabels", "mapping"),
        ({"matchLabels": {"a": 1}}, ".matchLabels", "must be a string"),
        ({"matchLabels": {"a": "b c"}}, ".matchLabels", "label value"),
        ({"matchLabels": {"Bad_Prefix/x": "b"}}, ".matchLabels", "DNS subdomain"),
        ({"matchExpression": []}, ".matchExpression", "unknown field"),
    ],
)
def test_label_selector_validation(selector: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        LabelSelector.from_dict(selector, FIELD)
    assert info.value.field == FIELD + field


def test_label_selector_must_be_mapping() -> None:
    with pytest.raises(InputError) as info:
        LabelSelector.from_dict(["x"], FIELD)  # type: ignore[arg-type]
    assert info.value.field == FIELD


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a", True),
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("kubernetes.io/hostname", True),
        ("node-role.kubernetes.io/control-plane", True),
        ("A_b.c-D", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-a", False),
        ("a-", False),
        ("", False),
        ("/a", False),
        ("a/", False),
        ("a/b/c", False),
        ("Example.com/a", False),
        ("example.com/" + "a" * 63, True),
        ("a b", False),
    ],
)
def test_qualified_name(name: str, ok: bool) -> None:
    assert (qualified_name_error(name) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("a", True),
        ("1", True),
        ("a.b_c-d", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-1", False),
        ("a/b", False),
    ],
)
def test_label_value(value: str, ok: bool) -> None:
    assert (label_value_error(value) is None) is ok


label_keys = st.sampled_from(["a", "b", "c", "app", "example.com/zone"])
label_values = st.sampled_from(["", "x", "y", "z1"])
label_dicts = st.dictionaries(label_keys, label_values, max_size=5)


@given(label_dicts, label_dicts)
def test_match_labels_selects_supersets(match_labels: dict[str, str], labels: dict[str, str]) -> None:
    sel = LabelSelector.from_dict({"matchLabels": match_labels}, FIELD)
    expected = all(k in labels and labels[k] == v for k, v in match_labels.items())
    assert sel.matches(labels) is expected
    assert sel.matches({**labels, **match_labels})


# ----------------------------------------------------------------------------- node selectors


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


@pytest.mark.parametrize(
    ("expr", "labels", "expected"),
    [
        (req("zone", "In", "a", "b"), {"zone": "a"}, True),
        (req("zone", "In", "a", "b"), {"zone": "c"}, False),
        (req("zone", "In", "a"), {}, False),
        (req("zone", "NotIn", "a"), {"zone": "b"}, True),
        (req("zone", "NotIn", "a"), {"zone": "a"}, False),
        (req("zone", "NotIn", "a"), {}, True),
        (req("gpu", "Exists"), {"gpu": ""}, True),
        (req("gpu", "Exists"), {}, False),
        (req("gpu", "DoesNotExist"), {}, True),
        (req("gpu", "DoesNotExist"), {"gpu": "true"}, False),
        (req("cores", "Gt", "4"), {"cores": "5"}, True),
        (req("cores", "Gt", "4"), {"cores": "4"}, False),
        (req("cores", "Gt", "4"), {"cores": "3"}, False),
        (req("cores", "Lt", "4"), {"cores": "3"}, True),
        (req("cores", "Lt", "4"), {"cores": "4"}, False),
        (req("cores", "Lt", "4"), {"cores": "-7"}, True),  # node labels are compared as int64
        (req("cores", "Gt", "0"), {"cores": "+1"}, True),  # strconv.ParseInt accepts a sign
        (req("cores", "Gt", "4"), {}, False),  # a missing label never satisfies Gt/Lt
        (req("cores", "Lt", "4"), {}, False),
        (req("cores", "Gt", "4"), {"cores": "five"}, False),  # non-integer label: no match
        (req("cores", "Lt", "4"), {"cores": "five"}, False),
        (req("cores", "Lt", "4"), {"cores": "3.5"}, False),
        (req("cores", "Lt", "4"), {"cores": ""}, False),
        (req("cores", "Gt", "4"), {"cores": "99999999999999999999"}, False),  # overflows int64
        (req("cores", "Gt", "4"), {"cores": "0x10"}, False),
        (req("cores", "Gt", "4"), {"cores": "00005"}, True),
    ],
)
def test_node_selector_requirement_matches(
    expr: dict[str, Any], labels: dict[str, str], expected: bool
) -> None:
    term = NodeSelectorTerm.from_dict({"matchExpressions": [expr]}, "t")
    assert term.matches("node-1", labels) is expected
    assert NodeSelectorRequirement.from_dict(expr, "x").matches(labels) is expected


@pytest.mark.parametrize(
    ("fields", "node_name", "expected"),
    [
        ([req("metadata.name", "In", "node-1")], "node-1", True),
        ([req("metadata.name", "In", "node-1")], "node-2", False),
        ([req("metadata.name", "NotIn", "node-1")], "node-2", True),
        ([req("metadata.name", "NotIn", "node-1")], "node-1", False),
        ([req("metadata.name", "In", "node-1"), req("metadata.name", "NotIn", "node-1")], "node-1", False),
    ],
)
def test_match_fields(fields: list[dict[str, Any]], node_name: str, expected: bool) -> None:
    term = NodeSelectorTerm.from_dict({"matchFields": fields}, "t")
    assert term.matches(node_name, {}) is expected


def test_term_ands_expressions_and_fields() -> None:
    term = NodeSelectorTerm.from_dict(
        {"matchExpressions": [req("zone", "In", "a")], "matchFields": [req("metadata.name", "In", "n1")]}, "t"
    )
    assert term.matches("n1", {"zone": "a"})
    assert not term.matches("n2", {"zone": "a"})
    assert not term.matches("n1", {"zone": "b"})


def test_empty_term_matches_nothing() -> None:
    empties: list[dict[str, Any]] = [
        {},
        {"matchExpressions": [], "matchFields": []},
        {"matchExpressions": None},
    ]
    for data in empties:
        term = NodeSelectorTerm.from_dict(data, "t")
        assert term.is_empty
        assert not term.matches("node-1", {})
        assert not term.matches("node-1", {"a": "b"})


def test_node_selector_ors_terms() -> None:
    sel = NodeSelector.from_dict(
        {
            "nodeSelectorTerms": [
                {},  # an empty term matches nothing but does not stop the others
                {"matchExpressions": [req("zone", "In", "a")]},
                {"matchExpressions": [req("zone", "In", "b"), req("ssd", "Exists")]},
                {"matchFields": [req("metadata.name", "In", "special")]},
            ]
        },
        NODE_FIELD,
    )
    assert len(sel.terms) == 4
    assert sel.matches("n", {"zone": "a"})
    assert sel.matches("n", {"zone": "b", "ssd": "true"})
    assert not sel.matches("n", {"zone": "b"})
    assert sel.matches("special", {})
    assert not sel.matches("n", {})


def test_node_selector_with_only_empty_terms_matches_nothing() -> None:
    sel = NodeSelector.from_dict({"nodeSelectorTerms": [{}]}, NODE_FIELD)
    assert not sel.matches("n", {"a": "b"})


def test_nameless_node_skips_match_fields() -> None:
    # Upstream only evaluates fields the node has; a node always has a name in practice.
    term = NodeSelectorTerm((), (NodeSelectorRequirement("metadata.name", "In", ("x",)),))
    assert term.matches("", {})


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"nodeSelectorTerms": []}, ".nodeSelectorTerms", "at least one"),
        ({}, ".nodeSelectorTerms", "at least one"),
        ({"nodeSelectorTerms": "x"}, ".nodeSelectorTerms", "list"),
        ({"nodeSelectorTerms": [None]}, ".nodeSelectorTerms[0]", "mapping"),
        ({"terms": []}, ".terms", "unknown field"),
        (
            {"nodeSelectorTerms": [{}, {"matchExpressions": [req("a", "Exists"), req("b", "Foo")]}]},
            ".nodeSelectorTerms[1].matchExpressions[1].operator",
            "unsupported operator 'Foo'",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "In")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values",
            "at least one",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Exists", "x")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values",
            "must be empty",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Gt")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values",
            "exactly one",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Lt", "1", "2")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values",
            "exactly one",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Gt", "x")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "not an integer",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Gt", "1.5")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "not an integer",
        ),
        (
            # Like labels.NewRequirement: the value must also be a valid label value.
            {"nodeSelectorTerms": [{"matchExpressions": [req("a", "Gt", "-1")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].values[0]",
            "label value",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [req("bad key", "Exists")]}]},
            ".nodeSelectorTerms[0].matchExpressions[0].key",
            "qualified name",
        ),
        (
            {"nodeSelectorTerms": [{"matchFields": [req("metadata.uid", "In", "x")]}]},
            ".nodeSelectorTerms[0].matchFields[0].key",
            "unsupported field selector key",
        ),
        (
            {"nodeSelectorTerms": [{"matchFields": [req("metadata.name", "Exists")]}]},
            ".nodeSelectorTerms[0].matchFields[0].operator",
            "unsupported operator",
        ),
        (
            {"nodeSelectorTerms": [{"matchFields": [req("metadata.name", "In", "a", "b")]}]},
            ".nodeSelectorTerms[0].matchFields[0].values",
            "exactly one",
        ),
        (
            {"nodeSelectorTerms": [{"matchFields": [req("metadata.name", "NotIn")]}]},
            ".nodeSelectorTerms[0].matchFields[0].values",
            "exactly one",
        ),
        (
            {"nodeSelectorTerms": [{"matchLabels": {"a": "b"}}]},
            ".nodeSelectorTerms[0].matchLabels",
            "unknown field",
        ),
    ],
)
def test_node_selector_validation(data: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        NodeSelector.from_dict(data, NODE_FIELD)
    assert info.value.field == NODE_FIELD + field


def test_preferred_scheduling_term() -> None:
    field = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    term = PreferredSchedulingTerm.from_dict(
        {"weight": 50, "preference": {"matchExpressions": [req("zone", "In", "a")]}}, field
    )
    assert term.weight == 50
    assert term.matches("n", {"zone": "a"})
    assert not term.matches("n", {"zone": "b"})
    assert PreferredSchedulingTerm.from_dict({"weight": 1, "preference": {}}, field).weight == 1
    assert PreferredSchedulingTerm.from_dict({"weight": 100, "preference": {}}, field).weight == 100
    # A missing preference is the empty term (upstream zero value): it matches no node.
    assert not PreferredSchedulingTerm.from_dict({"weight": 5}, field).matches("n", {})


@pytest.mark.parametrize(
    ("data", "child", "message"),
    [
        ({"weight": 0, "preference": {}}, "weight", "1-100"),
        ({"weight": 101, "preference": {}}, "weight", "1-100"),
        ({"weight": -1, "preference": {}}, "weight", "1-100"),
        ({"preference": {}}, "weight", "required"),
        ({"weight": "5", "preference": {}}, "weight", "integer"),
        ({"weight": True, "preference": {}}, "weight", "integer"),
        ({"weight": 1.5, "preference": {}}, "weight", "integer"),
        (
            {"weight": 1, "preference": {"matchExpressions": [req("a", "Nope")]}},
            "preference.matchExpressions[0].operator",
            "unsupported",
        ),
        ({"weight": 1, "preference": []}, "preference", "mapping"),
    ],
)
def test_preferred_scheduling_term_validation(data: dict[str, Any], child: str, message: str) -> None:
    field = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[3]"
    with pytest.raises(InputError, match=message) as info:
        PreferredSchedulingTerm.from_dict(data, field)
    assert info.value.field == f"{field}.{child}"


@given(label_dicts, label_dicts)
def test_node_in_expressions_agree_with_label_selector(
    match_labels: dict[str, str], labels: dict[str, str]
) -> None:
    exprs = [req(k, "In", v) for k, v in match_labels.items() if v]
    if not exprs:
        return
    term = NodeSelectorTerm.from_dict({"matchExpressions": exprs}, "t")
    sel = LabelSelector.from_dict({"matchExpressions": exprs}, "s")
    assert term.matches("n", labels) is sel.matches(labels)
