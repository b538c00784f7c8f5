"""The kubectl binaries the served cluster is checked with: the system's (1.32) and, where refcp is
built, the 1.20 one it ships. A test parametrized over ``KUBECTLS`` skips a binary that is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

_REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
_OLD = _REF_DIR / "bin" / "kubectl"

KUBECTLS = [
    pytest.param(shutil.which("kubectl"), id="kubectl-1.32"),
    pytest.param(str(_OLD) if _OLD.exists() else None, id="kubectl-1.20"),
]


def kubectl_runner(binary: str | None, kubeconfig: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run(*args, input=None)``: kubectl against ``kubeconfig``; skips when ``binary`` is absent."""
    if binary is None:
        pytest.skip("this kubectl is not installed here")
    # kubectl keeps discovery per host and port for hours: a server that listened on the same port
    # earlier in the run (without some kind) must not answer for this one.
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")

    def run(*args: str, input: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        return subprocess.run(
            [binary, f"--cache-dir={cache}", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )

    return run


def until(fn: Callable[[], T], timeout: float = 15.0) -> T:
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(0.1)


def ok(proc: subprocess.CompletedProcess[Any]) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout)
