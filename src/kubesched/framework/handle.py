"""What plugins may reach beyond their arguments (upstream framework.Handle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kubesched.cache.cache import Snapshot
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.store.base import ClusterStore


@dataclass(slots=True)
class Handle:
    store: ClusterStore
    snapshot: Snapshot
    now: Callable[[], float]
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng())
    parallelism: int = 16
    #: Pods parked at Permit; plugins allow or reject them through this.
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
