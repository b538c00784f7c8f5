"""The kubesched command tunes the garbage collector for scheduling, unless told not to."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kubesched.runtime.collector import SCHEDULER_THRESHOLDS, tune_collector


@pytest.fixture
def restored_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_tune_collector_sets_the_scheduler_thresholds(restored_thresholds: None) -> None:
    gc.set_threshold(700, 10, 10)
    assert tune_collector({})
    assert gc.get_threshold() == SCHEDULER_THRESHOLDS


def test_kubesched_gc_default_keeps_pythons_thresholds(restored_thresholds: None) -> None:
    gc.set_threshold(700, 10, 10)
    assert not tune_collector({"KUBESCHED_GC": "default"})
    assert gc.get_threshold() == (700, 10, 10)


def test_the_command_runs_with_the_tuned_collector() -> None:
    code = (
        "import gc, sys\n"
        "import kubesched.cli as cli\n"
        "cli.main = lambda argv=None: print(gc.get_threshold()) or 0\n"
        "try:\n"
        "    cli.entry()\n"
        "except SystemExit as exc:\n"
        "    sys.exit(exc.code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KUBESCHED_GC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == str(SCHEDULER_THRESHOLDS)
