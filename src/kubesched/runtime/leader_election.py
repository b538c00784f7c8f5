"""Leader election over a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Several kubesched replicas run; one leads (schedules) and the others wait. The algorithm is
client-go's ``tools/leaderelection`` with a Lease lock:

- **Acquire**: every ``retry_period`` (plus up to ``JITTER_FACTOR`` times as much again, at random)
  read the Lease; create it when it is missing; take it when nobody holds it or when the holder has
  not changed the record for ``leaseDurationSeconds`` *as observed by this process*. Remote
  timestamps are never compared with the local clock, only watched for change, so clock skew
  between replicas does not matter. A takeover adds one to ``leaseTransitions``.
- **Renew**: the leader rewrites the record every ``retry_period`` (first with the object it last
  wrote, falling back to a fresh read on any failure). When a round does not succeed within
  ``renew_deadline``, leadership is given up at once: ``on_stopped_leading`` runs before anything
  else happens. A Conflict from the API counts as a failed attempt.
- **Release** (``release_on_cancel``): when the elector is cancelled while leading it clears
  ``holderIdentity`` and sets ``leaseDurationSeconds`` to 1, so a standby takes over at its next
  try instead of waiting out the lease.

The Lease itself is reached through :class:`LeaseAPI` (an in-memory fake in tests, the API server in
``kubesched run``) and time through :class:`Clock`, so tests run on virtual time.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from kubesched.errors import ConfigError
from kubesched.store.base import Conflict, NotFound

log = logging.getLogger(__name__)

#: client-go's ``JitterFactor``: waits between acquire attempts are ``retry_period * (1 + U[0, 1.2))``.
JITTER_FACTOR = 1.2

LEASE_API_VERSION = "coordination.k8s.io/v1"

_T = TypeVar("_T")


class LeaseAPI(Protocol):
    """Reads and writes Lease objects; raises ``kubesched.store.base`` ``Conflict`` for a stale
    ``resourceVersion``, ``AlreadyExists`` for a create that lost a race, ``NotFound`` for an
    update of a deleted Lease."""

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Lease, or None when there is none."""
        ...

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the Lease; ``obj`` carries the ``resourceVersion`` it was read at."""
        ...


class Clock(Protocol):
    """Monotonic time for every expiry decision, wall time only for the timestamps written."""

    def monotonic(self) -> float: ...

    def wall(self) -> datetime: ...

    def sleep(self, seconds: float) -> Awaitable[None]: ...


class SystemClock:
    """The loop's monotonic clock and the system's UTC wall clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


# --- the record ---------------------------------------------------------------------------------


