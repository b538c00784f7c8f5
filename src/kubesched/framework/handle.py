"""What plugins may reach beyond their arguments (upstream framework.Handle).

Plugins read cluster objects only through the shared informers' listers (``informers.informer(kind)``)
and write only through the side-effect ports, so the same plugin runs over the embedded store, the
API server kubesched serves or a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.cache import Snapshot
from kubesched.framework.config.defaults import FEATURE_GATE_DEFAULTS
from kubesched.framework.pod_groups import PodGroupStates
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports

#: ``wait_for_cluster(condition, timeout)``: True once ``condition()`` holds, False if it did not
#: within ``timeout`` seconds.
ClusterWait = Callable[[Callable[[], bool], float], bool]


def check_once(condition: Callable[[], bool], timeout: float) -> bool:
    """The wait of a handle no driver runs: the cluster does not move, so look once."""
    return condition()


def activate_nothing(pods: Iterable[Pod]) -> None:
    """The activation of a handle no scheduling queue stands behind."""


@dataclass(slots=True)
class Handle:
    informers: InformerFactory
    ports: Ports
    snapshot: Snapshot
    now: Callable[[], float]
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng())
    parallelism: int = 16
    #: Pods parked at Permit; plugins allow or reject them through this.
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    #: Waits while the cluster moves on (a PreBind waiting for controllers to finish what it
    #: started, as upstream's VolumeBinding waits for its claims to be bound). The driver running the
    #: scheduler sets it: on a virtual clock the informers are pumped until nothing changes, on the
    #: wall clock it polls, pumping the informers itself when it runs on the driver's thread.
    wait_for_cluster: ClusterWait = check_once
    #: Feature gates set explicitly for the scheduler (the rest keep their defaults).
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: The pods of each scheduling.k8s.io PodGroup (upstream ``PodGroupManager``).
    pod_groups: PodGroupStates = field(default_factory=PodGroupStates)
    #: Moves pending pods to activeQ (upstream ``PodActivator.Activate``); the scheduler sets it.
    activate: Callable[[Iterable[Pod]], None] = activate_nothing

    def gate_enabled(self, name: str) -> bool:
        """Whether a feature gate is on: as set for the scheduler, else its default."""
        return self.feature_gates.get(name, FEATURE_GATE_DEFAULTS.get(name, False))
