"""Leader election over a Lease, on virtual time.

Every test runs on an event loop whose clock jumps to the next timer whenever nothing is ready, so
durations of seconds take no time and every interleaving is the same on each run. Table cases carry
client-go's ``leaderelection_test.go`` names where they mirror its tables."""

from __future__ import annotations

import asyncio
import random
import selectors
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesched.errors import ConfigError
from kubesched.runtime.leader_election import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    format_micro_time,
    parse_micro_time,
)
from kubesched.store.base import AlreadyExists, Conflict, NotFound

EPOCH = datetime(2030, 1, 1, tzinfo=UTC)
#: Each API call takes this long (virtual time), as a real one takes some.
LATENCY = 0.001


# --- virtual time -------------------------------------------------------------------------------


class _VirtualSelector(selectors.SelectSelector):
    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self.loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if events:
            return events
        if timeout is None:
            raise RuntimeError("every task waits and no timer is due: the test would hang")
        self.loop.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer instead of waiting for it."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_VirtualSelector(self))

    def time(self) -> float:
        return self.now


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


class VirtualClock:
    """Monotonic time is the loop's; the wall clock starts at EPOCH + ``skew`` seconds."""

    def __init__(self, skew: float = 0.0) -> None:
        self.skew = skew

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def wall(self) -> datetime:
        return EPOCH + timedelta(seconds=self.monotonic() + self.skew)

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


def now() -> float:
    return asyncio.get_running_loop().time()


# --- an in-memory Lease API ---------------------------------------------------------------------


class LeaseServer:
    """Leases with resourceVersions; a stale update gets Conflict, as from kube-apiserver."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0

    def key(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        return obj["metadata"]["namespace"], obj["metadata"]["name"]

    def stored(self, namespace: str = "kube-system", name: str = "kubesched") -> dict[str, Any]:
        return self.leases[(namespace, name)]

    def record(self, namespace: str = "kube-system", name: str = "kubesched") -> LeaderElectionRecord:
        return LeaderElectionRecord.from_spec(self.stored(namespace, name).get("spec"))

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}
        self.leases[self.key(obj)] = stored
        return stored

    def seed(self, spec: Mapping[str, Any] | None, namespace: str = "foo", name: str = "bar") -> None:
        obj: dict[str, Any] = {"metadata": {"namespace": namespace, "name": name}}
        if spec is not None:
            obj["spec"] = dict(spec)
        self.put(obj)


class FakeLeaseAPI:
    """One client's view of a :class:`LeaseServer`: records every call; ``before`` may raise (a
    failing call), wait (a hanging one) or act (cancel the elector) before the call is served."""

    def __init__(self, server: LeaseServer) -> None:
        self.server = server
        self.ops: list[str] = []
        self.before: Callable[[str], Awaitable[None]] | None = None

    async def _enter(self, verb: str) -> None:
        self.ops.append(verb)
        await asyncio.sleep(LATENCY)
        if self.before is not None:
            await self.before(verb)

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self._enter("get")
        found = self.server.leases.get((namespace, name))
        return dict(found) if found is not None else None

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        await self._enter("create")
        if self.server.key(obj) in self.server.leases:
            raise AlreadyExists("leases already exists")
        return self.server.put(obj)

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        await self._enter("update")
        current = self.server.leases.get(self.server.key(obj))
        if current is None:
            raise NotFound("leases not found")
        if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict("the object has been modified; please apply your changes to the latest version")
        return self.server.put(obj)


def fail_with(exc: Exception, verbs: set[str] | None = None) -> Callable[[str], Awaitable[None]]:
    async def before(verb: str) -> None:
        if verbs is None or verb in verbs:
            raise exc

    return before


async def hang(verb: str) -> None:
    await asyncio.Event().wait()


class Candidate:
    """An elector with its own API view, a log of its callbacks and the task running it."""

    def __init__(
        self,
        server: LeaseServer,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = False,
        skew: float = 0.0,
        namespace: str = "kube-system",
        name: str = "kubesched",
    ) -> None:
        self.api = FakeLeaseAPI(server)
        self.events: list[tuple[float, str]] = []
        self.leaders: list[str] = []
        callbacks = LeaderCallbacks(
            on_started_leading=lambda: self.events.append((now(), "started")),
            on_stopped_leading=lambda: self.events.append((now(), "stopped")),
            on_new_leader=self.leaders.append,
            on_leader_event=self._leader_event,
        )
        config = LeaderElectionConfig(
            identity=identity,
            lock_name=name,
            lock_namespace=namespace,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            release_on_cancel=release_on_cancel,
            callbacks=callbacks,
        )
        self.elector = LeaderElector(config, self.api, clock=VirtualClock(skew), rng=random.Random(identity))
        self.task: asyncio.Task[None] | None = None

    def _leader_event(self, lease: Mapping[str, Any] | None, message: str) -> None:
        assert lease is not None and lease["kind"] == "Lease"
        self.events.append((now(), message))

    def start(self) -> Candidate:
        self.task = asyncio.get_running_loop().create_task(self.elector.run())
        return self

    async def kill(self) -> None:
        """Stop the loop where it stands (a crashed process: nothing more is written)."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    def time_of(self, what: str) -> float | None:
        return next((t for t, e in self.events if e == what), None)


