"""VolumeBinding through whole simulations: pods with local volumes land where their volumes are,
two pods never take one ReadWriteOnce volume, a claim to provision gets its selected node, and a
binding the cluster never completes times out as upstream's does.

The simulation's own PersistentVolume controller and provisioner complete what VolumeBinding's
PreBind starts, as kube-controller-manager and an external provisioner do on a cluster.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api.storage import BIND_COMPLETED_ANNOTATION, SELECTED_NODE_ANNOTATION
from kubesched.errors import InputError
from kubesched.framework.config import config_from_dict
from kubesched.framework.outcome import PodOutcome
from kubesched.plugins import default_registry
from kubesched.plugins.volumebinding.test_utils import (
    Obj,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    storage_class,
)
from kubesched.sim.simulation import Simulation

HOSTNAME = "kubernetes.io/hostname"


def simulation(*objs: Obj, explain: bool = False, volume_controllers: bool = True) -> Simulation:
    sim = Simulation(registry=default_registry(), explain=explain, volume_controllers=volume_controllers)
    for obj in objs:
        sim.store.create(copy.deepcopy(obj))
    return sim


def local_pv(name: str, node: str, size: str = "10Gi") -> Obj:
    pv = (
        make_pv(name, "local")
        .with_capacity(size)
        .with_phase("Available")
        .with_node_affinity({HOSTNAME: [node]})
    )
    pv.obj["spec"]["accessModes"] = ["ReadWriteOnce"]
    pv.obj["spec"]["local"] = {"path": f"/mnt/{name}"}
    return pv.obj


def claim(name: str, class_name: str = "local", size: str = "5Gi") -> Obj:
    obj = make_pvc(name, class_name).with_request_storage(size).obj
    obj["spec"]["accessModes"] = ["ReadWriteOnce"]
    return obj


def pod(name: str, claim_name: str) -> Obj:
    obj = make_pod(name).with_pvc_volume(claim_name, "data").obj
    del obj["metadata"]["uid"]  # the store gives every object its own
    return obj


LOCAL = storage_class("local", "WaitForFirstConsumer")
NODES = [make_node(f"n{i}").obj for i in range(1, 4)]


def outcomes(sim: Simulation) -> dict[str, PodOutcome]:
    return {o.name: o for o in sim.run().outcomes}


def pv_node(sim: Simulation, pv_name: str) -> str:
    pv = sim.store.get("PersistentVolume", None, pv_name)
    assert pv is not None
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    return str(term["matchExpressions"][0]["values"][0])


def bound_volume(sim: Simulation, claim_name: str) -> str:
    obj = sim.store.get("PersistentVolumeClaim", "default", claim_name)
    assert obj is not None and obj["status"]["phase"] == "Bound"
    return str(obj["spec"]["volumeName"])


def test_pods_with_local_volumes_land_on_their_volumes_nodes() -> None:
    # Each claim is pre-bound by its author to a volume on another node than its index suggests.
    pvs = [local_pv("pv-a", "n3"), local_pv("pv-b", "n1"), local_pv("pv-c", "n2")]
    for pv, claim_name in zip(pvs, ("data-0", "data-1", "data-2"), strict=True):
        pv["spec"]["claimRef"] = {"namespace": "default", "name": claim_name}
    sim = simulation(
        LOCAL,
        *NODES,
        *pvs,
        *(claim(f"data-{i}") for i in range(3)),
        *(pod(f"web-{i}", f"data-{i}") for i in range(3)),
    )
    got = outcomes(sim)
    assert {name: (o.status, o.node) for name, o in got.items()} == {
        "web-0": ("Scheduled", "n3"),
        "web-1": ("Scheduled", "n1"),
        "web-2": ("Scheduled", "n2"),
    }
    assert [bound_volume(sim, f"data-{i}") for i in range(3)] == ["pv-a", "pv-b", "pv-c"]


def test_unbound_claims_take_distinct_volumes_on_the_pods_nodes() -> None:
    sim = simulation(
        LOCAL,
        *NODES,
        *(local_pv(f"pv-{n}", n) for n in ("n1", "n2", "n3")),
        *(claim(f"data-{i}") for i in range(3)),
        *(pod(f"web-{i}", f"data-{i}") for i in range(3)),
    )
    got = outcomes(sim)
    volumes = [bound_volume(sim, f"data-{i}") for i in range(3)]
    assert len(set(volumes)) == 3
    for i, volume in enumerate(volumes):
        assert got[f"web-{i}"].status == "Scheduled"
        assert got[f"web-{i}"].node == pv_node(sim, volume)
        pv = sim.store.get("PersistentVolume", None, volume)
        assert pv is not None
        assert pv["spec"]["claimRef"]["name"] == f"data-{i}"
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_two_pods_never_share_a_read_write_once_volume() -> None:
    sim = simulation(
        LOCAL,
        *NODES[:2],
        local_pv("only", "n1"),
        claim("a"),
        claim("b"),
        pod("first", "a"),
        pod("second", "b"),
    )
    got = outcomes(sim)
    assert (got["first"].status, got["first"].node) == ("Scheduled", "n1")
    assert got["second"].status == "Unschedulable"
    assert got["second"].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )
    assert bound_volume(sim, "a") == "only"
    b = sim.store.get("PersistentVolumeClaim", "default", "b")
    assert b is not None and not b["spec"].get("volumeName")


def test_a_bound_claim_keeps_its_pod_on_the_volumes_node() -> None:
    # Pre-bound both ways by its author: the PV controller binds them before the pod is tried.
    bound = claim("data")
    bound["spec"]["volumeName"] = "pv-n2"
    pv = local_pv("pv-n2", "n2")
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "data"}
    sim = simulation(LOCAL, *NODES, pv, bound, pod("db", "data"), explain=True)
    got = outcomes(sim)
    assert (got["db"].status, got["db"].node) == ("Scheduled", "n2")
    assert bound_volume(sim, "data") == "pv-n2"


def test_a_claim_to_provision_gets_the_node_chosen() -> None:
    provisioned = storage_class("fast", "WaitForFirstConsumer", "example.com/csi")
    sim = simulation(provisioned, *NODES, claim("scratch", "fast"), pod("job", "scratch"))
    got = outcomes(sim)
    assert got["job"].status == "Scheduled"
    claim_obj = sim.store.get("PersistentVolumeClaim", "default", "scratch")
    assert claim_obj is not None
    assert claim_obj["metadata"]["annotations"][SELECTED_NODE_ANNOTATION] == got["job"].node
    assert pv_node(sim, bound_volume(sim, "scratch")) == got["job"].node


def test_a_binding_nobody_completes_times_out_as_upstream() -> None:
    # No PV controller: the claim never becomes Bound.
    sim = simulation(
        LOCAL,
        make_node("n1").obj,
        local_pv("only", "n1"),
        claim("a"),
        pod("first", "a"),
        volume_controllers=False,
    )
    got = outcomes(sim)
    assert got["first"].status != "Scheduled"
    assert (
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        in got["first"].message
    )
    # PreBind wrote the volume's claimRef (as upstream, the write is not undone); the scheduler's
    # assumption was reverted and the next attempt finds the volume pre-bound to the claim.
    pv = sim.store.get("PersistentVolume", None, "only")
    assert pv is not None and pv["spec"]["claimRef"]["name"] == "a"


def test_pods_without_claims_are_unaffected() -> None:
    plain = make_pod("plain").obj
    del plain["metadata"]["uid"]
    sim = simulation(*NODES, plain)
    assert outcomes(sim)["plain"].status == "Scheduled"


def test_explain_names_the_claim_behind_a_rejection() -> None:
    pv = local_pv("pv-n1", "n1")
    bound = claim("data")
    bound["spec"]["volumeName"] = "pv-n1"
    bound["metadata"]["annotations"] = {BIND_COMPLETED_ANNOTATION: "yes"}
    bound["status"] = {"phase": "Bound"}
    cordoned = make_node("n1").obj
    cordoned["spec"] = {"unschedulable": True}
    sim = simulation(LOCAL, cordoned, make_node("n2").obj, pv, bound, pod("db", "data"), explain=True)
    got = outcomes(sim)["db"]
    assert got.status == "Unschedulable"
    assert got.message.startswith(
        "0/2 nodes are available: 1 node(s) had volume node affinity conflict, 1 node(s) were unschedulable."
    )
    assert got.explain is not None
    assert got.explain["filter"]["n2"]["VolumeBinding"] == (
        'node(s) had volume node affinity conflict (persistentvolumeclaim "default/data")'
    )


def test_a_pod_waiting_for_its_claim_is_scheduled_once_the_claim_appears() -> None:
    sim = simulation(LOCAL, *NODES[:1], local_pv("pv-n1", "n1"), pod("web", "data"))
    got = outcomes(sim)["web"]
    assert got.status == "Unschedulable"
    assert got.message.startswith('0/1 nodes are available: persistentvolumeclaim "data" not found.')
    # The claim's creation is a PersistentVolumeClaim/Add VolumeBinding registered for, with a hint
    # that answers Queue for a claim the pod names.
    sim.store.create(claim("data"))
    got = outcomes(sim)["web"]
    assert (got.status, got.node) == ("Scheduled", "n1")
    assert bound_volume(sim, "data") == "pv-n1"


def test_an_unrelated_claim_does_not_wake_the_pod() -> None:
    sim = simulation(LOCAL, *NODES[:1], pod("web", "data"))
    first = outcomes(sim)["web"]
    sim.store.create(claim("other"))
    again = outcomes(sim)["web"]
    assert again.status == "Unschedulable"
    assert again.attempts == first.attempts


def _config(args: dict[str, Any], gates: dict[str, bool] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}],
    }
    if gates is not None:
        doc["featureGates"] = gates
    return doc


def test_volume_binding_args_from_the_configuration() -> None:
    registry = default_registry()
    config = config_from_dict(_config({"bindTimeoutSeconds": 30}), registry)
    sim = Simulation(config, registry)
    # (The plugin's class is not compared: this module's import mode loads the package again.)
    plugin: Any = sim.scheduler.profiles["default-scheduler"].plugins["VolumeBinding"]
    assert plugin.binder is not None and plugin.binder.bind_timeout == 30
    assert plugin.scorer is None  # StorageCapacityScoring is off by default in v1.35
    shaped = _config({"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]})
    with pytest.raises(InputError, match="turn on the feature gate StorageCapacityScoring"):
        Simulation(config_from_dict(shaped, registry), registry)
    gated = config_from_dict({**shaped, "featureGates": {"StorageCapacityScoring": True}}, registry)
    plugin = Simulation(gated, registry).scheduler.profiles["default-scheduler"].plugins["VolumeBinding"]
    assert plugin.scorer is not None
    with pytest.raises(InputError, match="bindTimeoutSeconds"):
        config_from_dict(_config({"bindTimeoutSeconds": -1}), registry)
