"""Each policy's score on small nodes, worked by hand from the authors' formulas."""

from __future__ import annotations

import numpy as np

from kubesched.gpu.frag import PodShape, TypicalPods, frag_of
from kubesched.gpu.policies import NodeState, choose_cards, normalize, score_nodes, tag_column


def _state(
    cards: list[list[int]], cpu_left: list[int], tags: list[dict[int, int]] | None = None
) -> NodeState:
    counts = np.array([sum(1 for _ in row) for row in cards])
    width = max(len(r) for r in cards)
    st = NodeState.empty(
        np.array([128_000] * len(cards)), counts, np.zeros(len(cards), dtype=np.int64), width
    )
    st.cards[:] = np.array([r + [0] * (width - len(r)) for r in cards])
    st.cpu_left[:] = cpu_left
    for i, t in enumerate(tags or []):
        for col, n in t.items():
            st.tags[i, col] = n
    return st


ALL = np.arange(1)


def test_dot_prod() -> None:
    # Free [64 cores, 2 GPUs] / [128, 8] = [0.5, 0.25]; request [8 cores, 1 GPU] / [128, 8] =
    # [0.0625, 0.125]; dot 0.0625, halved 0.03125; score int(100 * 0.96875) = 96.
    st = _state([[1000, 1000]], [64_000])
    s, _ = score_nodes("DotProd", st, ALL, PodShape(8000, 1000, 1))
    assert s.tolist() == [96]


def test_best_fit() -> None:
    # 0.5 * (64-8)/128 + 0.5 * (2-1)/8 = 0.28125 left over; int(100 * (1 - 0.28125)) = 71.
    st = _state([[1000, 1000]], [64_000])
    s, _ = score_nodes("BestFit", st, ALL, PodShape(8000, 1000, 1))
    assert s.tolist() == [71]
    assert normalize(np.array([10, 20, 30])).tolist() == [0, 50, 100]
    assert normalize(np.array([7, 7])).tolist() == [0, 0]


def test_gpu_packing_bands() -> None:
    st = _state([[1000, 400], [1000, 1000], [0, 1000, 1000, 1000]], [64_000] * 3)
    rows = np.arange(3)
    share = PodShape(1000, 300, 1)
    s, _ = score_nodes("GpuPacking", st, rows, share)
    # Partly used card with 400 left: 100 - (40 // 10) = 96; idle 2-card node: max(33 - 2, 2) = 31;
    # used node whose tightest fitting card is free: max(50 - 1, 33) = 49.
    assert s.tolist() == [96, 31, 49]
    s, _ = score_nodes("GpuPacking", st, rows, PodShape(1000, 1000, 2))
    assert s.tolist()[1:] == [31, 48]
    s, _ = score_nodes("GpuPacking", st, rows, PodShape(1000, 0, 0))
    assert s.tolist() == [0, 0, 0]


def test_gpu_clustering_bands() -> None:
    share, one = tag_column(PodShape(0, 300, 1)), tag_column(PodShape(0, 1000, 1))
    st = _state(
        [[1000, 400], [1000, 1000], [0, 1000], [300, 0]],
        [64_000] * 4,
        tags=[{share: 2}, {}, {one: 1}, {share: 1, one: 1}],
    )
    s, _ = score_nodes("GpuClustering", st, np.arange(4), PodShape(1000, 300, 1))
    # 25 * (8000 - left) // 8000 plus the band: same kind only 75, idle 25, other kinds 0, mixed 50.
    assert s.tolist() == [20 + 75, 18 + 25, 21 + 0, 24 + 50]


def test_fgd_prefers_the_card_that_keeps_room_for_typical_pods() -> None:
    tp = TypicalPods.build([(PodShape(0, 600, 1), 1.0)], ("",))
    st = _state([[1000, 500]], [64_000])
    frag_now = frag_of(st.cpu_left, st.cards, st.model, tp)
    assert frag_now.tolist() == [500.0]
    s, card = score_nodes("FGD", st, ALL, PodShape(1000, 500, 1), tp, frag_now)
    # On card 0 the node keeps [500, 500]: no card fits 0.6 any more, F = 1000, delta -500,
    # int(100 * sigmoid(-0.5)) = 37. On card 1 it keeps [1000, 0]: F = 0, delta +500, score 62.
    assert s.tolist() == [62] and card.tolist() == [1]
    rng = np.random.default_rng(0)
    assert choose_cards("FGD", st.cards[0], 2, PodShape(1000, 500, 1), 1, rng) == (1,)
    assert choose_cards("BestFit", st.cards[0], 2, PodShape(1000, 500, 1), -1, rng) == (1,)
    assert choose_cards("BestFit", st.cards[0], 2, PodShape(1000, 1000, 1), -1, rng) == (0,)


def test_random_scores_every_node_the_same() -> None:
    st = _state([[1000], [500]], [1000, 1000])
    s, _ = score_nodes("Random", st, np.arange(2), PodShape(0, 100, 1))
    assert s.tolist() == [0, 0]