async def until(predicate: Callable[[], bool], limit: float = 120.0) -> float:
    """Let virtual time pass until ``predicate`` holds; the virtual time then."""
    deadline = now() + limit
    while not predicate():
        assert now() < deadline, "condition not reached"
        await asyncio.sleep(0.01)
    return now()


# --- client-go's tryAcquireOrRenew table --------------------------------------------------------

PAST = -1000 * 3600.0
FUTURE = 1000 * 3600.0

TRY_ACQUIRE_OR_RENEW = [
    # name, stored spec (None: no Lease), observed holder, observed time, retry after,
    # expect success, transition, out holder, api calls
    ("acquire from no object", None, "", None, 0, True, False, "baz", ["get", "create"]),
    ("acquire from object without annotations", {}, "", None, 0, True, True, "baz", ["get", "update"]),
    (
        "acquire from led object with the lease duration seconds",
        {"holderIdentity": "bing", "leaseDurationSeconds": 3},
        "",
        None,
        3,
        True,
        True,
        "baz",
        ["get", "get", "update"],
    ),
    ("acquire from unled object", {"holderIdentity": ""}, "", None, 0, True, True, "baz", ["get", "update"]),
    (
        "acquire from led, unacked object",
        {"holderIdentity": "bing"},
        "bing",
        PAST,
        0,
        True,
        True,
        "baz",
        ["get", "update"],
    ),
    (
        "acquire from empty led, acked object",
        {"holderIdentity": ""},
        "",
        FUTURE,
        0,
        True,
        True,
        "baz",
        ["get", "update"],
    ),
    (
        "don't acquire from led, acked object",
        {"holderIdentity": "bing"},
        "",
        FUTURE,
        0,
        False,
        False,
        "bing",
        ["get"],
    ),
    (
        "renew already acquired object",
        {"holderIdentity": "baz"},
        "baz",
        FUTURE,
        0,
        True,
        False,
        "baz",
        ["get", "update"],
    ),
]


@pytest.mark.parametrize(
    ("stored", "observed_holder", "observed_at", "retry_after", "success", "transition", "holder", "calls"),
    [row[1:] for row in TRY_ACQUIRE_OR_RENEW],
    ids=[row[0] for row in TRY_ACQUIRE_OR_RENEW],
)
def test_try_acquire_or_renew(
    stored: dict[str, Any] | None,
    observed_holder: str,
    observed_at: float | None,
    retry_after: float,
    success: bool,
    transition: bool,
    holder: str,
    calls: list[str],
) -> None:
    async def scenario() -> None:
        server = LeaseServer()
        if stored is not None:
            server.seed(stored)
        candidate = Candidate(server, "baz", lease_duration=10, renew_deadline=5, namespace="foo", name="bar")
        elector = candidate.elector
        elector.observed_record = LeaderElectionRecord(holder_identity=observed_holder)
        if observed_at is not None:
            elector.observed_time = now() + observed_at
        result = await elector._try_acquire_or_renew()
        if result != success and retry_after:
            await asyncio.sleep(retry_after)
            result = await elector._try_acquire_or_renew()
        assert result == success
        assert elector.get_leader() == holder
        assert candidate.api.ops == calls
        assert elector.observed_record.leader_transitions == (1 if transition else 0)
        elector._maybe_report_transition()
        assert candidate.leaders == [holder]

    run(scenario())


def test_lease_spec_to_leader_election_record_round_trip() -> None:
    spec = {
        "holderIdentity": "foo",
        "leaseDurationSeconds": 10,
        "acquireTime": "2030-01-01T00:00:01.123456Z",
        "renewTime": "2030-01-01T00:00:02.000001Z",
        "leaseTransitions": 1,
    }
    record = LeaderElectionRecord.from_spec(spec)
    assert record.to_spec() == spec
    assert LeaderElectionRecord.from_spec(record.to_spec()) == record


