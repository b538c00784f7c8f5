"""HyperNodes served by ``kubesched serve``: kubectl columns, short name, validation with located
errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

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


CONFIG = """
apiVersion: v1
kind: Namespace
metadata: {name: volcano-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-controller-configmap, namespace: volcano-system}
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
    - source: label
      enabled: true
      config:
        networkTopologyTypes:
          fabric:
          - nodeLabel: example.com/spine
          - nodeLabel: example.com/leaf
          - nodeLabel: kubernetes.io/hostname
"""


def _node_doc(name: str, leaf: str, spine: str) -> str:
    return (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n"
        f"    example.com/leaf: {leaf}\n    example.com/spine: {spine}\n"
        "status:\n  allocatable: {cpu: '8', memory: 32Gi, pods: '110'}\n"
    )


def _hyper_nodes(cluster) -> dict[str, dict]:
    items = json.loads(kubectl(cluster, "get", "hypernodes", "-o", "json").stdout)["items"]
    return {
        hn["spec"]["tierName"] + "=" + hn["metadata"]["labels"][hn["spec"]["tierName"]]: hn for hn in items
    }


def _members(hn: dict) -> list[str]:
    return [m["selector"]["exactMatch"]["name"] for m in hn["spec"]["members"]]


def test_label_discovery_makes_hypernodes_from_node_labels(make_cluster):
    cluster = make_cluster(nodes=0)
    docs = [_node_doc("n1", "l1", "s1"), _node_doc("n2", "l1", "s1"), _node_doc("n3", "l2", "s1")]
    assert kubectl(cluster, "apply", "-f", "-", stdin=CONFIG + "---\n" + "---\n".join(docs)).returncode == 0

    deadline = time.time() + 15
    while len(_hyper_nodes(cluster)) < 3 and time.time() < deadline:
        time.sleep(0.2)
    found = _hyper_nodes(cluster)
    assert set(found) == {"example.com/leaf=l1", "example.com/leaf=l2", "example.com/spine=s1"}
    l1, l2, s1 = found["example.com/leaf=l1"], found["example.com/leaf=l2"], found["example.com/spine=s1"]
    assert l1["spec"]["tier"] == 1 and _members(l1) == ["n1", "n2"]
    assert {m["type"] for m in l1["spec"]["members"]} == {"Node"}
    assert s1["spec"]["tier"] == 2 and _members(s1) == sorted(
        [l1["metadata"]["name"], l2["metadata"]["name"]]
    )
    assert l1["metadata"]["name"].startswith("hypernode-fabric-tier1-")
    assert l1["metadata"]["labels"]["volcano.sh/network-topology-source"] == "label"
    # The HyperNode controller counts members: l1's two nodes, s1's two leaves.
    deadline = time.time() + 15
    while _hyper_nodes(cluster)["example.com/spine=s1"].get("status", {}).get("nodeCount") != 2:
        assert time.time() < deadline, _hyper_nodes(cluster)
        time.sleep(0.2)
    assert _hyper_nodes(cluster)["example.com/leaf=l1"]["status"]["nodeCount"] == 2
    rows = kubectl(cluster, "get", "hn").stdout.splitlines()
    assert rows[0].split()[:4] == ["NAME", "TIER", "TIERNAME", "NODECOUNT"]
    assert next(r for r in rows if r.startswith(l1["metadata"]["name"])).split()[1:4] == [
        "1",
        "example.com/leaf",
        "2",
    ]

    # n3 moves to leaf l1: l2 stands for no node any more and goes; l1 keeps its name.
    kubectl(cluster, "label", "node", "n3", "example.com/leaf=l1", "--overwrite")
    deadline = time.time() + 15
    while "example.com/leaf=l2" in _hyper_nodes(cluster) and time.time() < deadline:
        time.sleep(0.2)
    found = _hyper_nodes(cluster)
    assert set(found) == {"example.com/leaf=l1", "example.com/spine=s1"}
    assert found["example.com/leaf=l1"]["metadata"]["name"] == l1["metadata"]["name"]
    assert _members(found["example.com/leaf=l1"]) == ["n1", "n2", "n3"]
