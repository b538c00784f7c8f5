"""The batch pipeline's predicates run NodeVolumeLimits and VolumeZone as Volcano's do: switched by
``predicate.NodeVolumeLimitsEnable`` / ``predicate.VolumeZoneEnable`` (default true), counting the
volumes of the tasks a session has already placed, with upstream's reasons."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf
from kubesched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
from kubesched.plugins.testing_volumes import bound_claim, create_all, csinode_dict
from kubesched.plugins.volumezone import ERR_REASON_CONFLICT
from kubesched.sim.simulation import Simulation, SimulationResult

VOLCANO = "scheduling.volcano.sh/v1beta1"
ZONE = "topology.kubernetes.io/zone"
EBS = "ebs.csi.aws.com"

# -- builders (each batch test file keeps its own: tests import no sibling modules) --------------- #


def node(name: str, cpu: str = "8", zone: str = "") -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels[ZONE] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


def group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": "default"},
    }


def pod(name: str, grp: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": grp}},
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def gang(name: str, size: int, *, zone: str = "", csi: bool = False) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [group(name, size)]
    for i in range(size):
        member = f"{name}-{i}"
        objs += bound_claim(
            f"data-{member}",
            f"pv-{member}",
            namespace="ns",
            labels={ZONE: zone} if zone else None,
            csi=(EBS, f"vol-{member}") if csi else None,
        )
        objs.append(pod(member, name, f"data-{member}"))
    return objs


ORDER = {"Node": 0, "CSINode": 1, "PersistentVolume": 2, "PersistentVolumeClaim": 3, "PodGroup": 4, "Pod": 5}


def simulate(objs: list[dict[str, Any]], conf: str | None = None) -> SimulationResult:
    bc = batch_conf_from_dict(yaml.safe_load(conf), "test.conf") if conf else default_batch_conf()
    sim = Simulation(seed=0, batch_conf=bc)
    create_all(sim.store, sorted(objs, key=lambda o: ORDER[o["kind"]]))
    return sim.run()


def placed(result: SimulationResult) -> dict[str, str | None]:
    return {o.name: o.node for o in result.outcomes}


def conf(**predicate_args: bool) -> str:
    args = ", ".join(f"predicate.{k}: {str(v).lower()}" for k, v in predicate_args.items())
    return f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates, arguments: {{{args}}}}}, {{name: nodeorder}}]
"""


# -- NodeVolumeLimits -------------------------------------------------------------------------------- #


def test_gang_members_count_each_others_volumes() -> None:
    """The big node scores best for both members, but its CSI driver takes one volume: the session
    counts the first member's volume and puts the second on the other node."""
    objs = [
        node("big", cpu="64"),
        node("small", cpu="4"),
        csinode_dict("big", {EBS: 1}),
        csinode_dict("small", {EBS: 1}),
        *gang("db", 2, csi=True),
    ]
    assert sorted(n or "" for n in placed(simulate(objs)).values()) == ["big", "small"]


def test_gang_larger_than_the_volume_slots_binds_nothing() -> None:
    objs = [
        node("n1"),
        node("n2"),
        csinode_dict("n1", {EBS: 1}),
        csinode_dict("n2", {EBS: 1}),
        *gang("db", 3, csi=True),
    ]
    result = simulate(objs)
    assert set(placed(result).values()) == {None}
    assert any(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED in o.message for o in result.outcomes)


def test_node_volume_limits_switch() -> None:
    """``predicate.NodeVolumeLimitsEnable: false`` lets the big node take both members."""
    objs = [
        node("big", cpu="64"),
        node("small", cpu="4"),
        csinode_dict("big", {EBS: 1}),
        csinode_dict("small", {EBS: 1}),
        *gang("db", 2, csi=True),
    ]
    nodes = placed(simulate(objs, conf(NodeVolumeLimitsEnable=False)))
    assert list(nodes.values()) == ["big", "big"]


# -- VolumeZone ---------------------------------------------------------------------------------------- #


def test_zonal_volumes_keep_tasks_in_their_zone() -> None:
    objs = [
        node("big-a", cpu="64", zone="zone-a"),
        node("small-b", cpu="4", zone="zone-b"),
        *gang("db", 2, zone="zone-b"),
    ]
    assert set(placed(simulate(objs)).values()) == {"small-b"}


def test_volume_zone_switch() -> None:
    objs = [
        node("big-a", cpu="64", zone="zone-a"),
        node("small-b", cpu="4", zone="zone-b"),
        *gang("db", 2, zone="zone-b"),
    ]
    assert set(placed(simulate(objs, conf(VolumeZoneEnable=False))).values()) == {"big-a"}


def test_volume_in_a_zone_without_nodes() -> None:
    objs = [node("a", zone="zone-a"), *gang("db", 1, zone="zone-x")]
    result = simulate(objs)
    assert placed(result) == {"db-0": None}
    (outcome,) = result.outcomes
    assert f"1 {ERR_REASON_CONFLICT}" in outcome.message
