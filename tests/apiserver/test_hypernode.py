"""HyperNodes served by ``kubesched serve``: kubectl columns, short name, validation with located
errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

HEAD = "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\n"

HEAD = "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\n"

LEAF = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-a}
spec:
  tier: 1
  tierName: leaf
  members:
  - type: Node
    selector: {regexMatch: {pattern: "^gpu-a-"}}
"""

SPINE = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine}
spec:
  tier: 2
  members:
  - type: HyperNode
    selector: {exactMatch: {name: leaf-a}}
"""


def kubectl(cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run(
        [KUBECTL or "kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=30
    )


def test_kubectl_applies_lists_and_validates_hypernodes(make_cluster):
    cluster = make_cluster(nodes=0)
    out = kubectl(cluster, "apply", "-f", "-", stdin=LEAF + "---" + SPINE)
    assert out.returncode == 0, out.stderr
    assert "hypernode.topology.volcano.sh/leaf-a created" in out.stdout

    table = kubectl(cluster, "get", "hn").stdout.splitlines()
    assert table[0].split() == ["NAME", "TIER", "TIERNAME", "NODECOUNT", "AGE"]
    leaf = next(r for r in table if r.startswith("leaf-a ")).split()
    assert leaf[1:3] == ["1", "leaf"]
    # Cluster-scoped: no namespace in the object's path.
    got = json.loads(kubectl(cluster, "get", "hypernode", "spine", "-o", "json").stdout)
    assert "namespace" not in got["metadata"] and got["spec"]["tier"] == 2

    bad = {
        "spec.tier": "tier: -1\n  members: [{type: Node, selector: {exactMatch: {name: n1}}}]",
        "spec.members[0].type": "tier: 1\n  members: [{type: Switch, selector: {exactMatch: {name: n1}}}]",
        "spec.members[0].selector": (
            "tier: 1\n  members: [{type: Node, selector: {exactMatch: {name: n1}, regexMatch: {pattern: x}}}]"
        ),
        "spec.members": "tier: 1\n  members: []",
    }
    for i, (where, spec) in enumerate(bad.items()):
        doc = f"{HEAD}metadata: {{name: bad-{i}}}\nspec:\n  {spec}\n"
        res = kubectl(cluster, "apply", "-f", "-", stdin=doc)
        assert res.returncode != 0 and where in res.stderr, (where, res.stderr)
    # A member selector with none of the three says so.
    doc = f"{HEAD}metadata: {{name: bad-x}}\nspec:\n  tier: 1\n  members: [{{type: Node, selector: {{}}}}]\n"
    res = kubectl(cluster, "apply", "-f", "-", stdin=doc)
    assert "member selector must have one of exactMatch, regexMatch, or labelMatch" in res.stderr
