"""Permit with Wait: pods park assumed on their node until allowed, rejected or timed out."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent
from kubesched.plugins import default_registry, spec_for
from kubesched.sim.simulation import Simulation

GROUP_LABEL = "example.com/group"
GROUP_SIZE_LABEL = "example.com/group-size"


class WaitForGroup:
    """Holds each pod of a group at Permit until the whole group is waiting, then lets all go."""

    name: ClassVar[str] = "WaitForGroup"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        # Only a new pod (a group member arriving) can change this plugin's answer.
        return [ClusterEvent("Pod", ActionType.ADD)]

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group = pod.labels.get(GROUP_LABEL)
        if group is None:
            return None, 0.0
        size = int(pod.labels[GROUP_SIZE_LABEL])
        members = [wp for wp in self.handle.waiting_pods if wp.pod.labels.get(GROUP_LABEL) == group]
        if len(members) + 1 < size:
            return Status(Code.WAIT), 10.0
        for wp in members:
            wp.allow(self.name)
        return None, 0.0


def _sim() -> Simulation:
    registry = default_registry()
    registry.register(spec_for(WaitForGroup))
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"permit": {"enabled": [{"name": "WaitForGroup"}]}},
                }
            ],
        },
        registry,
    )
    sim = Simulation(config, registry, seed=0)
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    return sim


def _pod(name: str, group: str | None = None, size: int = 0, cpu: str = "1") -> dict[str, Any]:
    labels = {GROUP_LABEL: group, GROUP_SIZE_LABEL: str(size)} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]},
    }


def test_group_members_wait_for_each_other_then_bind() -> None:
    sim = _sim()
    sim.store.create(_pod("a", "g", 2))
    sim.store.create(_pod("b", "g", 2))
    result = {o.name: o for o in sim.run().outcomes}
    assert result["a"].status == "Scheduled" and result["b"].status == "Scheduled"
    assert sim.clock.elapsed == 0  # the second member released the first: no timeout passed


def test_waiting_pod_is_assumed_so_others_see_its_resources() -> None:
    sim = _sim()
    sim.store.create(_pod("waiting", "g", 2, cpu="3"))
    sched = sim.scheduler
    sched.informers.pump()
    assert sched.schedule_one()
    assert sched.binding_in_flight == 1
    assert sim.store.get("Pod", "default", "waiting")["spec"].get("nodeName") is None
    # The next cycle counts the 3 CPU held by the waiting pod: a 2 CPU pod no longer fits.
    sim.store.create(_pod("other", cpu="2"))
    sched.informers.pump()
    assert sched.schedule_one()
    assert sched.outcomes[sim.store.get("Pod", "default", "other")["metadata"]["uid"]].message == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_lone_member_times_out_and_releases_its_node() -> None:
    sim = _sim()
    sim.store.create(_pod("lonely", "g", 3))
    result = {o.name: o for o in sim.run().outcomes}
    lonely = result["lonely"]
    assert lonely.status == "Unschedulable"
    assert lonely.message == "rejected due to timeout after waiting 10s at plugin WaitForGroup"
    assert sim.clock.elapsed == 10
    assert not sim.warnings
    # Forgotten: the node's resources are free again.
    assert sim.scheduler.cache.node_infos["n1"].requested.get("cpu", 0) == 0
    events = [e for e in sim.store.list("Event") if e["reason"] == "FailedScheduling"]
    assert any("timeout" in e["note"] for e in events)