def test_micro_time_format_is_the_api_servers() -> None:
    stamp = datetime(2030, 5, 6, 7, 8, 9, 12, tzinfo=UTC)
    assert format_micro_time(stamp) == "2030-05-06T07:08:09.000012Z"
    assert parse_micro_time("2030-05-06T07:08:09.000012Z") == stamp
    assert parse_micro_time("2030-05-06T09:08:09+02:00") == stamp.replace(microsecond=0)
    assert parse_micro_time("yesterday") is None
    assert parse_micro_time(None) is None


def test_record_with_mistyped_fields_reads_as_zero_values() -> None:
    record = LeaderElectionRecord.from_spec(
        {"holderIdentity": 3, "leaseDurationSeconds": "15", "leaseTransitions": True, "renewTime": 7}
    )
    assert record == LeaderElectionRecord()


# --- release ------------------------------------------------------------------------------------


def test_release_lease_leases() -> None:
    """client-go: "release acquired lock from no object"."""

    async def scenario() -> None:
        server = LeaseServer()
        candidate = Candidate(server, "baz", lease_duration=10, renew_deadline=5, namespace="foo", name="bar")
        elector = candidate.elector
        assert await elector._try_acquire_or_renew()
        elector._maybe_report_transition()
        assert await elector._release()
        assert elector.get_leader() == ""
        assert elector.observed_record.leader_transitions == 0
        assert candidate.api.ops == ["get", "create", "get", "update"]
        assert candidate.leaders == ["baz", ""]
        spec = server.stored("foo", "bar")["spec"]
        assert spec["holderIdentity"] == ""
        assert spec["leaseDurationSeconds"] == 1

    run(scenario())


def test_release_method_calls_get() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        server.seed({"holderIdentity": "baz", "leaseDurationSeconds": 10})
        candidate = Candidate(server, "baz", lease_duration=10, renew_deadline=5, namespace="foo", name="bar")
        candidate.elector.observed_record = LeaderElectionRecord(holder_identity="baz")
        candidate.elector.observed_time = now()
        await candidate.elector._release()
        assert candidate.api.ops[0] == "get"

    run(scenario())


def test_release_retries_on_conflict() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        server.seed({"holderIdentity": "baz", "leaseDurationSeconds": 10, "leaseTransitions": 4})
        candidate = Candidate(server, "baz", lease_duration=10, renew_deadline=5, namespace="foo", name="bar")
        candidate.elector.observed_record = LeaderElectionRecord(holder_identity="baz")
        candidate.elector.observed_time = now()
        conflicted: list[bool] = []

        async def once(verb: str) -> None:
            if verb == "update" and not conflicted:
                conflicted.append(True)
                raise Conflict("the object has been modified")

        candidate.api.before = once
        assert await candidate.elector._release()
        assert conflicted
        assert candidate.api.ops == ["get", "update", "get", "update"]
        assert server.record("foo", "bar").holder_identity == ""
        assert server.record("foo", "bar").leader_transitions == 4

    run(scenario())


def test_release_on_cancellation_leases() -> None:
    """client-go: "release acquired lock on cancellation of update": the elector is cancelled while a
    renewal hangs; it abandons the renewal and releases the Lease before it returns."""

    async def scenario() -> None:
        server = LeaseServer()
        candidate = Candidate(
            server, "baz", lease_duration=15, renew_deadline=2, retry_period=1, release_on_cancel=True
        )
        candidate.start()
        await until(lambda: candidate.elector.leading)
        renewing = asyncio.Event()
        hung: list[bool] = []

        async def hang_once(verb: str) -> None:
            if verb == "update" and not hung:
                hung.append(True)
                renewing.set()
                await asyncio.Event().wait()

        candidate.api.before = hang_once
        await renewing.wait()
        await candidate.kill()
        record = server.record()
        assert record.holder_identity == ""
        assert record.lease_duration_seconds == 1
        assert [e for _, e in candidate.events] == [
            "baz became leader",
            "started",
            "stopped",
            "baz stopped leading",
        ]

    run(scenario())


# --- configuration ------------------------------------------------------------------------------


