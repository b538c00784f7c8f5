"""A real kube-apiserver (v1.20.2, from ../shared/refcp) in a directory of its own, for tests that
check the remote layer against the API it imitates. Tests using it skip when refcp is not built."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

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
    """etcd + kube-apiserver on free ports, with state under ``root`` (the binaries are shared);
    ``args`` go to start.sh (``--controller-manager``: the real controllers run too)."""

    def __init__(self, root: Path, args: tuple[str, ...] = ()) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "bin").symlink_to(BUILT / "bin")
        self.env = {**os.environ, "REF_DIR": str(root), "REF_PORTS": "auto"}
        subprocess.run(
            ["bash", str(REFCP / "start.sh"), *args],
            check=True,
            env=self.env,
            capture_output=True,
            timeout=180,
        )
        values: dict[str, str] = {}
        for line in (root / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export ") :].partition("=")
                values[key] = shlex.split(value)[0] if value else ""
        self.url = values["REF_API_URL"]
        self.token = values["REF_TOKEN"]
        self.ca = values["REF_CA"]
        self.kubeconfig = root / "kubeconfig"

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request as the admin: the status code and the decoded body."""
        url = urlparse(self.url)
        conn = http.client.HTTPSConnection(
            url.hostname or "127.0.0.1",
            url.port or 443,
            context=ssl.create_default_context(cafile=self.ca),
            timeout=30,
        )
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, json.loads(raw) if raw else None

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
