"""Fair-share arithmetic behind the batch ``proportion`` and ``drf`` plugins, over NumPy vectors.

Everything here is pure: the batch session gathers per-queue / per-job resource sums, turns them
into vectors over one :class:`ResourceSpace`, and calls these functions.

Vectors are ``float64`` arrays (Volcano keeps resources as ``float64`` too, and a capability needs
``inf`` for "no limit in this dimension"). Units are kubesched's canonical ones: milli-CPU, bytes,
counts. Comparisons use Volcano's tolerance of ``0.1`` of a unit per dimension (``minResource`` in
``pkg/scheduler/api/resource_info.go``).

Behaviour follows Volcano ``pkg/scheduler/plugins/proportion/proportion.go`` (``OnSessionOpen``:
real capability, the deserved water-filling loop, ``AddOverusedFn``, ``AddAllocatableFn``,
``AddReclaimableFn``, ``updateQueueAttrShare``, the queue order) and
``pkg/scheduler/plugins/drf/drf.go`` (``calculateShare``, the job order, ``preemptableFn``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import floor, isfinite

import numpy as np
import numpy.typing as npt

from kubesched.api.resources import CPU, MEMORY, PODS

Vector = npt.NDArray[np.float64]
#: Node amounts as the batch session keeps them (int64, the table's units) or share-space vectors:
#: the comparisons below take either.
Amounts = npt.NDArray[np.float64] | npt.NDArray[np.int64]

#: Per-dimension tolerance of every comparison (Volcano's ``minResource``).
MIN_RESOURCE = 0.1
#: Two drf shares closer than this are equal when choosing preemption victims.
SHARE_DELTA = 1e-6
#: Safety bound on water-filling rounds; each round meets a queue or shrinks what is left, so real
#: inputs finish in a handful.
MAX_ROUNDS = 10_000


@dataclass(frozen=True, slots=True)
class ResourceSpace:
    """A fixed, ordered list of resource names: the axes of every vector built from it."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"resource names repeat: {self.names}")

    @classmethod
    def covering(cls, *resource_lists: Mapping[str, float] | None) -> ResourceSpace:
        """The space of cpu, memory and every other name in ``resource_lists`` (sorted)."""
        others: set[str] = set()
        for rl in resource_lists:
            if rl:
                others.update(rl)
        others.difference_update((CPU, MEMORY))
        return cls((CPU, MEMORY, *sorted(others)))

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def zeros(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.float64)

    def from_dict(self, resources: Mapping[str, float] | None, *, missing: float = 0.0) -> Vector:
        """A vector with ``resources`` in place and ``missing`` elsewhere; unknown names are an error."""
        vec = np.full(len(self.names), missing, dtype=np.float64)
        if resources:
            positions = {n: i for i, n in enumerate(self.names)}
            for name, quantity in resources.items():
                if name not in positions:
                    raise ValueError(f"resource {name!r} is not in this space {self.names}")
                vec[positions[name]] = float(quantity)
        return vec

    def to_dict(self, vec: Vector, *, keep_zero: bool = False) -> dict[str, int]:
        """Canonical ints (rounded down); infinite dimensions are left out, zeros unless ``keep_zero``."""
        if vec.shape != (len(self.names),):
            raise ValueError(f"vector of shape {vec.shape} does not fit {len(self.names)} resources")
        out: dict[str, int] = {}
        for name, value in zip(self.names, vec.tolist(), strict=True):
            if not isfinite(value):
                continue
            quantity = floor(value)
            if quantity or keep_zero:
                out[name] = quantity
        return out


def less_equal(left: Vector, right: Vector) -> bool:
    """Volcano's ``Resource.LessEqual`` over full vectors: every dimension ``<=`` within 0.1."""
    return bool(np.all((left < right) | (np.abs(left - right) < MIN_RESOURCE)))


def _less_equal_rows(left: Vector, right: Amounts) -> npt.NDArray[np.bool_]:
    return np.all((left < right) | (np.abs(left - right) < MIN_RESOURCE), axis=-1)  # type: ignore[no-any-return]


def fits_rows(request: Vector, available: Amounts) -> npt.NDArray[np.bool_]:
    """:func:`less_equal` of one request against every row of ``available`` (e.g. per node slot)."""
    return _less_equal_rows(request[np.newaxis, :], available)


def share(allocated: float, total: float) -> float:
    """Volcano's ``helpers.Share``: ``allocated / total``; a zero total gives 0 if nothing is used, else 1."""
    if total == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / total


