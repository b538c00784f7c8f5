"""Taint/toleration matching (Toleration.ToleratesTaint) and validation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    TAINT_EFFECTS,
    Taint,
    Toleration,
    find_untolerated_taint,
    tolerates_any,
)
from kubesched.errors import InputError

FOO_BAR_NS = Taint("foo", "bar", NO_SCHEDULE)


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        # Cases from TestTolerationToleratesTaint in k8s.io/api/core/v1.
        (Toleration("foo", "Exists", "", NO_SCHEDULE), Taint("foo", "", NO_SCHEDULE), True),
        (Toleration("foo", "Exists", "", NO_SCHEDULE), Taint("foo", "bar", NO_SCHEDULE), True),
        (Toleration("foo", "Equal", "bar", NO_SCHEDULE), FOO_BAR_NS, True),
        (Toleration("foo", "Equal", "value1", NO_SCHEDULE), Taint("foo", "value2", NO_SCHEDULE), False),
        (Toleration("foo", "Equal", "bar", NO_EXECUTE), FOO_BAR_NS, False),
        (Toleration("foo", "Exists", "", NO_EXECUTE), FOO_BAR_NS, False),
        # An empty operator means Equal.
        (Toleration("foo", "", "bar", NO_SCHEDULE), FOO_BAR_NS, True),
        (Toleration("foo", "", "baz", NO_SCHEDULE), FOO_BAR_NS, False),
        # An empty effect matches every effect.
        (Toleration("foo", "Equal", "bar", ""), FOO_BAR_NS, True),
        (Toleration("foo", "Equal", "bar", ""), Taint("foo", "bar", NO_EXECUTE), True),
        (Toleration("foo", "Exists", "", ""), Taint("foo", "x", PREFER_NO_SCHEDULE), True),
        # Keys must be equal unless the toleration key is empty.
        (Toleration("other", "Exists", "", ""), FOO_BAR_NS, False),
        (Toleration("", "Exists", "", ""), FOO_BAR_NS, True),
        (Toleration("", "Exists", "", NO_SCHEDULE), FOO_BAR_NS, True),
        (Toleration("", "Exists", "", NO_EXECUTE), FOO_BAR_NS, False),
        # Empty key with Equal is invalid in the API but ToleratesTaint still compares values.
        (Toleration("", "Equal", "bar", ""), FOO_BAR_NS, True),
        (Toleration("", "Equal", "", ""), FOO_BAR_NS, False),
        # Equal compares the (possibly empty) value exactly.
        (Toleration("foo", "Equal", "", NO_SCHEDULE), Taint("foo", "", NO_SCHEDULE), True),
        (Toleration("foo", "Equal", "", NO_SCHEDULE), FOO_BAR_NS, False),
        (Toleration("foo", "Equal", "Bar", NO_SCHEDULE), FOO_BAR_NS, False),
        # An operator the API would reject tolerates nothing.
        (Toleration("foo", "Gte", "bar", NO_SCHEDULE), FOO_BAR_NS, False),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected
    assert tolerates_any([toleration], taint) is expected


def test_tolerates_any() -> None:
    assert not tolerates_any([], FOO_BAR_NS)
    assert tolerates_any([Toleration("x", "Exists"), Toleration("foo", "Exists")], FOO_BAR_NS)
    assert not tolerates_any([Toleration("x", "Exists"), Toleration("foo", "Equal", "nope")], FOO_BAR_NS)


A = Taint("a", "1", NO_SCHEDULE)
B = Taint("b", "", PREFER_NO_SCHEDULE)
C = Taint("c", "3", NO_EXECUTE)
HARD = {NO_SCHEDULE, NO_EXECUTE}


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "expected"),
    [
        ([], [], None, None),
        ([], [Toleration("", "Exists")], HARD, None),
        ([A], [], None, A),
        ([A, B, C], [], None, A),  # the first in node order
        ([B, A, C], [], None, B),
        ([B, A, C], [], HARD, A),  # PreferNoSchedule is ignored by the filter
        ([A, B, C], [Toleration("a", "Equal", "1")], None, B),
        ([A, B, C], [Toleration("a", "Equal", "1")], HARD, C),
        (
            [A, B, C],
            [Toleration("a", "Equal", "1"), Toleration("c", "Exists", "", NO_EXECUTE, 30)],
            HARD,
            None,
        ),
        ([A, B, C], [Toleration("", "Exists")], None, None),
        ([A, B, C], [Toleration("", "Exists", "", NO_EXECUTE)], None, A),
        ([A, B, C], [Toleration("a", "Equal", "2")], HARD, A),
        ([A, B, C], [], [PREFER_NO_SCHEDULE], B),
        ([A, C], [], [PREFER_NO_SCHEDULE], None),
    ],
)
def test_find_untolerated_taint(
    taints: list[Taint], tolerations: list[Toleration], effects: set[str] | None, expected: Taint | None
) -> None:
    assert find_untolerated_taint(taints, tolerations, effects) == expected


def test_taints_and_tolerations_are_hashable() -> None:
    assert {Taint("a", "1", NO_SCHEDULE): 1}[Taint("a", "1", NO_SCHEDULE)] == 1
    assert len(frozenset([A, A, B])) == 2
    assert len({Toleration("a", "Exists"), Toleration("a", "Exists")}) == 1
    assert str(A) == "a=1:NoSchedule"
    assert str(B) == "b:PreferNoSchedule"


# ----------------------------------------------------------------------------- parsing

TAINT_FIELD = "spec.taints[1]"
TOL_FIELD = "spec.tolerations[2]"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"key": "a", "value": "1", "effect": "NoSchedule"}, Taint("a", "1", NO_SCHEDULE)),
        (
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE),
        ),
        (
            {"key": "a", "value": None, "effect": "NoExecute", "timeAdded": "2024-01-01T00:00:00Z"},
            Taint("a", "", NO_EXECUTE),
        ),
        ({"key": "a", "effect": "PreferNoSchedule"}, Taint("a", "", PREFER_NO_SCHEDULE)),
    ],
)
def test_taint_from_dict(data: dict[str, Any], expected: Taint) -> None:
    assert Taint.from_dict(data, TAINT_FIELD) == expected


@pytest.mark.parametrize(
    ("data", "child", "message"),
    [
        ({"effect": "NoSchedule"}, "key", "required"),
        ({"key": "", "effect": "NoSchedule"}, "key", "required"),
        ({"key": "a"}, "effect", "required"),
        ({"key": "a", "effect": "NoScheduleX"}, "effect", "unsupported effect"),
        ({"key": "a", "effect": "noschedule"}, "effect", "unsupported effect"),
        ({"key": "a/b/c", "effect": "NoSchedule"}, "key", "qualified name"),
        ({"key": "a", "value": "x y", "effect": "NoSchedule"}, "value", "label value"),
        ({"key": "a", "value": 1, "effect": "NoSchedule"}, "value", "string"),
        ({"key": "a", "effect": "NoSchedule", "operator": "Exists"}, "operator", "unknown field"),
    ],
)
def test_taint_validation(data: dict[str, Any], child: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        Taint.from_dict(data, TAINT_FIELD)
    assert info.value.field == f"{TAINT_FIELD}.{child}"


def test_taint_must_be_mapping() -> None:
    with pytest.raises(InputError) as info:
        Taint.from_dict("a=b:NoSchedule", TAINT_FIELD)  # type: ignore[arg-type]
    assert info.value.field == TAINT_FIELD


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"key": "a", "value": "1"}, Toleration("a", "Equal", "1", "", None)),
        ({"key": "a", "operator": "", "value": "1"}, Toleration("a", "Equal", "1", "", None)),
        ({"key": "a", "operator": "Equal"}, Toleration("a", "Equal", "", "", None)),
        (
            {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
            Toleration("a", "Exists", "", NO_SCHEDULE),
        ),
        ({"operator": "Exists"}, Toleration("", "Exists", "", "", None)),
        (
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            Toleration("node.kubernetes.io/not-ready", "Exists", "", NO_EXECUTE, 300),
        ),
        # Zero and negative seconds are allowed (the system treats them as 0).
        (
            {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5},
            Toleration("a", "Exists", "", NO_EXECUTE, -5),
        ),
    ],
)
def test_toleration_from_dict(data: dict[str, Any], expected: Toleration) -> None:
    assert Toleration.from_dict(data, TOL_FIELD) == expected


@pytest.mark.parametrize(
    ("data", "child", "message"),
    [
        (
            {"key": "a", "operator": "Exists", "value": "x"},
            "value",
            "must be empty when operator is 'Exists'",
        ),
        ({"value": "x"}, "operator", "must be 'Exists' when key is empty"),
        ({"key": "", "operator": "Equal"}, "operator", "must be 'Exists' when key is empty"),
        ({"key": "a", "operator": "exists"}, "operator", "unsupported operator"),
        ({"key": "a", "operator": "Gt", "value": "1"}, "operator", "unsupported operator"),
        ({"key": "a", "operator": "Exists", "effect": "Never"}, "effect", "unsupported effect"),
        (
            {"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
            "effect",
            "NoExecute",
        ),
        ({"key": "a", "operator": "Exists", "tolerationSeconds": 5}, "effect", "NoExecute"),
        (
            {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": "5"},
            "tolerationSeconds",
            "integer",
        ),
        (
            {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": True},
            "tolerationSeconds",
            "integer",
        ),
        ({"key": "a b", "operator": "Exists"}, "key", "qualified name"),
        ({"key": "a", "value": "-x"}, "value", "label value"),
        ({"key": ["a"]}, "key", "string"),
        ({"key": "a", "operator": "Exists", "seconds": 1}, "seconds", "unknown field"),
    ],
)
def test_toleration_validation(data: dict[str, Any], child: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        Toleration.from_dict(data, TOL_FIELD)
    assert info.value.field == f"{TOL_FIELD}.{child}"
    assert f"field {TOL_FIELD}.{child}" in str(info.value)


# ----------------------------------------------------------------------------- properties

keys = st.sampled_from(["a", "b", "example.com/c"])
values = st.sampled_from(["", "1", "x"])
effects = st.sampled_from(TAINT_EFFECTS)
taints = st.builds(Taint, keys, values, effects)


@given(taints)
def test_wildcard_toleration_tolerates_everything(taint: Taint) -> None:
    assert Toleration.from_dict({"operator": "Exists"}, "t").tolerates(taint)


@given(taints)
def test_toleration_copied_from_taint_tolerates_it(taint: Taint) -> None:
    exact = Toleration.from_dict({"key": taint.key, "value": taint.value, "effect": taint.effect}, "t")
    assert exact.tolerates(taint)
    assert Toleration(taint.key, "Exists", "", taint.effect).tolerates(taint)


@given(
    st.lists(taints, max_size=6),
    st.lists(
        st.builds(
            Toleration,
            keys,
            st.sampled_from(["Equal", "Exists"]),
            values,
            st.sampled_from(["", *TAINT_EFFECTS]),
        ),
        max_size=4,
    ),
)
def test_find_untolerated_taint_is_first_untolerated(
    taint_list: list[Taint], tolerations: list[Toleration]
) -> None:
    found = find_untolerated_taint(taint_list, tolerations)
    untolerated = [t for t in taint_list if not any(tol.tolerates(t) for tol in tolerations)]
    assert found == (untolerated[0] if untolerated else None)
    hard = find_untolerated_taint(taint_list, tolerations, HARD)
    assert hard == next((t for t in untolerated if t.effect in HARD), None)
