"""Proportion / drf arithmetic: hand-derived cases in the spirit of Volcano's plugin tests, plus invariants.

Unless stated, vectors are over ``(cpu, memory)`` in milli-CPU and bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.batch.shares import (
    MIN_RESOURCE,
    QueueDemand,
    ResourceSpace,
    capability_vector,
    dominant_resource,
    dominant_share,
    drf_preemptable,
    job_share_order,
    less_equal,
    overused,
    proportion_deserved,
    proportion_queue_order,
    queue_allocatable,
    queue_share,
    real_capability,
    reclaim_victims,
    share,
)

SPACE = ResourceSpace(("cpu", "memory"))
BIG = 1_000_000.0


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def q(name: str, weight: int, request: np.ndarray, **kw: np.ndarray | None) -> QueueDemand:
    return QueueDemand(name=name, weight=weight, request=request, allocated=v(0, 0), **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- #
# ResourceSpace


def test_space_round_trip_and_order():
    space = ResourceSpace.covering({"nvidia.com/gpu": 1, "cpu": 2}, None, {"pods": 3})
    assert space.names == ("cpu", "memory", "nvidia.com/gpu", "pods")
    vec = space.from_dict({"cpu": 1500, "pods": 2})
    assert vec.tolist() == [1500.0, 0.0, 0.0, 2.0]
    assert space.to_dict(vec) == {"cpu": 1500, "pods": 2}
    assert space.to_dict(vec, keep_zero=True) == {"cpu": 1500, "memory": 0, "nvidia.com/gpu": 0, "pods": 2}
    # Fractions round down; unlimited dimensions are left out.
    assert space.to_dict(np.array([3333.9, np.inf, 0, 1])) == {"cpu": 3333, "pods": 1}


def test_space_rejects_unknown_names_and_bad_shapes():
    with pytest.raises(ValueError):
        SPACE.from_dict({"nvidia.com/gpu": 1})
    with pytest.raises(ValueError):
        SPACE.to_dict(np.zeros(3))
    with pytest.raises(ValueError):
        ResourceSpace(("cpu", "cpu"))


def test_capability_vector_reads_like_volcano():
    space = ResourceSpace(("cpu", "memory", "nvidia.com/gpu"))
    assert capability_vector(space, {}) is None
    assert capability_vector(space, None) is None
    # Only a GPU limit: cpu and memory (absent, so 0) become unlimited.
    assert capability_vector(space, {"nvidia.com/gpu": 2}).tolist() == [np.inf, np.inf, 2.0]  # type: ignore[union-attr]
    # cpu/memory at zero are unlimited; a scalar at zero is a real zero limit.
    got = capability_vector(space, {"cpu": 0, "memory": 0, "nvidia.com/gpu": 0})
    assert got.tolist() == [np.inf, np.inf, 0.0]  # type: ignore[union-attr]
    # A name the cluster does not have is dropped.
    assert capability_vector(space, {"cpu": 500, "example.com/foo": 1}).tolist() == [500, np.inf, np.inf]  # type: ignore[union-attr]


def test_less_equal_tolerance_and_share():
    assert less_equal(v(1000.05, 0), v(1000, 0))  # within 0.1
    assert not less_equal(v(1000.2, 0), v(1000, 0))
    assert share(0, 0) == 0.0
    assert share(5, 0) == 1.0
    assert share(1, 4) == 0.25


# ---------------------------------------------------------------------------------------------- #
# proportion: hand-derived deserved


def test_weights_one_to_two_split_everything():
    # total (12000, 24); both queues ask for far more than exists.
    # Round 1, W = 1 + 2 = 3: a gets 12000*1/3 = 4000 cpu, 24/3 = 8 mem; b gets 8000 cpu, 16 mem.
    # Handed out = total, remaining = 0 -> stop.
    got = proportion_deserved(v(12000, 24), [q("a", 1, v(BIG, BIG)), q("b", 2, v(BIG, BIG))])
    np.testing.assert_allclose(got["a"], v(4000, 8))
    np.testing.assert_allclose(got["b"], v(8000, 16))


def test_capability_caps_and_rest_flows_to_others():
    # total (12000, 12000); a has capability cpu 2000 (memory unset -> unlimited).
    # realCapability a = (12000 - 0) + 0 min cap = (2000, 12000); b = (12000, 12000).
    # Round 1, W=2: a gets 6000 each -> cpu cut to 2000 => (2000, 6000); b => (6000, 6000).
    #   handed out cpu 2000+6000 = 8000, mem 12000 -> remaining (4000, 0).
    # Round 2, W=2: a: cpu 2000+2000 cut back to 2000, mem 6000+0 -> unchanged -> met.
    #   b: (6000+2000, 6000) = (8000, 6000); remaining (2000, 0).
    # Round 3, W=1: b: (10000, 6000); remaining (0, 0) -> stop.
    cap = capability_vector(SPACE, {"cpu": 2000})
    got = proportion_deserved(
        v(12000, 12000), [q("a", 1, v(BIG, BIG), capability=cap), q("b", 1, v(BIG, BIG))]
    )
    np.testing.assert_allclose(got["a"], v(2000, 6000))
    np.testing.assert_allclose(got["b"], v(10000, 6000))


def test_small_request_releases_surplus():
    # total (12000, 12000); a only asks for (2000, 2000).
    # Round 1, W=2: a: min(6000, request 2000) = 2000 -> request <= deserved -> met; b: 6000.
    #   remaining = 12000 - 2000 - 6000 = 4000 per dim.
    # Round 2, W=1: b: 6000 + 4000 = 10000; remaining 0.
    got = proportion_deserved(v(12000, 12000), [q("a", 1, v(2000, 2000)), q("b", 1, v(BIG, BIG))])
    np.testing.assert_allclose(got["a"], v(2000, 2000))
    np.testing.assert_allclose(got["b"], v(10000, 10000))


def test_guarantee_floor_and_reserved_from_others():
    # total (10000, 10000); a weight 1 guarantees (6000, 6000); b weight 3, no guarantee.
    # total guarantee = 6000 -> realCapability a = (10000-6000)+6000 = 10000, b = 4000 + 0 = 4000.
    # Round 1, W=4: a: 10000/4 = 2500 -> raised to guarantee 6000; b: 7500 -> cut to 4000.
    #   remaining = 10000 - 6000 - 4000 = 0 -> stop.
    got = proportion_deserved(
        v(10000, 10000),
        [q("a", 1, v(BIG, BIG), guarantee=v(6000, 6000)), q("b", 3, v(BIG, BIG))],
    )
    np.testing.assert_allclose(got["a"], v(6000, 6000))
    np.testing.assert_allclose(got["b"], v(4000, 4000))


def test_guarantee_above_request_still_granted():
    # a asks for 1000 but guarantees 3000: min(5000, 1000) = 1000, then max(1000, 3000) = 3000 -> met.
    # realCapability b = (10000 - 3000) = 7000; b: min(5000, 7000) = 5000.
    # remaining = 10000 - 3000 - 5000 = 2000; round 2, W=1: b 7000 -> capped at 7000; remaining 0.
    got = proportion_deserved(
        v(10000, 0), [q("a", 1, v(1000, 0), guarantee=v(3000, 0)), q("b", 1, v(BIG, 0))]
    )
    np.testing.assert_allclose(got["a"], v(3000, 0))
    np.testing.assert_allclose(got["b"], v(7000, 0))


def test_three_queues_water_filling_rounds():
    # total cpu 12000 (memory unused). a asks 1000, b asks 5000, c asks plenty; all weight 1.
    # Round 1, W=3: each 4000 -> a cut to 1000 (met), b 4000, c 4000; remaining 12000-9000 = 3000.
    # Round 2, W=2: b 4000+1500 = 5500 -> 5000 (met), c 5500; remaining 3000-1000-1500 = 500.
    # Round 3, W=1: c 5500+500 = 6000; remaining 0.
    got = proportion_deserved(
        v(12000, 0), [q("a", 1, v(1000, 0)), q("b", 1, v(5000, 0)), q("c", 1, v(BIG, 0))]
    )
    np.testing.assert_allclose(got["a"], v(1000, 0))
    np.testing.assert_allclose(got["b"], v(5000, 0))
    np.testing.assert_allclose(got["c"], v(6000, 0))


def test_total_guarantee_counts_queues_without_jobs():
    # Another queue (no jobs, not passed) guarantees 4000: realCapability a = (10000-4000)+0 = 6000.
    got = proportion_deserved(v(10000, 10000), [q("a", 1, v(BIG, BIG))], total_guarantee=v(4000, 4000))
    np.testing.assert_allclose(got["a"], v(6000, 6000))
    np.testing.assert_allclose(
        real_capability(v(10000, 0), v(4000, 0), v(5000, np.inf), v(1000, 0)), v(5000, 0)
    )


def test_no_queues_and_duplicate_names():
    assert proportion_deserved(v(1, 1), []) == {}
    with pytest.raises(ValueError):
        proportion_deserved(v(1, 1), [q("a", 1, v(1, 1)), q("a", 1, v(1, 1))])


# ---------------------------------------------------------------------------------------------- #
# proportion: overused, share, allocatable, reclaim, order


def test_overused_and_queue_share():
    assert overused(v(4000, 4000), v(4000, 4000.05))
    assert not overused(v(4000, 4000), v(3999, 5000))
    assert overused(v(0, 0), v(0, 0))  # nothing deserved: always overused
    assert queue_share(v(4000, 4000), v(2000, 3000)) == 0.75
    # memory deserved 0 is skipped, not treated as an infinite share.
    assert queue_share(v(4000, 0), v(2000, 500)) == 0.5
    assert queue_share(v(0, 0), v(5, 5)) == 0.0


def test_queue_allocatable_checks_requested_dims_only():
    deserved = v(4000, 4000)
    assert queue_allocatable(SPACE, deserved, v(3000, 1000), v(1000, 0))
    assert not queue_allocatable(SPACE, deserved, v(3000, 1000), v(1001, 0))
    assert not queue_allocatable(SPACE, deserved, v(3000, 1000), v(0, 5000))
    # cpu is already over, but the request does not ask for cpu.
    assert queue_allocatable(SPACE, deserved, v(5000, 1000), v(0, 1000))
    pods = ResourceSpace(("cpu", "memory", "pods"))
    assert queue_allocatable(
        pods, np.array([4000, 4000, 0.0]), np.array([0, 0, 5.0]), np.array([100, 0, 1.0])
    )


def test_reclaim_victims_until_within_deserved():
    # allocated cpu 7000 vs deserved 4000: victim (-> 5000), victim (-> 3000), then within -> stop.
    got = reclaim_victims(v(4000, 4000), v(7000, 1000), [v(2000, 0), v(2000, 0), v(2000, 0)])
    assert got == [0, 1]
    assert reclaim_victims(v(4000, 4000), v(1000, 1000), [v(500, 0)]) == []


def test_proportion_queue_order():
    assert proportion_queue_order(5, 0.9, 1, 0.1) < 0  # priority first
    assert proportion_queue_order(1, 0.1, 1, 0.5) == -1
    assert proportion_queue_order(1, 0.5, 1, 0.5) == 0
    assert proportion_queue_order(1, 0.6, 1, 0.5) == 1


# ---------------------------------------------------------------------------------------------- #
# drf


def test_dominant_share_and_resource():
    space = ResourceSpace(("cpu", "memory", "nvidia.com/gpu"))
    total = np.array([10000, 20000, 0.0])
    # cpu 3000/10000 = 0.3, memory 8000/20000 = 0.4 -> memory dominates.
    assert dominant_share(np.array([3000, 8000, 0.0]), total) == pytest.approx(0.4)
    assert dominant_resource(space, np.array([3000, 8000, 0.0]), total) == ("memory", pytest.approx(0.4))
    # The cluster has no GPUs: that dimension is ignored even if something holds one.
    assert dominant_share(np.array([1000, 0, 1.0]), total) == pytest.approx(0.1)
    assert dominant_share(np.array([1.0, 1.0, 1.0]), np.zeros(3)) == 0.0
    assert dominant_resource(space, np.zeros(3), total) == ("", 0.0)


def test_job_share_order():
    assert job_share_order(0.1, 0.2) == -1
    assert job_share_order(0.2, 0.2) == 0
    assert job_share_order(0.3, 0.2) == 1


def test_drf_preemptable():
    total = v(10000, 10000)
    # preemptor: (1000 + 1000) / 10000 = 0.2.
    # x: 6000 -2000 -> 4000 = 0.4 >= 0.2 victim; -2000 -> 2000 = 0.2 equal victim; -1000 -> 0.1 no.
    # y: 2500 - 1000 -> 1500 = 0.15 < 0.2 no. z is unknown -> skipped.
    preemptees = [("x", v(2000, 0)), ("x", v(2000, 0)), ("x", v(1000, 0)), ("y", v(1000, 0)), ("z", v(1, 0))]
    allocated = {"x": v(6000, 1000), "y": v(2500, 0)}
    assert drf_preemptable(total, v(1000, 0), v(1000, 0), preemptees, allocated) == [0, 1]
    # The job's own allocation is not modified.
    assert allocated["x"].tolist() == [6000, 1000]


# ---------------------------------------------------------------------------------------------- #
# invariants

amount = st.integers(min_value=0, max_value=50_000).map(float)
vec2 = st.tuples(amount, amount).map(lambda t: v(*t))


@st.composite
def scenarios(draw: st.DrawFn, with_guarantee: bool, with_capability: bool):
    total = draw(vec2)
    n = draw(st.integers(min_value=1, max_value=4))
    queues = []
    for i in range(n):
        cap = None
        if with_capability and draw(st.booleans()):
            cap = capability_vector(SPACE, {"cpu": draw(amount), "memory": draw(amount)})
        guarantee = None
        if with_guarantee and draw(st.booleans()):
            # Keep guarantees feasible: each at most total / n.
            guarantee = np.floor(total * draw(st.floats(min_value=0, max_value=1)) / n)
        queues.append(
            QueueDemand(
                name=f"q{i}",
                weight=draw(st.integers(min_value=1, max_value=10)),
                request=draw(vec2),
                allocated=v(0, 0),
                capability=cap,
                guarantee=guarantee,
            )
        )
    return total, queues


TOL = 1e-6


@settings(max_examples=300, deadline=None)
@given(scenarios(with_guarantee=True, with_capability=True))
def test_proportion_invariants(case):
    total, queues = case
    got = proportion_deserved(total, queues)
    gsum = sum((qq.guarantee for qq in queues if qq.guarantee is not None), v(0, 0))
    dsum = sum(got.values(), v(0, 0))
    assert np.all(dsum <= total + gsum + TOL * (1 + total))
    for qq in queues:
        d = got[qq.name]
        g = qq.guarantee if qq.guarantee is not None else v(0, 0)
        assert np.all(d >= 0)
        assert np.all(d >= g)  # guarantee floor
        assert np.all(d <= np.maximum(qq.request, g) + TOL * (1 + total))
        if qq.capability is not None:
            assert np.all(d <= np.maximum(qq.capability, g) + TOL * (1 + total))


@settings(max_examples=300, deadline=None)
@given(scenarios(with_guarantee=False, with_capability=True))
def test_proportion_without_guarantees_never_exceeds_total(case):
    total, queues = case
    got = proportion_deserved(total, queues)
    dsum = sum(got.values(), v(0, 0))
    assert np.all(dsum <= total + TOL * (1 + total))
    for qq in queues:
        if qq.capability is not None:
            assert np.all(got[qq.name] <= qq.capability + TOL * (1 + total))


@settings(max_examples=300, deadline=None)
@given(scenarios(with_guarantee=False, with_capability=False))
def test_request_within_fair_share_is_fully_deserved(case):
    total, queues = case
    weight_sum = sum(qq.weight for qq in queues)
    got = proportion_deserved(total, queues)
    for qq in queues:
        fair = total * qq.weight / weight_sum
        if np.all(qq.request <= fair):
            np.testing.assert_allclose(got[qq.name], qq.request, atol=MIN_RESOURCE)


@settings(max_examples=300, deadline=None)
@given(vec2, vec2, vec2)
def test_dominant_share_bounded_and_monotone(total, allocated, extra):
    allocated = np.minimum(allocated, total)
    s = dominant_share(allocated, total)
    assert 0.0 <= s <= 1.0
    assert dominant_share(allocated + extra, total) >= s
