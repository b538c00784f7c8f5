"""The storage capacity scorer: upstream ``volumebinding/scorer_test.go`` ``TestScore`` (case names
verbatim). The default shape is v1.35's (0% used scores 10, 100% used 0), so the default-shape
expectations are upstream's mirrored: ``100 - score``."""

from __future__ import annotations

import pytest

from kubesched.plugins.noderesources.requested_to_capacity_ratio import Shape, scaled_shape
from kubesched.plugins.volumebinding.binder import StorageResource
from kubesched.plugins.volumebinding.scorer import DEFAULT_SHAPE, build_scorer_function

CLASS_HDD = "hdd"
CLASS_SSD = "ssd"

Case = tuple[dict[str, tuple[int, int]], int]

DEFAULT = scaled_shape(DEFAULT_SHAPE)
#: The shape that prefers full classes (upstream's default before StorageCapacityScoring).
MOST_ALLOCATED: Shape = [(0, 0), (100, 100)]

SINGLE: list[tuple[tuple[int, int], int]] = [
    ((0, 100), 0),
    ((30, 100), 30),
    ((50, 100), 50),
    ((100, 100), 100),
]
MULTIPLE: list[tuple[tuple[int, int], tuple[int, int], int]] = [
    ((0, 100), (0, 100), 0),
    ((0, 100), (30, 100), 15),
    ((30, 100), (30, 100), 30),
    ((30, 100), (60, 100), 45),
    ((50, 100), (50, 100), 50),
    ((50, 100), (100, 100), 75),
    ((100, 100), (100, 100), 100),
]

TESTS: list[tuple[str, Shape, list[Case]]] = [
    (
        "default shape, single class",
        DEFAULT,
        [({CLASS_HDD: hdd}, 100 - score) for hdd, score in SINGLE],
    ),
    (
        "default shape, multiple classes",
        DEFAULT,
        [({CLASS_HDD: hdd, CLASS_SSD: ssd}, 100 - score) for hdd, ssd, score in MULTIPLE],
    ),
    (
        "most allocated shape, single class",
        MOST_ALLOCATED,
        [({CLASS_HDD: hdd}, score) for hdd, score in SINGLE],
    ),
    (
        "most allocated shape, multiple classes",
        MOST_ALLOCATED,
        [({CLASS_HDD: hdd, CLASS_SSD: ssd}, score) for hdd, ssd, score in MULTIPLE],
    ),
    (
        "custom shape, multiple classes",
        [(50, 0), (80, 30), (100, 50)],
        [
            ({CLASS_HDD: (0, 100), CLASS_SSD: (0, 100)}, 0),
            ({CLASS_HDD: (0, 100), CLASS_SSD: (30, 100)}, 0),
            ({CLASS_HDD: (30, 100), CLASS_SSD: (30, 100)}, 0),
            ({CLASS_HDD: (30, 100), CLASS_SSD: (60, 100)}, 5),
            ({CLASS_HDD: (50, 100), CLASS_SSD: (100, 100)}, 25),
            ({CLASS_HDD: (90, 100), CLASS_SSD: (90, 100)}, 40),
            ({CLASS_HDD: (100, 100), CLASS_SSD: (100, 100)}, 50),
        ],
    ),
]


@pytest.mark.parametrize(("name", "shape", "cases"), TESTS, ids=[t[0] for t in TESTS])
def test_score(name: str, shape: Shape, cases: list[Case]) -> None:
    score = build_scorer_function(shape)
    for resources, want in cases:
        got = score({cls: StorageResource(req, cap) for cls, (req, cap) in resources.items()})
        assert got == want, resources


def test_no_class_and_overcommitted_class() -> None:
    score = build_scorer_function(DEFAULT)
    assert score({}) == 0
    # No capacity, or more asked than there is, count as full.
    assert score({CLASS_HDD: StorageResource(10, 0)}) == 0
    assert score({CLASS_HDD: StorageResource(200, 100)}) == 0
