"""VolumeBinding in the batch pipeline as Volcano runs it: Reserve when a task is allocated (the
next task of the session sees the volume taken), Unreserve when the statement is discarded, and
PreBind (the claims' bindings written and waited for) before the pod is bound; a failed PreBind
leaves the pod unbound with Volcano's ``SchedulerError`` condition.

The simulation's PersistentVolume controller and provisioner complete the bindings.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from kubesched.api.storage import SELECTED_NODE_ANNOTATION
from kubesched.batch.apply import PRE_BIND_FAILED_REASON
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.sim.simulation import Simulation, SimulationResult

VOLCANO = "scheduling.volcano.sh/v1beta1"
HOSTNAME = "kubernetes.io/hostname"

# -- builders (each batch test file keeps its own: tests import no sibling modules) --------------- #


def node(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


def storage_class(name: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def volume(name: str, node_name: str | None, size: str = "10Gi", class_name: str = "local") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": class_name,
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete",
        "volumeMode": "Filesystem",
        "hostPath": {"path": f"/mnt/{name}"},
    }
    if node_name is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node_name]}]}
                ]
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"phase": "Available"},
    }


def claim(name: str, size: str = "5Gi", class_name: str = "local", namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "storageClassName": class_name,
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": size}},
        },
        "status": {"phase": "Pending"},
    }


def group(name: str, min_member: int, namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "queue": "default"},
        "status": {"phase": "Inqueue"},
    }


def pod(name: str, grp: str, claim_name: str | None, cpu: str = "1", namespace: str = "ns") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1G"}}}],
    }
    if claim_name is not None:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"scheduling.k8s.io/group-name": grp},
        },
        "spec": spec,
    }


ORDER = ("StorageClass", "Node", "PersistentVolume", "PersistentVolumeClaim", "PodGroup", "Pod")

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""

#: Volcano's TestAllocateWithPVC registers gang and predicates only.
GANG_PREDICATES = """
actions: "allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}]
"""


def simulation(objs: list[dict[str, Any]], conf: str = CONF, *, controllers: bool = True) -> Simulation:
    sim = Simulation(
        seed=0,
        batch_conf=batch_conf_from_dict(yaml.safe_load(conf), "test.conf"),
        volume_controllers=controllers,
    )
    for obj in sorted(objs, key=lambda o: ORDER.index(o["kind"])):
        sim.store.create(copy.deepcopy(obj))
    return sim


def placed(result: SimulationResult) -> dict[str, str | None]:
    return {o.name: o.node for o in result.outcomes}


def stored(sim: Simulation, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    obj = sim.store.get(kind, namespace, name)
    assert obj is not None
    return dict(obj)


def claim_ref(sim: Simulation, pv: str) -> str | None:
    ref = stored(sim, "PersistentVolume", pv)["spec"].get("claimRef")
    return None if not ref else str(ref["name"])


def bound_to(sim: Simulation, claim_name: str, namespace: str = "ns") -> str | None:
    obj = stored(sim, "PersistentVolumeClaim", claim_name, namespace)
    if (obj.get("status") or {}).get("phase") != "Bound":
        return None
    return str(obj["spec"]["volumeName"])


def pv_node(sim: Simulation, pv: str) -> str:
    affinity = stored(sim, "PersistentVolume", pv)["spec"]["nodeAffinity"]
    return str(affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0])


# -- Volcano's TestAllocateWithPVC (actions/allocate/allocate_test.go) ---------------------------- #

# Volcano's claims and volumes name no access modes; ReadWriteOnce on both matches the same way.
VOLCANO_SC = storage_class("sc", provisioner="ignore-provisioner")
VOLCANO_PVCS = [claim("pvc1", "1Gi", "sc", "c1"), claim("pvc2", "1Gi", "sc", "c1")]
VOLCANO_PODS = [
    pod("p1", "pg1", "pvc1", namespace="c1"),
    pod("p2", "pg1", "pvc2", namespace="c1"),
]


@pytest.mark.parametrize(
    "case",
    [
        "static pv matched but node without enough resource",
        "static pv matched and node with enough resources",
    ],
)
def test_allocate_with_pvc(case: str) -> None:
    if case == "static pv matched but node without enough resource":
        nodes, pvs = [node("n1", cpu="1")], [volume("pv1", None, "2Gi", "sc")]
    else:
        nodes, pvs = (
            [node("n2", cpu="2")],
            [volume("pv1", None, "2Gi", "sc"), volume("pv2", None, "2Gi", "sc")],
        )
    sim = simulation(
        [VOLCANO_SC, *nodes, *pvs, *VOLCANO_PVCS, group("pg1", 2, "c1"), *VOLCANO_PODS], GANG_PREDICATES
    )
    result = sim.run()
    if case == "static pv matched but node without enough resource":
        # Volcano: the PodGroup stays Inqueue; nothing is bound, no claim either.
        assert set(placed(result).values()) == {None}
        assert [g.phase for g in result.pod_groups] == ["Inqueue"]
        assert claim_ref(sim, "pv1") is None
        assert bound_to(sim, "pvc1", "c1") is None
        assert bound_to(sim, "pvc2", "c1") is None
    else:
        # Volcano: both tasks Binding; here the binds complete, each claim on its own volume.
        assert placed(result) == {"p1": "n2", "p2": "n2"}
        assert {bound_to(sim, "pvc1", "c1"), bound_to(sim, "pvc2", "c1")} == {"pv1", "pv2"}


# -- gangs of local volumes ---------------------------------------------------------------------- #

LOCAL = storage_class("local")


def test_gang_lands_on_its_volumes_nodes_with_claims_bound() -> None:
    nodes = [node(f"n{i}") for i in range(1, 5)]
    pvs = [volume("pv-a", "n3"), volume("pv-b", "n1"), volume("pv-c", "n4")]
    members = [pod(f"db-{i}", "db", f"data-{i}") for i in range(3)]
    sim = simulation([LOCAL, *nodes, *pvs, *(claim(f"data-{i}") for i in range(3)), group("db", 3), *members])
    result = sim.run()
    volumes = [bound_to(sim, f"data-{i}") for i in range(3)]
    assert sorted(v or "" for v in volumes) == ["pv-a", "pv-b", "pv-c"]
    got = placed(result)
    for i, pv in enumerate(volumes):
        assert pv is not None
        assert got[f"db-{i}"] == pv_node(sim, pv)
        assert claim_ref(sim, pv) == f"data-{i}"
    assert [g.phase for g in result.pod_groups] == ["Running"]


def test_members_on_one_node_take_distinct_volumes() -> None:
    """Both volumes are on n1: every member goes there, and each takes a volume of its own (without
    the session's Reserve both would pick the smallest)."""
    pvs = [volume("small", "n1", "5Gi"), volume("large", "n1", "20Gi")]
    members = [pod(f"db-{i}", "db", f"data-{i}") for i in range(2)]
    sim = simulation(
        [LOCAL, node("n1"), node("n2"), *pvs, claim("data-0"), claim("data-1"), group("db", 2), *members]
    )
    result = sim.run()
    assert placed(result) == {"db-0": "n1", "db-1": "n1"}
    assert {bound_to(sim, "data-0"), bound_to(sim, "data-1")} == {"small", "large"}


def test_tasks_of_two_jobs_in_one_session_take_distinct_volumes() -> None:
    pvs = [volume("small", "n1", "5Gi"), volume("large", "n1", "20Gi")]
    sim = simulation(
        [
            LOCAL,
            node("n1"),
            *pvs,
            claim("a"),
            claim("b"),
            group("ja", 1),
            group("jb", 1),
            pod("pa", "ja", "a"),
            pod("pb", "jb", "b"),
        ]
    )
    result = sim.run()
    assert placed(result) == {"pa": "n1", "pb": "n1"}
    assert {bound_to(sim, "a"), bound_to(sim, "b")} == {"small", "large"}
    assert len(sim.batch.sessions if sim.batch else []) >= 1


def test_gang_short_of_volumes_places_nobody_and_binds_no_claim() -> None:
    """Two volumes for a gang of three: the members placed are given back with their volumes, so a
    job after it in the same session takes one."""
    pvs = [volume("pv-1", "n1"), volume("pv-2", "n2")]
    members = [pod(f"db-{i}", "db", f"data-{i}") for i in range(3)]
    late = pod("solo", "solo", "solo-data")
    late["spec"]["priority"] = 0
    objs = [
        LOCAL,
        node("n1"),
        node("n2"),
        node("n3"),
        *pvs,
        *(claim(f"data-{i}") for i in range(3)),
        claim("solo-data"),
        group("db", 3),
        *members,
        group("solo", 1),
        late,
    ]
    sim = simulation(objs)
    result = sim.run()
    got = placed(result)
    assert all(got[f"db-{i}"] is None for i in range(3))
    for i in range(3):
        c = stored(sim, "PersistentVolumeClaim", f"data-{i}", "ns")
        assert bound_to(sim, f"data-{i}") is None
        assert SELECTED_NODE_ANNOTATION not in (c["metadata"].get("annotations") or {})
    solo_pv = bound_to(sim, "solo-data")
    assert solo_pv in {"pv-1", "pv-2"}
    assert got["solo"] == pv_node(sim, solo_pv)
    other = ({"pv-1", "pv-2"} - {solo_pv}).pop()
    assert claim_ref(sim, other) is None
    assert stored(sim, "PersistentVolume", other)["status"]["phase"] == "Available"


def test_provisioned_claims_get_the_members_nodes() -> None:
    fast = storage_class("fast", provisioner="example.com/csi")
    members = [pod(f"db-{i}", "db", f"data-{i}") for i in range(2)]
    sim = simulation(
        [
            fast,
            node("n1"),
            node("n2"),
            *(claim(f"data-{i}", class_name="fast") for i in range(2)),
            group("db", 2),
            *members,
        ]
    )
    result = sim.run()
    got = placed(result)
    for i in range(2):
        c = stored(sim, "PersistentVolumeClaim", f"data-{i}", "ns")
        assert c["metadata"]["annotations"][SELECTED_NODE_ANNOTATION] == got[f"db-{i}"]
        assert bound_to(sim, f"data-{i}") is not None


def test_pre_bind_failure_leaves_the_pod_unbound_with_volcanos_condition() -> None:
    """Nobody provisions: PreBind's wait for the claim ends unbound, the pod is not bound and
    carries Volcano's SchedulerError condition."""
    fast = storage_class("fast", provisioner="example.com/csi")
    sim = simulation(
        [fast, node("n1"), claim("data", class_name="fast"), group("solo", 1), pod("solo", "solo", "data")],
        controllers=False,
    )
    result = sim.run()
    (outcome,) = result.outcomes
    assert outcome.node is None
    assert outcome.status == "Unschedulable"
    assert outcome.message.startswith("execute preBind for pod ns/solo failed: binding volumes: ")
    assert outcome.message.endswith(", resync the task")
    conditions = stored(sim, "Pod", "solo", "ns")["status"]["conditions"]
    (scheduled,) = [c for c in conditions if c["type"] == "PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", PRE_BIND_FAILED_REASON)
    assert scheduled["message"] == outcome.message


def test_pods_without_volumes_are_unaffected() -> None:
    sim = simulation(
        [node("n1"), node("n2"), group("web", 2), pod("w-0", "web", None), pod("w-1", "web", None)]
    )
    result = sim.run()
    assert sorted(n or "" for n in placed(result).values()) == ["n1", "n2"]