def test_leader_election_config_validation() -> None:
    LeaderElectionConfig(identity="baz", lease_duration=15, renew_deadline=2, retry_period=1).validate()
    with pytest.raises(ConfigError, match="must not be empty") as info:
        LeaderElectionConfig(identity="").validate()
    assert info.value.field == "leaderElection.identity"


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "field", "message"),
    [
        (10, 10, 2, "leaseDuration", "must be greater than renewDeadline"),
        (15, 2.4, 2, "renewDeadline", r"must be greater than retryPeriod\*JitterFactor"),
        (15, 10, 0, "retryPeriod", "must be greater than zero"),
        (15, -1, 2, "renewDeadline", "must be greater than zero"),
        (0.9, 0.5, 0.1, "leaseDuration", "must be at least 1s"),
    ],
)
def test_durations_are_checked_as_client_go_does(
    lease: float, renew: float, retry: float, field: str, message: str
) -> None:
    config = LeaderElectionConfig(
        identity="a", lease_duration=lease, renew_deadline=renew, retry_period=retry
    )
    with pytest.raises(ConfigError, match=message) as info:
        LeaderElector(config, FakeLeaseAPI(LeaseServer()))
    assert info.value.field == f"leaderElection.{field}"


# --- client-go's fast path ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conflict_on", "cancel_on", "expected"),
    [
        (None, 2, ["get", "create", "update", "update"]),
        (2, 4, ["get", "create", "update", "update", "get", "update", "update"]),
    ],
    ids=["Exercise fast path after lock acquired", "Fallback to slow path after fast path fails"],
)
def test_fast_path_leader_election(conflict_on: int | None, cancel_on: int, expected: list[str]) -> None:
    async def scenario() -> None:
        server = LeaseServer()
        candidate = Candidate(server, "baz", lease_duration=15, renew_deadline=2, retry_period=1)
        updates = 0

        async def before(verb: str) -> None:
            nonlocal updates
            if verb != "update":
                return
            updates += 1
            if updates == conflict_on:
                raise Conflict("fake conflict")
            if updates == cancel_on:
                assert candidate.task is not None
                candidate.task.cancel()

        candidate.api.before = before
        candidate.start()
        assert candidate.task is not None
        await asyncio.gather(candidate.task, return_exceptions=True)
        assert candidate.api.ops == expected
        assert server.record().holder_identity == "baz"

    run(scenario())


# --- two candidates on one Lease ----------------------------------------------------------------


def test_only_one_of_two_candidates_leads() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        b = Candidate(server, "b").start()
        await asyncio.sleep(120)
        leaders = [c for c in (a, b) if c.elector.leading]
        assert len(leaders) == 1
        follower = b if leaders[0] is a else a
        assert follower.events == []
        assert follower.leaders == [leaders[0].elector.identity]
        assert server.record().holder_identity == leaders[0].elector.identity
        assert server.record().leader_transitions == 0
        await a.kill()
        await b.kill()

    run(scenario())


def test_standby_takes_over_a_killed_leader_after_the_lease_duration() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        b = Candidate(server, "b").start()
        await asyncio.sleep(30)
        assert not b.elector.leading
        last_write = now()
        await a.kill()
        taken = await until(lambda: b.elector.leading)
        # b counts the lease from when it saw the last change: a full lease, at most one jittered
        # retry (plus the read that saw the change) later.
        assert last_write + 15 - 2 * 2.2 <= taken <= last_write + 15 + 2 * 2.2
        assert taken - last_write >= 15 - 2.2 - 2
        record = server.record()
        assert record.holder_identity == "b"
        assert record.leader_transitions == 1
        assert b.leaders == ["a", "b"]
        await b.kill()

    run(scenario())


def test_takeover_waits_a_full_observed_lease_whatever_the_clocks_say() -> None:
    """The standby's wall clock is a day ahead (the leader's renewTime looks long expired) and
    another's a day behind: neither takes over while the leader renews."""

    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        ahead = Candidate(server, "ahead", skew=86400).start()
        behind = Candidate(server, "behind", skew=-86400).start()
        await asyncio.sleep(300)
        assert a.elector.leading and not ahead.elector.leading and not behind.elector.leading
        assert server.record().holder_identity == "a"
        for c in (a, ahead, behind):
            await c.kill()

    run(scenario())


@pytest.mark.parametrize("failure", ["error", "conflict", "hang"])
def test_a_leader_that_cannot_renew_stops_within_the_renew_deadline(failure: str) -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        await asyncio.sleep(7)
        if failure == "hang":
            a.api.before = hang
        elif failure == "conflict":
            a.api.before = fail_with(Conflict("the object has been modified"), {"update"})
        else:
            a.api.before = fail_with(ConnectionError("connection refused"))
        failing_since = now()
        last_renewed = server.record().renew_time
        assert last_renewed is not None
        await until(lambda: not a.elector.leading)
        stopped = a.time_of("stopped")
        assert stopped is not None
        # The last good renewal was at most one retry period before the failures began; a round
        # gives up within renew_deadline of its start: stopped before anyone else may take over.
        last_good = (last_renewed - EPOCH).total_seconds()
        assert failing_since - 2 <= last_good <= failing_since
        assert stopped <= last_good + 2 + 10 + 0.1 < last_good + 15
        assert server.record().holder_identity == "a"
        await a.kill()

    run(scenario())


