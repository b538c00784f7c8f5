"""``kubesched run``: both schedulers against a real cluster.

The same scheduler objects as ``simulate`` and ``serve``, over a different cluster-state source and
different ports:

    kubeconfig → ApiClient (rate-limited) → discovery → MirrorStore, filled by one reflector per
    kind (list, then watch) → InformerFactory → Scheduler + BatchScheduler (one scheduler cache)
    → RemotePorts (Binding, status patches, Eviction API, events) → RealTimeDriver

Pods are taken by ``spec.schedulerName``: a profile of the KubeSchedulerConfiguration
(``default-scheduler`` unless the configuration names others, so that kubesched can run beside the
cluster's own scheduler under a profile of its own) or the batch scheduler's ``volcano``.

Several replicas elect a leader on a ``coordination.k8s.io/v1`` Lease
(:mod:`kubesched.runtime.leader_election`): scheduling starts only in
:meth:`Runner.on_started_leading` and stops in :meth:`Runner.on_stopped_leading` (called directly
when leader election is off). A replica that loses its Lease stops scheduling at once and exits
with code 1, as kube-scheduler does. ``/metrics``, ``/healthz``, ``/livez`` and ``/readyz`` are
served over HTTPS on ``--bind-address``/``--secure-port`` from the start (``/readyz`` fails until
the first listing is complete), with authentication and authorization delegated to the API server
(:mod:`kubesched.remote.delegated_auth`, :mod:`kubesched.remote.serving`);
:attr:`Runner.health_checks` names their checks.

Binding cycles run on binding workers, so the next pods are scheduled while binds are on their way
(upstream: a goroutine per binding cycle; the client's rate limit bounds them as upstream's).

Stopping (SIGTERM) goes in the order that loses nothing: no new pod is taken (the driver stops
after its current step and the binds in flight finish), the Lease is released so a standby takes
over at once, queued events are sent, then the reflectors stop and the client closes.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.scheduler import BatchScheduler
from kubesched.errors import InputError, KubeschedError
from kubesched.framework.config import SchedulerConfig
from kubesched.framework.registry import Registry
from kubesched.remote.client import ApiClient
from kubesched.remote.config import load_client_config_async
from kubesched.remote.delegated_auth import AuthOptions, DelegatedAuth
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery
from kubesched.remote.lease import Election, RemoteLeaseAPI
from kubesched.remote.loop import LoopThread
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.ports import ApiFeatures, RemotePorts
from kubesched.remote.reflector import ReflectorSet
from kubesched.remote.serving import ServingOptions, ssl_context
from kubesched.runtime.batch_sessions import LoggedBatchSessions
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import RealTimeDriver
from kubesched.runtime.health_server import HealthServer, start_health_server
from kubesched.runtime.heap import HeapTrimmer
from kubesched.runtime.leader_election import LeaderCallbacks, LeaderElectionConfig
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import StoreError
from kubesched.store.informers import InformerFactory

log = logging.getLogger(__name__)

#: The profile of kube-scheduler's default configuration.
DEFAULT_PROFILE = "default-scheduler"
#: client-go's leader election ``JitterFactor``.
JITTER_FACTOR = 1.2
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def default_identity() -> str:
    """Upstream's leader-election identity: the host name and a fresh UUID."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class RunOptions:
    """What ``kubesched run`` takes (kube-scheduler's flags and defaults where it has them)."""

    kubeconfig: str | None = None
    context: str | None = None
    #: The KubeSchedulerConfiguration (the default profile when None).
    config: SchedulerConfig | None = None
    #: The Volcano scheduler conf of the batch scheduler (Volcano's default when None).
    batch_conf: BatchConf | None = None
    #: The ``spec.schedulerName``s the batch scheduler takes (Volcano's ``--scheduler-name``).
    batch_scheduler_names: tuple[str, ...] = (BATCH_SCHEDULER_NAME,)
    #: The framework plugins (the in-tree ones when None).
    registry: Registry | None = None
    #: The client's rate limit (``--kube-api-qps``, ``--kube-api-burst``).
    qps: float = 50.0
    burst: int = 100
    leader_elect: bool = True
    lease_name: str = "kubesched"
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: Where /healthz, /readyz (and /metrics) are served, over HTTPS; port 0 serves nothing.
    bind_address: str = "0.0.0.0"
    port: int = 10259
    #: The endpoint's certificate (self-signed in memory by default).
    serving: ServingOptions = field(default_factory=ServingOptions)
    #: Who may read the endpoint (delegated to the API server).
    auth: AuthOptions = field(default_factory=AuthOptions)
    #: This replica's name in the Lease and in events' reportingInstance.
    identity: str = field(default_factory=default_identity)
    #: Seed of the random tie-breaks (None: a fresh one each run).
    seed: int | None = None
    #: How long the first listing of every kind may take.
    sync_timeout: float = 60.0
    #: Seconds between batch sessions (Volcano's --schedule-period).
    schedule_period: float | None = None
    #: The driver's longest idle wait.
    max_idle: float = 0.1
    #: Binds in flight at once (framework binding cycles and a batch session's binds).
    binding_workers: int = 16

    def validate(self) -> None:
        """Refuse values kube-scheduler refuses, naming the flag (:class:`InputError`)."""
        profiles = (
            {p.scheduler_name for p in self.config.profiles} if self.config is not None else {DEFAULT_PROFILE}
        )
        for name in self.batch_scheduler_names:
            if not _DNS_SUBDOMAIN.fullmatch(name) or len(name) > 253:
                raise InputError(f"not a valid scheduler name: {name!r}", field="--batch-scheduler-name")
            if name in profiles:
                raise InputError(
                    f"{name!r} is also a profile of the scheduler configuration (one scheduler per pod)",
                    field="--batch-scheduler-name",
                )
        if not self.qps > 0 or not math.isfinite(self.qps):
            raise InputError(f"must be a positive number, got {self.qps!r}", field="--kube-api-qps")
        if self.burst < 1:
            raise InputError(f"must be at least 1, got {self.burst}", field="--kube-api-burst")
        if not 0 <= self.port <= 65535:
            raise InputError(f"must be within 0..65535, got {self.port}", field="--secure-port")
        try:
            ipaddress.ip_address(self.bind_address)
        except ValueError:
            raise InputError(f"not an IP address: {self.bind_address!r}", field="--bind-address") from None
        self.serving.validate()
        self.auth.validate()
        if not self.leader_elect:
            return
        for flag, value in (
            ("--leader-elect-lease-duration", self.lease_duration),
            ("--leader-elect-renew-deadline", self.renew_deadline),
            ("--leader-elect-retry-period", self.retry_period),
        ):
            if not value > 0:
                raise InputError(f"must be a positive duration, got {value:g}s", field=flag)
        # client-go's checks: the lease outlives the renew deadline, which outlives a jittered retry.
        if self.lease_duration <= self.renew_deadline:
            raise InputError(
                f"the lease duration ({self.lease_duration:g}s) must be greater than the renew deadline "
                f"({self.renew_deadline:g}s)",
                field="--leader-elect-lease-duration",
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise InputError(
                f"the renew deadline ({self.renew_deadline:g}s) must be greater than {JITTER_FACTOR:g} times "
                f"the retry period ({self.retry_period:g}s)",
                field="--leader-elect-renew-deadline",
            )
        if not _DNS_SUBDOMAIN.fullmatch(self.lease_name) or len(self.lease_name) > 253:
            raise InputError(
                f"not a valid Lease name: {self.lease_name!r}", field="--leader-elect-resource-name"
            )
        if not _DNS_LABEL.fullmatch(self.lease_namespace) or len(self.lease_namespace) > 63:
            raise InputError(
                f"not a valid namespace name: {self.lease_namespace!r}",
                field="--leader-elect-resource-namespace",
            )


class RunError(KubeschedError):
    """``kubesched run`` could not start (the cluster unreachable, its listing too slow)."""


class Runner:
    """Both schedulers over a real cluster; see the module docstring."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        #: Checks behind /healthz and /readyz: name → a callable that says whether all is well.
        self.health_checks: dict[str, Callable[[], bool]] = {}
        self.loop: LoopThread | None = None
        self.client: ApiClient | None = None
        self.events_client: ApiClient | None = None
        self.discovery: Discovery | None = None
        self.mirror: MirrorStore | None = None
        self.reflectors: ReflectorSet | None = None
        self.informers: InformerFactory | None = None
        self.ports: RemotePorts | None = None
        self.cluster: Cluster | None = None
        self.scheduler: Scheduler | None = None
        self.batch: BatchScheduler | None = None
        self.driver: RealTimeDriver | None = None
        self.metrics = SchedulerMetrics()
        self.health_server: HealthServer | None = None
        #: The endpoint's authentication and authorization (once it serves).
        self.auth: DelegatedAuth | None = None
        self.election: Election | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._leading = False
        self._stopped = False

    # -- starting ---------------------------------------------------------------------------------
    def start(self, stop: threading.Event | None = None) -> bool:
        """Connect, follow the cluster until every kind is listed, and build the schedulers (which
        start scheduling in :meth:`on_started_leading`). Raises :class:`RunError` (or the client
        configuration's ``InputError``) when the cluster cannot be reached or listed in time.
        False (and nothing left running) when ``stop`` is set before the listing is complete."""
        opts = self.options
        try:
            self._serve_health()
            self.loop = loop = LoopThread()
            config = loop.run(load_client_config_async(opts.kubeconfig, opts.context))
            self.client = loop.run(ApiClient.connect(config, qps=opts.qps, burst=opts.burst))
            # Events have a client and a rate limit of their own (as upstream's event client), so a
            # burst of them never delays a binding.
            self.events_client = loop.run(ApiClient.connect(config, qps=opts.qps, burst=opts.burst))
            self.discovery = discovery = self._discover()
            self.mirror = MirrorStore()
            self.reflectors = ReflectorSet(self.client, discovery, self.mirror, FOLLOWED_KINDS)
            loop.run(self.reflectors.start())
            self.health_checks["informer-sync"] = self._synced
            if not self._wait_synced(stop):
                self.close()
                return False
            self._build()
        except BaseException:
            self.close()
            raise
        return True

    def _discover(self) -> Discovery:
        assert self.loop is not None and self.client is not None
        try:
            discovery = self.loop.run(Discovery.discover(self.client), self.options.sync_timeout)
        except (StoreError, TimeoutError) as exc:
            raise RunError(f"cannot read the API of the server at {self._server()}: {exc}") from exc
        if not discovery.has("Pod") or not discovery.has("Node"):
            raise RunError(f"the server at {self._server()} serves no Pods or Nodes: is it a Kubernetes API?")
        return discovery

    def _server(self) -> str:
        return self.client.base if self.client is not None else "?"

    def _synced(self) -> bool:
        return self.reflectors is not None and self.reflectors.has_synced()

    def _wait_synced(self, stop: threading.Event | None) -> bool:
        """Wait for the first listing of every kind; False when ``stop`` was set meanwhile."""
        assert self.loop is not None and self.reflectors is not None
        timeout = self.options.sync_timeout
        deadline = time.monotonic() + timeout
        synced = self.reflectors.synced
        while not synced.wait(0.1):
            if stop is not None and stop.is_set():
                return False
            if time.monotonic() >= deadline:
                waiting = []
                for kind, reflector in self.reflectors.reflectors.items():
                    if not reflector.synced.is_set():
                        error = reflector.last_error
                        waiting.append(f"{kind} ({error})" if error is not None else kind)
                raise RunError(
                    f"the cluster at {self._server()} was not listed within {timeout:g}s; "
                    f"still listing: {', '.join(waiting)}"
                )
        return True

    def _build(self) -> None:
        """The schedulers, as in ``serve``, sharing one scheduler cache."""
        opts = self.options
        assert self.loop is not None and self.client is not None and self.mirror is not None
        assert self.discovery is not None
        self.ports = RemotePorts(
            self.client,
            self.loop,
            features=features(self.discovery),
            current=self.mirror.get,
            events_client=self.events_client,
            identity=socket.gethostname(),
        )
        self.cluster = Cluster(
            self.mirror,
            ClusterOptions(
                config=opts.config,
                registry=opts.registry,
                now=time.time,
                seed=opts.seed,
                binding_workers=opts.binding_workers,
                batch=True,
                batch_conf=opts.batch_conf,
                batch_scheduler_names=opts.batch_scheduler_names,
                schedule_period=opts.schedule_period,
                batch_bind_workers=opts.binding_workers,
            ),
            ports=self.ports.ports(),
        )
        self.informers = informers = self.cluster.informers
        self.scheduler = self.cluster.scheduler
        self.batch = self.cluster.start_batch()
        self.metrics.attach(self.scheduler)
        self.metrics.attach_batch(self.batch)
        self.driver = RealTimeDriver(
            informers,
            self.scheduler,
            self.mirror,
            batch=LoggedBatchSessions(self.batch),
            max_idle=opts.max_idle,
        )
        self.health_checks["scheduler"] = self._scheduler_healthy

    def _serve_health(self) -> None:
        """/metrics and the health endpoints, from before the first listing (liveness holds while
        the cluster is listed; readiness waits for it)."""
        opts = self.options
        if opts.port == 0 or self.health_server is not None:
            return
        context = ssl_context(opts.serving)
        auth = DelegatedAuth.from_options(opts.auth)
        try:
            self.health_server = start_health_server(
                opts.bind_address,
                opts.port,
                self.metrics,
                self.health_checks,
                ready_checks={"shutdown": lambda: not self._stopping.is_set()},
                ssl_context=context,
                middlewares=(auth.middleware,),
                on_cleanup=(auth.close,),
            )
        except OSError as exc:
            raise RunError(
                f"cannot serve health and metrics on {opts.bind_address}:{opts.port}: {exc}"
            ) from exc
        self.auth = auth
        log.info(
            "serving /metrics, /healthz, /livez and /readyz on https://%s:%d",
            opts.bind_address,
            self.health_server.port,
        )

    def _scheduler_healthy(self) -> bool:
        """Healthy unless scheduling stopped on an error while leading."""
        driver = self.driver
        return driver is not None and not (self._leading and driver.stopped)

    # -- leading ----------------------------------------------------------------------------------
    def on_started_leading(self) -> None:
        """Start scheduling (leader election's OnStartedLeading)."""
        with self._lock:
            if self._stopped or self._leading or self.driver is None:
                return
            self._leading = True
            log.info("scheduling pods of %s", ", ".join(self._scheduler_names()))
            self.driver.start()

    def on_stopped_leading(self) -> None:
        """Stop taking pods (leader election's OnStoppedLeading, and the first step of stopping):
        the driver finishes the step under way, a bind included. A runner that stopped leading
        does not lead again (a replica that lost its lease exits, as upstream's)."""
        with self._lock:
            self._stopped = True
            if not self._leading or self.driver is None:
                return
            self._leading = False
            driver = self.driver
        try:
            driver.stop(timeout=30.0)
        except TimeoutError:
            log.error("the scheduling loop did not stop within 30s")
        except Exception:
            log.exception("the scheduling loop had stopped on an error")

    @property
    def leading(self) -> bool:
        return self._leading

    def _scheduler_names(self) -> list[str]:
        names = list(self.scheduler.profiles) if self.scheduler is not None else []
        return [*names, *(f"{name} (batch)" for name in self.options.batch_scheduler_names)]

    # -- stopping ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop scheduling (the binds in flight finish), release the Lease, send the queued events,
        stop following the cluster, close the client."""
        self._stopping.set()
        self.on_stopped_leading()
        if self.cluster is not None:
            self.cluster.close()
        if self.election is not None:
            self.election.stop()
        if self.ports is not None:
            self.ports.close(timeout=5.0)
        self.close()

    def close(self) -> None:
        loop = self.loop
        if loop is None:
            return
        try:
            if self.reflectors is not None:
                loop.run(self.reflectors.stop(), 10.0)
            for client in (self.client, self.events_client):
                if client is not None:
                    loop.run(client.close(), 10.0)
        except Exception:
            log.exception("closing the connection to the cluster")
        finally:
            loop.stop()
            self.loop = None
            if self.health_server is not None:
                self.health_server.stop()
                self.health_server = None

    # -- one call for the command line ------------------------------------------------------------
    def run(self, stop: threading.Event) -> int:
        """Start; schedule (as the leader, when electing one) until ``stop`` is set or scheduling
        fails; stop. Returns the exit code: 0 when stopped, 1 when scheduling failed."""
        if not self.start(stop):
            return 0
        code = 0
        try:
            if self.options.leader_elect:
                self.elect()
            else:
                self.on_started_leading()
            # Free heap memory goes back to the system now and then: resident memory follows what is held.
            heap = HeapTrimmer()
            while not stop.wait(0.2):
                heap.maybe_trim()
                if self._leading and self.driver is not None and self.driver.stopped:
                    log.error("the scheduling loop stopped")
                    code = 1
                    break
                if self.election is not None and self.election.done:
                    # Lost the Lease (or could not renew it in time): scheduling has stopped; a
                    # fresh process campaigns again, as kube-scheduler's restart does.
                    log.error("leader election lost")
                    code = 1
                    break
        finally:
            self.stop()
        return code

    def elect(self) -> None:
        """Start leader election: it calls :meth:`on_started_leading` once this replica holds the
        Lease ``options.lease_namespace/options.lease_name`` and :meth:`on_stopped_leading` when it
        loses it."""
        opts = self.options
        assert self.loop is not None and self.client is not None
        config = LeaderElectionConfig(
            opts.identity,
            opts.lease_name,
            opts.lease_namespace,
            opts.lease_duration,
            opts.renew_deadline,
            opts.retry_period,
            release_on_cancel=True,
            callbacks=LeaderCallbacks(
                on_started_leading=self.on_started_leading,
                on_stopped_leading=self.on_stopped_leading,
                on_new_leader=self._on_new_leader,
                on_leader_event=self._on_leader_event,
            ),
        )
        config.validate()
        self.election = election = Election(self.loop, RemoteLeaseAPI(self.client), config)
        if self.ports is not None:
            # What a lost Lease leaves in flight (a bind held up on a slow connection) is not sent:
            # a standby may already have placed those pods.
            self.ports.fence = election.holds_lease
        self.health_checks["leaderElection"] = self.election.healthy
        log.info(
            "campaigning for the Lease %s/%s as %s", opts.lease_namespace, opts.lease_name, opts.identity
        )
        self.election.start()

    def _on_new_leader(self, identity: str) -> None:
        if identity and identity != self.options.identity:
            log.info("the leader is %s", identity)

    def _on_leader_event(self, lease: Mapping[str, Any] | None, message: str) -> None:
        """client-go's lock records a ``LeaderElection`` event about the Lease."""
        if lease is None or self.ports is None:
            return
        regarding = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", **lease}
        self.ports.record(regarding, "Normal", "LeaderElection", "LeaderElection", message, "kubesched")


def features(discovery: Discovery) -> ApiFeatures:
    """What the ports may use on this server."""
    eviction = "policy/v1" if discovery.serves("policy/v1") else "policy/v1beta1"
    events_v1 = discovery.serves("events.k8s.io/v1")
    return ApiFeatures(
        eviction=eviction,
        events_v1=events_v1,
        queues=discovery.has("Queue"),
        workload_pod_groups=discovery.has(POD_GROUP_STORE_KIND),
    )
