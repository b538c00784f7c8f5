"""The per-card GPU model: demands, card choice, per-node accounting."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.errors import InputError
from kubesched.gpu.cards import (
    ANNOTATION_GPU_CARDS,
    ANNOTATION_GPU_COUNT,
    ANNOTATION_GPU_MILLI,
    ANNOTATION_GPU_SPEC,
    GPU_MILLI_RESOURCE,
    GPU_RESOURCE,
    LABEL_GPU_MODEL,
    GpuCards,
    GpuDemand,
    best_fit_cards,
    demand_of,
    first_free_cards,
    format_cards,
    parse_cards,
)


def test_demand_from_annotations() -> None:
    d = demand_of(
        {ANNOTATION_GPU_COUNT: "1", ANNOTATION_GPU_MILLI: "460", ANNOTATION_GPU_SPEC: "T4|P100"}, {}
    )
    assert d == GpuDemand(1, 460, ("T4", "P100"))
    assert d.is_share and d.tag == "share" and d.total_milli == 460
    assert d.accepts("T4") and not d.accepts("V100M16")
    assert demand_of({ANNOTATION_GPU_COUNT: "2"}, {}) == GpuDemand(2, 1000)
    assert demand_of({ANNOTATION_GPU_COUNT: "0", ANNOTATION_GPU_MILLI: "0"}, {}).count == 0


def test_demand_from_extended_resources() -> None:
    assert demand_of({}, {GPU_RESOURCE: 4}) == GpuDemand(4, 1000)
    assert demand_of({}, {GPU_MILLI_RESOURCE: 250}) == GpuDemand(1, 250)
    assert demand_of({}, {GPU_MILLI_RESOURCE: 2000}) == GpuDemand(2, 1000)
    assert demand_of({}, {"cpu": 1000}).wants_gpu is False
    assert GpuDemand(2, 1000).tag == "2-gpu"


def test_bad_demands_are_input_errors() -> None:
    with pytest.raises(InputError):
        GpuDemand(2, 500)  # a share cannot span cards
    with pytest.raises(InputError):
        demand_of({ANNOTATION_GPU_COUNT: "x"}, {})
    with pytest.raises(InputError):
        demand_of({}, {GPU_MILLI_RESOURCE: 1500})


def test_best_fit_takes_the_tightest_card_and_whole_cards_take_the_first_free() -> None:
    left = np.array([1000, 300, 700, 1000, 0, 0, 0, 0])
    assert best_fit_cards(left, 4, GpuDemand(1, 250)) == (1,)
    assert best_fit_cards(left, 4, GpuDemand(1, 600)) == (2,)
    assert best_fit_cards(left, 4, GpuDemand(2, 1000)) == (0, 3)
    assert first_free_cards(left, 4, GpuDemand(3, 1000)) is None


def test_a_half_and_a_sixty_percent_share_never_share_a_card() -> None:
    cards = GpuCards()
    cards.node_added("n", {GPU_RESOURCE: 1}, {LABEL_GPU_MODEL: "T4"})
    cards.pod_added("a", "n", {}, GpuDemand(1, 500))
    left = cards.left("n")
    assert left is not None and left[0] == 500
    assert best_fit_cards(left, cards.count("n"), GpuDemand(1, 600)) is None
    cards.pod_added("b", "n", {}, GpuDemand(1, 600))  # over-committed elsewhere: holds nothing
    assert cards.cards_of("b") is None and left[0] == 500


def test_pods_hold_cards_until_removed_and_annotations_win() -> None:
    cards = GpuCards()
    cards.node_added("n", {GPU_RESOURCE: 4}, {LABEL_GPU_MODEL: "V100M32"})
    assert cards.model("n") == "V100M32" and cards.count("n") == 4
    cards.pod_added("w", "n", {ANNOTATION_GPU_CARDS: "1-3"}, GpuDemand(2, 1000))
    cards.reserve("s", (2,))
    cards.pod_added("s", "n", {}, GpuDemand(1, 400))
    left = cards.left("n")
    assert left is not None
    assert left[:4].tolist() == [1000, 0, 600, 0]
    assert cards.cards_of("w") == (1, 3) and cards.cards_of("s") == (2,)
    assert cards.tags("n") == {"2-gpu": 1, "share": 1}
    cards.pod_removed("w")
    assert left[:4].tolist() == [1000, 1000, 600, 1000]
    cards.pod_removed("s")
    assert left[:4].tolist() == [1000] * 4


def test_card_annotation_round_trip() -> None:
    assert format_cards((0, 3)) == "0-3"
    assert parse_cards("0-3") == (0, 3)
    with pytest.raises(InputError):
        parse_cards("a-b")