# --------------------------------------------------------------------------------------------- #
# proportion


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """What the proportion plugin knows of one queue that has jobs in the session.

    ``request`` is allocated plus pending task requests of its jobs; ``capability`` comes from
    :func:`capability_vector` (``None``: the queue sets none); ``guarantee`` ``None`` means zero.
    """

    name: str
    weight: int
    request: Vector
    allocated: Vector
    capability: Vector | None = None
    guarantee: Vector | None = None


def capability_vector(space: ResourceSpace, capability: Mapping[str, float] | None) -> Vector | None:
    """A queue's ``spec.capability`` as Volcano reads it.

    Empty means no capability (``None``). Otherwise dimensions it does not name are unlimited
    (``inf``), and cpu or memory at or below zero are unlimited too. Names outside ``space`` are
    dropped: the cluster has none of them, so no share of them can be handed out.
    """
    if not capability:
        return None
    vec = np.full(len(space), np.inf, dtype=np.float64)
    for name, quantity in capability.items():
        if name in space.names:
            vec[space.index(name)] = float(quantity)
    for name in (CPU, MEMORY):
        if name in space.names and vec[space.index(name)] <= 0:
            vec[space.index(name)] = np.inf
    return vec


def real_capability(
    total: Vector, total_guarantee: Vector, capability: Vector | None, guarantee: Vector | None
) -> Vector:
    """The most a queue may deserve: the unguaranteed rest plus its own guarantee, within capability."""
    own = guarantee if guarantee is not None else np.zeros_like(total)
    real = np.maximum(total - total_guarantee, 0.0) + own
    if capability is not None:
        real = np.minimum(real, capability)
    return real


def proportion_deserved(
    total: Vector,
    queues: Sequence[QueueDemand],
    *,
    total_guarantee: Vector | None = None,
) -> dict[str, Vector]:
    """Each queue's deserved resources by Volcano's weighted water-filling.

    ``total_guarantee`` is the sum of the guarantees of *all* queues in the session (Volcano sums
    every queue, also those without jobs); it defaults to the sum over ``queues``.

    Each round splits what remains among the queues not yet met in proportion to their weights; a
    queue's running deserved is then cut to its real capability and to its request, and raised to
    its guarantee. A queue is met once its request fits its deserved, or when a round leaves its
    deserved unchanged. Whatever a round hands out (net of what it takes back) leaves the remainder;
    the loop ends when every queue is met, the remainder is empty, or a round does not change it.
    """
    n = len(queues)
    if n == 0:
        return {}
    if len({q.name for q in queues}) != n:
        raise ValueError("queue names repeat")
    # By name: the sums below round, so the order of the queues would show in the last bits of
    # what they deserve (and in share ties); the result does not depend on the caller's order.
    queues = sorted(queues, key=lambda q: q.name)
    names = [q.name for q in queues]
    total = np.asarray(total, dtype=np.float64)
    zero = np.zeros_like(total)
    weights = np.array([q.weight for q in queues], dtype=np.float64)
    request = np.stack([q.request for q in queues]).astype(np.float64)
    guarantee = np.stack([q.guarantee if q.guarantee is not None else zero for q in queues]).astype(
        np.float64
    )
    if total_guarantee is None:
        total_guarantee = guarantee.sum(axis=0)
    limit = np.stack(
        [real_capability(total, total_guarantee, q.capability, guarantee[i]) for i, q in enumerate(queues)]
    )

    deserved = np.zeros((n, total.shape[0]), dtype=np.float64)
    met = np.zeros(n, dtype=bool)
    remaining = total.copy()
    for _ in range(MAX_ROUNDS):
        active = np.flatnonzero(~met)
        total_weight = weights[active].sum()
        if total_weight == 0:
            break
        before = remaining.copy()
        old = deserved[active]
        ratio = weights[active] / total_weight
        new = old + remaining[np.newaxis, :] * ratio[:, np.newaxis]
        new = np.minimum(new, limit[active])
        new = np.minimum(new, request[active])
        new = np.maximum(new, guarantee[active])
        deserved[active] = new
        done = _less_equal_rows(request[active], new) | np.all(new == old, axis=1)
        met[active[done]] = True
        delta = new - old
        increased = np.clip(delta, 0.0, None).sum(axis=0)
        decreased = np.clip(-delta, 0.0, None).sum(axis=0)
        remaining = np.maximum(remaining + decreased - increased, 0.0)
        if np.all(remaining < MIN_RESOURCE) or np.array_equal(remaining, before):
            break
    return {name: deserved[i] for i, name in enumerate(names)}


