"""A served cluster's store with one node."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.registry.admission import apply_defaults
from kubesched.store.sqlite import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "cluster.db", now=time.time)
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    apply_defaults(node)
    s.create(node)
    yield s
    s.close()
