"""A real kube-apiserver (v1.20.2, from ../shared/refcp) in a directory of its own, for tests that
check the remote layer against the API it imitates. Tests using it skip when refcp is not built."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REFCP = Path(__file__).resolve().parents[3] / "shared" / "refcp"
BUILT = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))

needs_refcp = pytest.mark.skipif(
    not (BUILT / "bin" / "kube-apiserver").exists() or not (REFCP / "start.sh").exists(),
    reason="refcp (a real kube-apiserver) is not built here",
)


def volcano_crd(plural: str, kind: str, scope: str) -> dict[str, Any]:
    """A Volcano CRD without a schema (what kubesched needs of it: the kind, served, with status)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.scheduling.volcano.sh"},
        "spec": {
            "group": "scheduling.volcano.sh",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


class RefCluster:
    """etcd + kube-apiserver on free ports, with state under ``root`` (the binaries are shared)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "bin").symlink_to(BUILT / "bin")
        self.env = {**os.environ, "REF_DIR": str(root), "REF_PORTS": "auto"}
        subprocess.run(
            ["bash", str(REFCP / "start.sh")], check=True, env=self.env, capture_output=True, timeout=180
        )
        values: dict[str, str] = {}
        for line in (root / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export ") :].partition("=")
                values[key] = shlex.split(value)[0] if value else ""
        self.url = values["REF_API_URL"]
        self.kubeconfig = root / "kubeconfig"

    def stop(self) -> None:
        subprocess.run(
            ["bash", str(REFCP / "stop.sh"), "--wipe"], env=self.env, capture_output=True, timeout=60
        )


@pytest.fixture(scope="module")
def refcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    ref = RefCluster(tmp_path_factory.mktemp("refcp"))
    try:
        yield ref
    finally:
        ref.stop()