def overused(deserved: Vector, allocated: Vector) -> bool:
    """Volcano's proportion ``OverusedFn``: the queue uses at least its deserved in every dimension."""
    return less_equal(deserved, allocated)


def queue_share(deserved: Vector, allocated: Vector) -> float:
    """Largest ``allocated / deserved`` over the dimensions where deserved is not (near) zero."""
    mask = deserved >= MIN_RESOURCE
    if not mask.any():
        return 0.0
    return max(0.0, float(np.max(allocated[mask] / deserved[mask])))


def proportion_queue_order(l_priority: int, l_share: float, r_priority: int, r_share: float) -> int:
    """Queue order: higher priority first, then the smaller share; negative means ``l`` first."""
    if l_priority != r_priority:
        return r_priority - l_priority
    if l_share == r_share:
        return 0
    return -1 if l_share < r_share else 1


def insufficient_dims(space: ResourceSpace, future_used: Vector, limit: Vector, request: Vector) -> list[str]:
    """Dimensions the request uses (``pods`` aside) where ``future_used`` exceeds ``limit`` (no tolerance)."""
    bad = (request > 0) & (future_used > limit)
    if not bad.any():
        return []
    return [name for i, name in enumerate(space.names) if bad[i] and name != PODS]


def queue_allocatable(space: ResourceSpace, deserved: Vector, allocated: Vector, request: Vector) -> bool:
    """Volcano's proportion ``AllocatableFn``: allocated plus ``request`` stays within deserved in
    every dimension the request uses."""
    return not insufficient_dims(space, allocated + request, deserved, request)


def reclaim_victims(deserved: Vector, allocated: Vector, reclaimees: Iterable[Vector]) -> list[int]:
    """Volcano's proportion ``ReclaimableFn`` for the reclaimees of one queue, in order.

    A reclaimee is a victim while the queue's (running) allocation is not within its deserved;
    each victim's request comes off that running allocation.
    """
    running = np.array(allocated, dtype=np.float64)
    victims: list[int] = []
    for i, resreq in enumerate(reclaimees):
        if not less_equal(running, deserved):
            running = running - resreq
            victims.append(i)
    return victims


# --------------------------------------------------------------------------------------------- #
# drf


def dominant_share(allocated: Vector, total: Vector) -> float:
    """Largest ``allocated / total`` over the dimensions the cluster has (total of at least 0.1)."""
    mask = total >= MIN_RESOURCE
    if not mask.any():
        return 0.0
    return max(0.0, float(np.max(allocated[mask] / total[mask])))


def dominant_resource(space: ResourceSpace, allocated: Vector, total: Vector) -> tuple[str, float]:
    """The dominant resource's name and share; ``("", 0.0)`` when nothing is used."""
    mask = total >= MIN_RESOURCE
    shares = np.zeros(len(space), dtype=np.float64)
    np.divide(allocated, total, out=shares, where=mask)
    best = int(np.argmax(shares))
    if not mask.any() or shares[best] <= 0:
        return "", 0.0
    return space.names[best], float(shares[best])


def job_share_order(l_share: float, r_share: float) -> int:
    """drf job order: the smaller share first (negative means ``l`` first)."""
    if l_share == r_share:
        return 0
    return -1 if l_share < r_share else 1


def drf_preemptable(
    total: Vector,
    preemptor_allocated: Vector,
    preemptor_request: Vector,
    preemptees: Sequence[tuple[Hashable, Vector]],
    job_allocated: Mapping[Hashable, Vector],
) -> list[int]:
    """Volcano's drf ``PreemptableFn``: indexes of the ``(job, request)`` preemptees that may go.

    The preemptor's share is taken with its request added. Each preemptee's job share is taken with
    that preemptee removed (and with every earlier preemptee of the same job already removed); the
    preemptee is a victim when the preemptor's share is below it or within :data:`SHARE_DELTA`.
    Preemptees whose job is unknown are skipped.
    """
    mine = dominant_share(preemptor_allocated + preemptor_request, total)
    running: dict[Hashable, Vector] = {}
    victims: list[int] = []
    for i, (job, resreq) in enumerate(preemptees):
        if job not in running:
            if job not in job_allocated:
                continue
            running[job] = np.array(job_allocated[job], dtype=np.float64)
        running[job] = running[job] - resreq
        theirs = dominant_share(running[job], total)
        if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
            victims.append(i)
    return victims