def test_lost_leadership_then_a_standby_leads_and_the_old_leader_never_writes_again() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        b = Candidate(server, "b").start()
        await asyncio.sleep(5)
        a.api.before = fail_with(ConnectionError("network unreachable"))
        stopped = await until(lambda: not a.elector.leading)
        taken = await until(lambda: b.elector.leading)
        assert stopped < taken
        assert a.task is not None and a.task.done()
        writes = len(a.api.ops)
        await asyncio.sleep(60)
        assert len(a.api.ops) == writes
        assert server.record().holder_identity == "b"
        await b.kill()

    run(scenario())


def test_release_lets_the_standby_take_over_at_once() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a", release_on_cancel=True).start()
        await until(lambda: a.elector.leading)
        b = Candidate(server, "b").start()
        await asyncio.sleep(9)
        released = now()
        await a.kill()
        assert server.record().holder_identity == ""
        taken = await until(lambda: b.elector.leading)
        # b's next try (one jittered retry period at most) succeeds: no wait for the 15s lease.
        assert taken - released <= 2 * (1 + 1.2)
        record = server.record()
        assert record.holder_identity == "b"
        assert record.leader_transitions == 1
        assert b.leaders[0] == "a" and b.leaders[-1] == "b"
        await b.kill()

    run(scenario())


def test_a_write_by_someone_else_costs_a_read_not_the_lease() -> None:
    """Another client bumps the Lease's resourceVersion (a label added): the leader's next
    optimistic renewal gets Conflict, it reads the Lease again and renews."""

    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        await asyncio.sleep(3)
        stored = server.stored()
        server.put({**stored, "metadata": {**stored["metadata"], "labels": {"touched": "yes"}}})
        a.api.ops.clear()
        await asyncio.sleep(4.5)
        assert a.api.ops[:3] == ["update", "get", "update"]
        assert a.elector.leading
        assert server.stored()["metadata"]["labels"] == {"touched": "yes"}
        await a.kill()

    run(scenario())


def test_a_lease_created_by_another_candidate_first_is_not_taken() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a")
        b = Candidate(server, "b")

        async def b_creates_first(verb: str) -> None:
            if verb == "create":
                b.api.before = None
                assert await b.elector._try_acquire_or_renew()

        a.api.before = b_creates_first
        assert not await a.elector._attempt(5)
        assert a.api.ops == ["get", "create"]
        assert not await a.elector._attempt(5)
        assert a.elector.get_leader() == "b"
        assert server.record().holder_identity == "b"

    run(scenario())


def test_on_stopped_leading_is_called_also_when_never_leading() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        await until(lambda: a.elector.leading)
        b = Candidate(server, "b").start()
        await asyncio.sleep(10)
        await b.kill()
        assert [e for _, e in b.events] == ["stopped"]
        assert [e for _, e in a.events] == ["a became leader", "started"]
        await a.kill()

    run(scenario())


def test_health_check_reports_a_leader_stuck_past_its_lease() -> None:
    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a")
        assert await a.elector._try_acquire_or_renew()
        assert a.elector.check(20) is None
        await asyncio.sleep(36)
        assert a.elector.check(20) == "failed election to renew leadership on lease kube-system/kubesched"

    run(scenario())


def test_a_leader_may_act_only_within_the_renew_deadline_of_its_last_write() -> None:
    """``holds_lease``: what a writer asks before it sends a decision. It holds while renewals
    succeed, stops holding once the last successful write began ``renew_deadline`` ago (before
    the elector itself gives up), and never holds for a standby or after leadership was lost."""

    async def scenario() -> None:
        server = LeaseServer()
        a = Candidate(server, "a").start()
        b = Candidate(server, "b")
        assert not a.elector.holds_lease()
        await until(lambda: a.elector.leading)
        b.start()
        await asyncio.sleep(30)
        assert a.elector.holds_lease() and not b.elector.holds_lease()
        a.api.before = fail_with(ConnectionError("network unreachable"))
        cut = now()
        lapsed = await until(lambda: not a.elector.holds_lease())
        # The last good write began at most a retry period (plus jitter) before the cut.
        assert lapsed <= cut + 10 + 0.1
        assert lapsed >= cut + 10 - 2 * 2.4 - 0.1
        taken = await until(lambda: b.elector.leading)
        assert lapsed < taken and not a.elector.holds_lease()
        assert b.elector.holds_lease()
        await a.kill()
        await b.kill()

    run(scenario())