def format_micro_time(value: datetime) -> str:
    """A ``metav1.MicroTime`` as the API server writes it: RFC 3339, six fractional digits, UTC."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(value: object) -> datetime | None:
    """A ``MicroTime`` or ``Time`` string; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _int_field(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str_field(value: object) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class LeaderElectionRecord:
    """What a Lease's spec says about leadership (client-go's ``LeaderElectionRecord``)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0
    preferred_holder: str = ""
    strategy: str = ""

    @classmethod
    def from_spec(cls, spec: object) -> LeaderElectionRecord:
        """Read a Lease spec; missing or mistyped fields read as their zero value."""
        if not isinstance(spec, Mapping):
            return cls()
        return cls(
            holder_identity=_str_field(spec.get("holderIdentity")),
            lease_duration_seconds=_int_field(spec.get("leaseDurationSeconds")),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            leader_transitions=_int_field(spec.get("leaseTransitions")),
            preferred_holder=_str_field(spec.get("preferredHolder")),
            strategy=_str_field(spec.get("strategy")),
        )

    def to_spec(self) -> dict[str, Any]:
        """A Lease spec (holder, duration and transitions always written, as client-go does)."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        if self.strategy:
            spec["strategy"] = self.strategy
        return spec


class LeaseLock:
    """One Lease as a lock: remembers the object it last read or wrote, so an update carries that
    object's ``resourceVersion`` (optimistic concurrency) — as client-go's ``LeaseLock``."""

    def __init__(self, api: LeaseAPI, namespace: str, name: str, identity: str) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaderElectionRecord | None:
        lease = await self.api.get(self.namespace, self.name)
        if lease is None:
            return None
        self.lease = lease
        return LeaderElectionRecord.from_spec(lease.get("spec"))

    async def create(self, record: LeaderElectionRecord) -> None:
        self.lease = await self.api.create(
            {
                "apiVersion": LEASE_API_VERSION,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": record.to_spec(),
            }
        )

    async def update(self, record: LeaderElectionRecord) -> None:
        if self.lease is None:
            raise NotFound(f"lease {self.describe()} not read yet: get or create it first")
        obj = copy.deepcopy(self.lease)
        obj["spec"] = record.to_spec()
        self.lease = await self.api.update(obj)


# --- configuration ------------------------------------------------------------------------------


def _ignore() -> None:
    return None


def _ignore_leader(identity: str) -> None:
    return None


def _ignore_event(lease: Mapping[str, Any] | None, message: str) -> None:
    return None


@dataclass(frozen=True)
class LeaderCallbacks:
    """Called on the elector's event loop; they must return quickly (hand long work to a thread).

    ``on_stopped_leading`` is called whenever :meth:`LeaderElector.run` ends, also when this
    process never led (as client-go). ``on_new_leader`` gets every change of holder this process
    observes, its own identity and ``""`` (released) included. ``on_leader_event`` gets the Lease
    and ``"<identity> became leader"`` or ``"<identity> stopped leading"``, for the ``Normal``
    ``LeaderElection`` event client-go's lock records about the Lease."""

    on_started_leading: Callable[[], None] = _ignore
    on_stopped_leading: Callable[[], None] = _ignore
    on_new_leader: Callable[[str], None] = _ignore_leader
    on_leader_event: Callable[[Mapping[str, Any] | None, str], None] = _ignore_event


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Durations in seconds; defaults are kube-scheduler's (15s, 10s, 2s)."""

    identity: str
    lock_name: str = "kubesched"
    lock_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False
    callbacks: LeaderCallbacks = field(default_factory=LeaderCallbacks)

    def validate(self) -> None:
        """Refuse settings client-go's ``NewLeaderElector`` refuses, naming the setting."""
        checks: list[tuple[bool, str, str]] = [
            (self.lease_duration > 0, "leaseDuration", "must be greater than zero"),
            (self.renew_deadline > 0, "renewDeadline", "must be greater than zero"),
            (self.retry_period > 0, "retryPeriod", "must be greater than zero"),
            (
                self.lease_duration > self.renew_deadline,
                "leaseDuration",
                f"must be greater than renewDeadline ({self.lease_duration:g}s <= {self.renew_deadline:g}s)",
            ),
            (
                self.renew_deadline > JITTER_FACTOR * self.retry_period,
                "renewDeadline",
                f"must be greater than retryPeriod*JitterFactor ({self.renew_deadline:g}s <= "
                f"{self.retry_period:g}s*{JITTER_FACTOR})",
            ),
            # The Lease holds whole seconds and the API server refuses 0.
            (self.lease_duration >= 1, "leaseDuration", "must be at least 1s (a Lease counts whole seconds)"),
            (bool(self.identity), "identity", "must not be empty"),
            (bool(self.lock_name), "resourceName", "must not be empty"),
            (bool(self.lock_namespace), "resourceNamespace", "must not be empty"),
        ]
        for ok, name, message in checks:
            if not ok:
                raise ConfigError(message, field=f"leaderElection.{name}")


# --- the elector --------------------------------------------------------------------------------


class _DeadlineExceeded(Exception):
    pass


class LeaderElector:
    """Runs one candidate's election loop: :meth:`run` returns when leadership is lost (or was
    never won and the task is cancelled)."""

    def __init__(
        self,
        config: LeaderElectionConfig,
        api: LeaseAPI,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.lock = LeaseLock(api, config.lock_namespace, config.lock_name, config.identity)
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.observed_record = LeaderElectionRecord()
        self.observed_time = float("-inf")
        #: When the last write naming this process as the holder began (monotonic).
        self.confirmed_at = float("-inf")
        self._reported_leader = ""
        self._leading = False

    # -- what others read

    @property
    def identity(self) -> str:
        return self.config.identity

    def get_leader(self) -> str:
        """The holder last observed ("" before anything was observed, or after a release)."""
        return self.observed_record.holder_identity

    def is_leader(self) -> bool:
        """Whether the last observed record names this process."""
        return self.observed_record.holder_identity == self.identity

    @property
    def leading(self) -> bool:
        """True between ``on_started_leading`` and ``on_stopped_leading``."""
        return self._leading

    def holds_lease(self) -> bool:
        """Whether this process may still act as the leader: it leads and its last write of the
        Lease began less than ``renew_deadline`` ago. A standby takes over no sooner than
        ``lease_duration`` after it saw that write, so what is sent while this holds reaches the
        server with ``lease_duration - renew_deadline`` to spare. client-go stops the process when
        leadership is lost and leaves a request already under way to land whenever it does; this
        is the check a writer makes before it sends, so that a bind held up past the deadline (a
        slow or cut connection) is not sent after a standby has taken over."""
        return self._leading and self.clock.monotonic() - self.confirmed_at < self.config.renew_deadline

    def check(self, max_tolerable_expired: float) -> str | None:
        """For a health check: a message when this process leads on a record it last confirmed more
        than ``lease_duration + max_tolerable_expired`` ago (a wedged loop), else None."""
        if not self.is_leader():
            return None
        if self.clock.monotonic() - self.observed_time > self.config.lease_duration + max_tolerable_expired:
            return f"failed election to renew leadership on lease {self.lock.describe()}"
        return None

    # -- the loop

    async def run(self) -> None:
        """Acquire, then renew until a renewal round fails; cancel the task to stop. Always calls
        ``on_stopped_leading`` on the way out; with ``release_on_cancel`` a cancelled leader first
        gives the Lease up."""
        callbacks = self.config.callbacks
        led = False
        try:
            await self._acquire()
            led = self._leading = True
            callbacks.on_leader_event(self.lock.lease, f"{self.identity} became leader")
            callbacks.on_started_leading()
            await self._renew()
        finally:
            self._leading = False
            callbacks.on_stopped_leading()
            if led:
                callbacks.on_leader_event(self.lock.lease, f"{self.identity} stopped leading")

    async def _acquire(self) -> None:
        log.info("attempting to acquire leader lease %s", self.lock.describe())
        while True:
            succeeded = await self._attempt(self.config.renew_deadline)
            self._maybe_report_transition()
            if succeeded:
                log.info("successfully acquired lease %s", self.lock.describe())
                return
            log.debug("failed to acquire lease %s", self.lock.describe())
            period = self.config.retry_period
            await self.clock.sleep(period + self.rng.random() * JITTER_FACTOR * period)

    async def _renew(self) -> None:
        try:
            while True:
                if not await self._renew_round():
                    log.info(
                        "failed to renew lease %s within %gs: leadership lost",
                        self.lock.describe(),
                        self.config.renew_deadline,
                    )
                    return
                await self.clock.sleep(self.config.retry_period)
        except asyncio.CancelledError:
            if self.config.release_on_cancel:
                await self._release()
            raise

    async def _renew_round(self) -> bool:
        """Try every ``retry_period`` until a renewal succeeds, giving up ``renew_deadline`` after
        the round began (an attempt still in flight then is abandoned)."""
        deadline = self.clock.monotonic() + self.config.renew_deadline
        while True:
            remaining = deadline - self.clock.monotonic()
            succeeded = remaining > 0 and await self._attempt(remaining)
            self._maybe_report_transition()
            if succeeded:
                return True
            if deadline - self.clock.monotonic() <= self.config.retry_period:
                return False
            await self.clock.sleep(self.config.retry_period)

    async def _attempt(self, limit: float) -> bool:
        """One ``tryAcquireOrRenew``, abandoned after ``limit`` seconds; any failure is False."""
        try:
            return await self._within(self._try_acquire_or_renew(), limit)
        except _DeadlineExceeded:
            log.warning("lease %s: no answer within %gs", self.lock.describe(), limit)
            return False
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("lease %s: %s", self.lock.describe(), exc)
            return False

    async def _within(self, work: Awaitable[_T], limit: float) -> _T:
        """``work``'s result, or ``_DeadlineExceeded`` once ``limit`` seconds pass on the clock."""
        task = asyncio.ensure_future(work)
        timer = asyncio.ensure_future(self.clock.sleep(limit))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            raise _DeadlineExceeded
        return task.result()

    # -- one attempt (client-go's tryAcquireOrRenew)

    def _new_record(self, now: datetime) -> LeaderElectionRecord:
        return LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )

    def _observe(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.monotonic()

    def _lease_valid(self, now: float) -> bool:
        """Whether the observed record, counted from when it was observed, still runs at ``now``."""
        return self.observed_time + self.observed_record.lease_duration_seconds > now

    async def _try_acquire_or_renew(self) -> bool:
        started = self.clock.monotonic()
        record = self._new_record(self.clock.wall())

        # 1. A leader first writes over the object it wrote last; any failure falls back to a read.
        if self.is_leader() and self._lease_valid(started):
            observed = self.observed_record
            renewed = replace(
                record, acquire_time=observed.acquire_time, leader_transitions=observed.leader_transitions
            )
            try:
                await self.lock.update(renewed)
            except Exception as exc:
                log.debug("lease %s: optimistic renewal failed (%s), reading it", self.lock.describe(), exc)
            else:
                self._observe(renewed)
                self.confirmed_at = started
                return True

        # 2. Read the record, or create it.
        current = await self.lock.get()
        if current is None:
            await self.lock.create(record)
            self._observe(record)
            self.confirmed_at = started
            return True

        # 3. A changed record restarts the expiry count; a held one that has not expired is left alone.
        if current != self.observed_record:
            self._observe(current)
        if current.holder_identity and self._lease_valid(started) and not self.is_leader():
            log.debug(
                "lease %s is held by %s and has not expired", self.lock.describe(), current.holder_identity
            )
            return False

        # 4. Renew (keeping acquire time and transitions) or take over (one more transition).
        if self.is_leader():
            record = replace(
                record, acquire_time=current.acquire_time, leader_transitions=current.leader_transitions
            )
        else:
            record = replace(record, leader_transitions=current.leader_transitions + 1)
        await self.lock.update(record)
        self._observe(record)
        self.confirmed_at = started
        return True

    async def _release(self) -> bool:
        """Give the Lease up (holder cleared, duration 1s, transitions kept), retrying on Conflict,
        for at most ``renew_deadline``."""
        try:
            return await self._within(self._try_release(), self.config.renew_deadline)
        except _DeadlineExceeded:
            log.warning("lease %s: release got no answer in time", self.lock.describe())
            return False
        except Exception as exc:
            log.warning("lease %s: release failed: %s", self.lock.describe(), exc)
            return False
        finally:
            self._maybe_report_transition()

    async def _try_release(self) -> bool:
        while True:
            current = await self.lock.get()
            if current is None:
                log.info("lease %s not found, nothing to release", self.lock.describe())
                return False
            if not self.is_leader():
                return True
            now = self.clock.wall()
            released = LeaderElectionRecord(
                lease_duration_seconds=1,
                acquire_time=now,
                renew_time=now,
                leader_transitions=current.leader_transitions,
            )
            try:
                await self.lock.update(released)
            except Conflict:
                log.debug("lease %s: conflict while releasing, retrying", self.lock.describe())
                continue
            self._observe(released)
            return True

    def _maybe_report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        self.config.callbacks.on_new_leader(holder)
