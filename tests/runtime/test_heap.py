"""A long-running process hands free heap memory back to the system at most once per interval."""

from __future__ import annotations

import platform

import pytest

from kubesched.runtime.heap import TRIM_INTERVAL, HeapTrimmer


def test_trims_once_per_interval() -> None:
    clock = [100.0]
    heap = HeapTrimmer(interval=30.0, now=lambda: clock[0])
    if not heap.available:
        pytest.skip("no glibc malloc_trim here")
    assert not heap.maybe_trim()  # not on the first call: the process has just started
    clock[0] += 29.9
    assert not heap.maybe_trim()
    clock[0] += 0.2
    assert heap.maybe_trim()
    assert not heap.maybe_trim()  # the next interval starts now
    clock[0] += 30.0
    assert heap.maybe_trim()
    assert heap.trims == 2


def test_default_interval() -> None:
    assert HeapTrimmer().interval == TRIM_INTERVAL == 30.0


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_is_found() -> None:
    assert HeapTrimmer().available
