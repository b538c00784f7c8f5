"""What plugins may reach beyond their arguments (upstream framework.Handle).

Plugins read cluster objects only through the shared informers' listers (``informers.informer(kind)``)
and write only through the side-effect ports, so the same plugin runs over the embedded store, the
API server kubesched serves or a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kubesched.cache.cache import Snapshot
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports


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
