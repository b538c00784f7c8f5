"""Label-based HyperNode discovery: which configurations count, and the HyperNodes node labels give."""

from __future__ import annotations

from kubesched.controllers.hypernode_discovery import desired_hyper_nodes, topology_types

CONF = """
networkTopologyDiscovery:
- source: ufm
  enabled: true
  config: {endpoint: https://ufm:8080}
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      topologyA2:
      - nodeLabel: volcano.sh/tor
      - nodeLabel: kubernetes.io/hostname
      topologyA3:
      - nodeLabel: volcano.sh/hypercluster
      - nodeLabel: volcano.sh/hypernode
      - nodeLabel: kubernetes.io/hostname
      repeated:
      - nodeLabel: a
      - nodeLabel: a
      a-name-longer-than-twenty:
      - nodeLabel: b
      - nodeLabel: kubernetes.io/hostname
"""


def test_label_source_types_lowest_tier_first_and_bad_types_ignored() -> None:
    assert topology_types(CONF) == {
        "topologyA2": ["volcano.sh/tor"],
        "topologyA3": ["volcano.sh/hypernode", "volcano.sh/hypercluster"],
    }
    assert (
        topology_types(CONF.replace("source: label\n  enabled: true", "source: label\n  enabled: false"))
        == {}
    )
    assert topology_types("not: [valid") == {}


def test_nodes_without_a_label_stop_below_that_tier() -> None:
    types = {"topologyA3": ["volcano.sh/hypernode", "volcano.sh/hypercluster"]}
    nodes = {
        "n1": {"volcano.sh/hypernode": "h1", "volcano.sh/hypercluster": "c1"},
        "n2": {"volcano.sh/hypernode": "h1"},
        "n3": {"volcano.sh/hypercluster": "c1"},
    }
    made = desired_hyper_nodes(types, nodes, [])
    by_tier = {hn["spec"]["tier"]: hn for hn in made.values()}
    assert len(made) == 2
    leaf, top = by_tier[1], by_tier[2]
    assert [m["selector"]["exactMatch"]["name"] for m in leaf["spec"]["members"]] == ["n1", "n2"]
    assert [m["selector"]["exactMatch"]["name"] for m in top["spec"]["members"]] == [leaf["metadata"]["name"]]
    assert (
        top["spec"]["members"][0]["type"] == "HyperNode"
        and leaf["spec"]["tierName"] == "volcano.sh/hypernode"
    )
    assert leaf["metadata"]["name"].startswith("hypernode-topologya3-tier1-")
    # The same input gives the same names.
    assert desired_hyper_nodes(types, nodes, []).keys() == made.keys()
