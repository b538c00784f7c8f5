"""What the sweep tests share: a cluster whose runs last long enough to be caught mid-sweep, a
count of what a sweep ships to its workers, and the cells it gives them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.sim.sweep_engine import SweepEngine

#: The runs of the tests' four-run sweep, in order: the example configs fgd.yaml and bestfit.yaml,
#: then :func:`two_variants`.
LABELS = ["fgd.yaml", "bestfit.yaml", "most", "pct50"]


def heavy_cluster(path: Path) -> Path:
    """100 nodes and 2,000 pods written to ``path``: a run lasts about a second, so a sweep of a few
    is still busy when one of its runs ends."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i:03d}"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
        for i in range(100)
    ]
    docs += [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i:04d}", "namespace": "default"},
            "spec": {
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(1 + i % 3)}}}
                ]
            },
        }
        for i in range(2000)
    ]
    path.write_text(yaml.safe_dump_all(docs))
    return path


def count_shares(engine: SweepEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type name of every value the engine is asked to share from now on, in order."""
    shared: list[str] = []
    share = engine.share

    def counting(value: object) -> object:
        shared.append(type(value).__name__)
        return share(value)

    monkeypatch.setattr(engine, "share", counting)
    return shared


def sent_to_engine(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The keys of the cells given to a sweep engine from now on (a run of ``simulate``: its label),
    one list per sweep."""
    sent: list[list[str]] = []
    run = SweepEngine.run

    def spy(engine: SweepEngine, fn: Any, cells: Any, priority: Any = None) -> Any:
        cells = list(cells)
        sent.append([key for key, _ in cells])
        return run(engine, fn, cells, priority)

    monkeypatch.setattr(SweepEngine, "run", spy)
    return sent


def two_variants(path: Path) -> Path:
    """A sweep file at ``path`` of two variants of the base config: MostAllocated scoring, and 50 %
    of nodes scored."""
    variants = [
        {"name": "most", "scoringStrategy": "MostAllocated"},
        {"name": "pct50", "percentageOfNodesToScore": 50},
    ]
    path.write_text(yaml.safe_dump({"variants": variants}))
    return path
