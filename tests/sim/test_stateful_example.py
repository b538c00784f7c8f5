"""examples/stateful through ``kubesched simulate``: a database on local volumes lands where its
volumes are, a queue on zonal disks is provisioned in its pods' zones while the zones have room,
every claim ends Bound, and no volume is bound twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.api.manifests import KINDS, load_manifests
from kubesched.cli import main
from kubesched.sim.simulation import Simulation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stateful"
ZONE = "topology.kubernetes.io/zone"

pytestmark = pytest.mark.skipif(
    "PersistentVolume" not in KINDS, reason="simulate does not read the storage kinds"
)


def test_every_replica_lands_where_its_storage_is() -> None:
    pytest.importorskip("kubesched.plugins.volumebinding", reason="needs VolumeBinding")
    sim = Simulation()
    sim.load(load_manifests([str(EXAMPLE)]))
    result = sim.run()
    assert result.warnings == []
    placed = {o.name: o.node for o in result.outcomes}
    assert all(o.status == "Scheduled" for o in result.outcomes), result.outcomes
    assert sorted(placed) == ["kafka-0", "kafka-1", "kafka-2", "postgres-0", "postgres-1", "postgres-2"]
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in sim.store.list("Node")}
    volumes = {v["metadata"]["name"]: v for v in sim.store.list("PersistentVolume")}
    bound_to: list[str] = []
    for claim in sim.store.list("PersistentVolumeClaim"):
        name = claim["metadata"]["name"]
        assert claim["status"]["phase"] == "Bound", name
        volume = volumes[claim["spec"]["volumeName"]]
        assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        bound_to.append(volume["metadata"]["name"])
        pod_node = placed[name.removeprefix("data-")]
        (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        (expr,) = term["matchExpressions"]
        assert nodes[pod_node][expr["key"]] in expr["values"], (name, pod_node)
    assert len(bound_to) == len(set(bound_to)) == 6
    # The local volume too small for a replica is left alone.
    assert volumes["local-b2-small"]["status"]["phase"] == "Available"
    # eu-west-b had room for one 40Gi disk, eu-west-a for the others; capacity shrank as they were made.
    kafka_zones = sorted(nodes[placed[f"kafka-{i}"]][ZONE] for i in range(3))
    assert kafka_zones == ["eu-west-a", "eu-west-a", "eu-west-b"]
    capacity = {c["metadata"]["name"]: c["capacity"] for c in sim.store.list("CSIStorageCapacity")}
    assert capacity == {"zonal-ssd-eu-west-a": "120Gi", "zonal-ssd-eu-west-b": "10Gi"}


def test_simulate_runs_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLE), "-o", "json", "--fail-on-unschedulable"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["scheduled"] == 6
