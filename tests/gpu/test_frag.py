"""The fragmentation measure, worked by hand from the paper's definition."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.gpu.frag import PodShape, TypicalPods, frag_of, typical_pods

MODELS = ("T4", "V100")


def _tp() -> TypicalPods:
    return TypicalPods.build(
        [
            (PodShape(cpu=1000, milli=600, count=1), 0.5),
            (PodShape(cpu=1000, milli=1000, count=1), 0.25),
            (PodShape(cpu=1000, milli=0, count=0), 0.25),
        ],
        MODELS,
    )


def _f(cpu: int, cards: list[int], model: int = 0, tp: TypicalPods | None = None) -> float:
    return float(frag_of(np.array([cpu]), np.array([cards]), np.array([model]), tp or _tp())[0])


def test_expected_fragmentation_of_one_node() -> None:
    # Cards [1000, 500] left: the 0.6-share shape fits (card 0), so only card 1 (500 < 600) is a
    # fragment for it; the whole-card shape fits too, card 1 again a fragment; a CPU-only pod can
    # use none of the 1500 milli-GPU. F = 0.5*500 + 0.25*500 + 0.25*1500 = 750.
    assert _f(8000, [1000, 500]) == pytest.approx(750.0)


def test_a_node_without_cpu_left_is_all_fragment() -> None:
    assert _f(0, [1000, 500]) == pytest.approx(1500.0)


def test_a_shape_that_cannot_use_the_model_sees_all_fragment() -> None:
    tp = TypicalPods.build([(PodShape(cpu=0, milli=500, count=1, spec="V100"), 1.0)], MODELS)
    assert _f(8000, [1000, 1000], model=0, tp=tp) == pytest.approx(2000.0)
    assert _f(8000, [1000, 300], model=1, tp=tp) == pytest.approx(300.0)


def test_multi_card_shapes_need_enough_cards() -> None:
    tp = TypicalPods.build([(PodShape(cpu=0, milli=1000, count=2), 1.0)], MODELS)
    assert _f(8000, [1000, 900, 1000, 0], tp=tp) == pytest.approx(900.0)
    assert _f(8000, [1000, 900, 0, 0], tp=tp) == pytest.approx(1900.0)


def test_typical_pods_keep_the_most_popular_shapes() -> None:
    a, b, c = PodShape(1000, 500, 1), PodShape(2000, 1000, 1), PodShape(4000, 0, 0)
    tp = typical_pods([a, a, a, b, c], MODELS, popularity=60)
    assert tp.shapes == (a,) and tp.freq.tolist() == [1.0]
    tp = typical_pods([a, a, a, b, c], MODELS, popularity=95)
    # Equal counts go in descending shape order, as in the authors' reverse sort.
    assert tp.shapes == (a, c, b)
    assert tp.freq.tolist() == pytest.approx([0.6, 0.2, 0.2])
