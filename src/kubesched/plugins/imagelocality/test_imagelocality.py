"""ImageLocality: tables after upstream's image_locality_test.go (TestImageLocalityPriority,
TestNormalizedImageName), kube-scheduler v1.34 semantics, plus the NodeTable bookkeeping behind the
vectorized Score and one run through the simulation.

Score per node: for each init container and container whose (normalized) image the node holds,
``int64(size * numNodesWithImage / totalNodes)``; the sum is clamped to [23 MiB, 1000 MiB * containers]
and scaled to ``100 * (sum - 23 MiB) // (1000 MiB * containers - 23 MiB)``. Expected numbers below
are upstream's, with its worked formula in a comment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.plugins.imagelocality import MB, ImageLocality, calculate_priority, normalized_image_name
from kubesched.plugins.testing import build_snapshot, run_score
from kubesched.sim.simulation import Simulation

ImageList = Sequence[tuple[Sequence[str], int]]


def image_node(name: str, images: ImageList) -> Node:
    """Upstream ``makeImageNode``: a node whose status lists ``(names, sizeBytes)`` images."""
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
            },
        }
    )


def image_pod(containers: Sequence[str], init_containers: Sequence[str] = (), name: str = "pod") -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": img} for i, img in enumerate(containers)]
    }
    if init_containers:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init_containers)]
    return Pod.from_dict({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


NODE_40_300_2000: ImageList = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: ImageList = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900: ImageList = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: ImageList = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: ImageList = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: ImageList = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: ImageList = []


@dataclass
class Case:
    name: str
    containers: Sequence[str]
    nodes: Sequence[tuple[str, ImageList]]
    want: Mapping[str, int]
    init_containers: Sequence[str] = ()


CASES = [
    # node1: 40M/2 < 23M → 0; node2: 100 * (250M/2 - 23M) / (1000M*2 - 23M) = 5
    Case(
        "two images spread on two nodes, prefer the larger image one",
        ["gcr.io/40", "gcr.io/250"],
        [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
        {"node1": 0, "node2": 5},
    ),
    # node1: 100 * ((40M + 300M)/2 - 23M) / (1000M*2 - 23M) = 7
    Case(
        "two images on one node, prefer this node",
        ["gcr.io/40", "gcr.io/300"],
        [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
        {"node1": 7, "node2": 0},
    ),
    # node1: 4000M/2 >= 1000M*2 → 100; node2: 10M/2 < 23M → 0
    Case(
        "if exceed limit, use limit",
        ["gcr.io/10", "gcr.io/4000"],
        [("node1", NODE_4000_30), ("node2", NODE_250_10)],
        {"node1": 100, "node2": 0},
    ),
    # node1: 100 * (4000M/3 - 23M) / (1000M*2 - 23M) = 66
    Case(
        "if exceed limit, use limit (with node which has no images present)",
        ["gcr.io/10", "gcr.io/4000"],
        [("node1", NODE_4000_30), ("node2", NODE_250_10), ("node3", NO_IMAGES)],
        {"node1": 66, "node2": 0, "node3": 0},
    ),
    # node1: 100 * (600M*2/3 + 900M*2/3 - 23M) / (1000M*3 - 23M) = 32
    # node2: 100 * (300M*1/3 + 600M*2/3 + 900M*2/3 - 23M) / (1000M*3 - 23M) = 36
    Case(
        "pod with multiple large images, node2 is preferred",
        ["gcr.io/300", "gcr.io/600", "gcr.io/900"],
        [("node1", NODE_600_40_900), ("node2", NODE_300_600_900), ("node3", NO_IMAGES)],
        {"node1": 32, "node2": 36, "node3": 0},
    ),
    # node1: 100 * (30M + 40M/2 - 23M) / (1000M*2 - 23M) = 1; node2: 100 * (30M - 23M) / (1000M*2 - 23M) = 0
    Case(
        "pod with multiple small images",
        ["gcr.io/30", "gcr.io/40"],
        [("node1", NODE_20_30_40), ("node2", NODE_4000_30)],
        {"node1": 1, "node2": 0},
    ),
    # node1: 100 * (300M/2 - 23M) / (1000M*2 - 23M) = 6 (the init container counts, twice over)
    Case(
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        ["gcr.io/30"],
        [("node1", NODE_40_300_2000), ("node2", NODE_20_30_40)],
        {"node1": 6, "node2": 0},
        init_containers=["gcr.io/300"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_image_locality_priority(case: Case) -> None:
    snapshot = build_snapshot([image_node(name, images) for name, images in case.nodes])
    pod = image_pod(case.containers, case.init_containers)
    assert run_score(ImageLocality(), pod, snapshot) == dict(case.want)


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + fake_digest("root"), "root@" + fake_digest("root")),
    ],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_calculate_priority_thresholds() -> None:
    half = 23 * MB + 977 * MB // 2
    sums = np.array([0, 23 * MB, half - 1, half, 1000 * MB, 5000 * MB], dtype=np.int64)
    assert calculate_priority(sums, 1).tolist() == [0, 0, 49, 50, 100, 100]
    # The upper bound grows with the number of containers.
    assert calculate_priority(np.array([1000 * MB], dtype=np.int64), 2).tolist() == [100 * 977 // 1977]


def test_spread_uses_float_arithmetic_truncated() -> None:
    # Upstream: int64(float64(size) * (float64(numNodes) / float64(totalNodes))). One of three nodes
    # holds a 1000 MiB + 1 byte image: 1048576001 * (1/3) = 349525333.67 → 349525333.
    nodes = [image_node("a", [(["big:v1"], 1000 * MB + 1)]), image_node("b", []), image_node("c", [])]
    scores = run_score(ImageLocality(), image_pod(["big:v1"]), build_snapshot(nodes))
    assert scores == {"a": 100 * (349525333 - 23 * MB) // (977 * MB), "b": 0, "c": 0}


def test_node_images_parsing() -> None:
    node = image_node("n", [(["a:1", "a:latest"], 5), (["a:1", "b:2"], 7)])
    # A name listed twice keeps its first size (upstream's cache).
    assert node.images == {"a:1": 5, "a:latest": 5, "b:2": 7}
    with pytest.raises(InputError, match="sizeBytes"):
        image_node("n", [(["a"], -1)])


# -- NodeTable bookkeeping -------------------------------------------------------------------------


def test_image_columns_follow_node_updates() -> None:
    cache = SchedulerCache()
    snapshot = Snapshot()
    pod = image_pod(["gcr.io/2000"])
    # 2000M on both of two nodes: spread 1 → 2000M ≥ 1000M → 100.
    cache.add_node(image_node("a", NODE_40_300_2000))
    cache.add_node(image_node("b", NODE_40_300_2000))
    cache.update_snapshot(snapshot)
    assert run_score(ImageLocality(), pod, snapshot) == {"a": 100, "b": 100}
    # b drops the image: spread 1/2 → 1000M → 100 on a, 0 on b.
    cache.update_node(image_node("b", NODE_250_10))
    cache.update_snapshot(snapshot)
    assert run_score(ImageLocality(), pod, snapshot) == {"a": 100, "b": 0}
    assert snapshot.table.image_nodes["gcr.io/2000:latest"] == 1
    # A third node without it: spread 1/3 → 100 * (2000M/3 - 23M) // 977M = 65.
    cache.add_node(image_node("c", NO_IMAGES))
    cache.update_snapshot(snapshot)
    assert run_score(ImageLocality(), pod, snapshot) == {"a": 65, "b": 0, "c": 0}
    # a goes away; c reuses nothing of it.
    cache.remove_node("a")
    cache.update_snapshot(snapshot)
    assert run_score(ImageLocality(), pod, snapshot) == {"b": 0, "c": 0}
    assert snapshot.table.image_nodes["gcr.io/2000:latest"] == 0
    cache.add_node(image_node("d", NODE_40_300_2000))
    cache.update_snapshot(snapshot)
    # d holds it alone among three nodes: 65 again.
    assert run_score(ImageLocality(), pod, snapshot) == {"b": 0, "c": 0, "d": 65}


def test_many_nodes_grow_the_image_columns() -> None:
    nodes = [image_node("n0", [(["big:v1"], 3000 * MB)])]
    nodes += [image_node(f"n{i}", []) for i in range(1, 149)]
    nodes.append(image_node("n149", [(["big:v1"], 3000 * MB)]))
    scores = run_score(ImageLocality(), image_pod(["big:v1"]), build_snapshot(nodes))
    # spread 2/150: int64(3000M * 2/150) = 41943040 → 100 * (41943040 - 23M) // 977M = 1
    assert scores["n0"] == scores["n149"] == 1
    assert {s for name, s in scores.items() if name not in ("n0", "n149")} == {0}


# -- through the scheduler -------------------------------------------------------------------------


def test_pod_prefers_the_node_with_its_big_image() -> None:
    sim = Simulation(registry=default_registry())
    for name in ("n1", "n2", "n3"):
        images = (
            [{"names": ["registry.example/ml/trainer:v3"], "sizeBytes": 4000 * MB}] if name == "n2" else []
        )
        sim.store.create(
            {
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "images": images},
            }
        )
    sim.store.create(
        {
            "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.example/ml/trainer:v3"}]},
        }
    )
    result = sim.run()
    assert [(o.name, o.status, o.node) for o in result.outcomes] == [("trainer", "Scheduled", "n2")]
