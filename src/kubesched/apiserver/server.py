"""``kubesched serve``: the API server, the schedulers and the simulated kubelets in one process."""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.apiserver import bootstrap
from kubesched.apiserver.app import ApiServer
from kubesched.apiserver.certs import ensure_identity, write_kubeconfig
from kubesched.apiserver.manifests import create_start_objects
from kubesched.apiserver.replay import Replayer
from kubesched.apiserver.running_configs import DEFAULT_CONFIG_TEXT, RunningConfigs
from kubesched.apiserver.schedulers import ServedSchedulers
from kubesched.apiserver.ui import UiCostCollector
from kubesched.batch.conf import BatchConf
from kubesched.batch.conf_loader import DEFAULT_BATCH_CONF_YAML
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.controllers.kubelet import simulated_node
from kubesched.controllers.manager import ControllerManager
from kubesched.errors import KubeschedError
from kubesched.framework.config import SchedulerConfig, default_config, with_feature_gates
from kubesched.framework.registry import Registry
from kubesched.plugins import default_registry
from kubesched.registry.admission import admit, apply_defaults
from kubesched.registry.core.servicealloc import DEFAULT_SERVICE_CIDR, DEFAULT_SERVICE_CIDR_NAME
from kubesched.registry.networking.servicecidr import default_service_cidr
from kubesched.runtime.heap import HeapTrimmer
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.store.base import AlreadyExists
from kubesched.store.memory import format_timestamp
from kubesched.store.sqlite import DEFAULT_HISTORY, CommitFailed, SqliteStore, StoreLocked

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ServeOptions:
    data_dir: Path
    address: str = "127.0.0.1"
    port: int = 6443
    nodes: int = 0
    node_cpu: str = "32"
    node_memory: str = "256Gi"
    node_pods: str = "110"
    zones: int = 3
    #: ``--service-cluster-ip-range``: the default ServiceCIDR's range.
    service_cidr: str = DEFAULT_SERVICE_CIDR
    #: Each simulated node's GPU cards (``nvidia.com/gpu``) and their model label.
    node_gpus: int = 0
    node_gpu_model: str = ""
    #: The simulated DRA driver publishing the GPU nodes' ResourceSlices; None: not run.
    dra_driver: DraDriverOptions | None = field(default_factory=DraDriverOptions)
    objects: Sequence[dict[str, Any]] = field(default_factory=list)
    config: SchedulerConfig | None = None
    batch_conf: BatchConf | None = None
    schedulers: bool = True
    bookmark_interval: float = 60.0
    tick: float = 0.05
    auto_create_namespaces: bool = True
    #: The framework plugins (in-tree ones when None).
    registry: Registry | None = None
    #: Changes kept for watches that start from a resourceVersion.
    history: int = DEFAULT_HISTORY
    #: ``--feature-gates``: the whole served cluster's (the API's kinds and fields, the controllers,
    #: the schedulers over their configuration's own), as one kube-apiserver process's gates.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: Write each attempt of the framework scheduler onto its pod (kube-scheduler-simulator's
    #: result annotations), for the web UI and the simulator's tools. Off by default: recording
    #: every node's verdicts and writing them costs more than the rest of a pod's path.
    scheduling_results: bool = False
    #: The text ``config`` and ``batch_conf`` were read from, shown and replaced through the API
    #: (``/kubesched/v1/config/…``); None: the defaults' text.
    config_text: str | None = None
    batch_conf_text: str | None = None
    #: Runs the web UI's replays (the simulator's, wired in by the CLI); None: no replay.
    replayer: Replayer | None = None


def seed_cluster(store: SqliteStore, options: ServeOptions) -> list[str]:
    """System namespaces, the default Volcano queue, simulated nodes and the given manifests; what
    already exists (a restart) is left as it is. Returns warnings."""
    warnings: list[str] = []
    wanted: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in SYSTEM_NAMESPACES
    ]
    existing = store.get("ServiceCIDR", None, DEFAULT_SERVICE_CIDR_NAME)
    if existing is not None and (existing.get("spec") or {}).get("cidrs", [None])[0] != options.service_cidr:
        warnings.append(
            f"--service-cluster-ip-range {options.service_cidr}: the ServiceCIDR "
            f"{DEFAULT_SERVICE_CIDR_NAME} keeps {existing['spec'].get('cidrs')}, made at the first start"
        )
    wanted.append(default_service_cidr(options.service_cidr, format_timestamp(time.time())))
    wanted.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "default"},
            "spec": {"weight": 1, "reclaimable": True},
        }
    )
    wanted += [
        simulated_node(
            i,
            cpu=options.node_cpu,
            memory=options.node_memory,
            pods=options.node_pods,
            zones=options.zones,
            gpus=options.node_gpus,
            gpu_model=options.node_gpu_model,
        )
        for i in range(options.nodes)
    ]
    for obj in wanted:
        obj = dict(obj)
        meta = obj.get("metadata") or {}
        apply_defaults(obj)
        try:
            admit(store, obj)
            store.create(obj)
        except AlreadyExists:
            continue
        except Exception as exc:
            warnings.append(f"{obj.get('kind')} {meta.get('name')}: {exc}")
    # The manifests given go through the API's create path, as kubectl apply sends them.
    warnings += create_start_objects(store, options.objects, options.auto_create_namespaces)
    return warnings


class StartupError(KubeschedError):
    """The server cannot start (its address is taken, its data dir is in use or cannot be made);
    said in one line, before anything is written."""


def listen(address: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything else happens."""
    where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    try:
        family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        return socket.create_server((address, port), family=family, backlog=1024)
    except socket.gaierror as exc:
        raise StartupError(f"--address {address}: cannot listen there: {exc.strerror}") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"--port {port}: {where} is already in use (another kubesched serve or another server "
                "listens there; --port 0 picks a free port)"
            ) from None
        raise StartupError(f"cannot listen on {where}: {exc.strerror or exc}") from None


class Served:
    """A running served cluster (for tests and the CLI)."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        # The address first: a server that cannot listen must not have made or changed anything.
        self._socket = listen(options.address, options.port)
        self.port = self._socket.getsockname()[1]
        try:
            self._previous_gates = DEFAULT_FEATURE_GATES.set_all(options.feature_gates)
        except BaseException:
            self._socket.close()
            raise
        try:
            self._open(options)
        except BaseException:
            DEFAULT_FEATURE_GATES.set_all(self._previous_gates)
            self._socket.close()
            raise

    def _open(self, options: ServeOptions) -> None:
        try:
            options.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StartupError(f"--data-dir {options.data_dir}: {exc.strerror or exc}") from None
        try:
            self.store = SqliteStore(
                options.data_dir / "cluster.db", now=_wall_clock(), history=options.history
            )
        except StoreLocked as exc:
            raise StartupError(f"--data-dir {options.data_dir}: {exc}") from None
        try:
            self._build(options)
        except BaseException:
            self.store.close()
            raise

    def _build(self, options: ServeOptions) -> None:
        self.warnings = seed_cluster(self.store, options)
        try:
            host = str(self._socket.getsockname()[0])
            bootstrap.reconcile(self.store, "127.0.0.1" if host in ("0.0.0.0", "::") else host, self.port)
        except Exception as exc:
            self.warnings.append(f"the kubernetes Service: {exc}")
        hosts = [options.address] if options.address not in ("0.0.0.0", "::") else []
        self.identity = ensure_identity(options.data_dir, hosts)
        self.api = ApiServer(
            self.store,
            self.identity.token,
            bookmark_interval=options.bookmark_interval,
            auto_create_namespaces=options.auto_create_namespaces,
        )
        self.api.replayer = options.replayer
        self.controllers = ControllerManager(self.store, dra_driver=options.dra_driver)
        self.schedulers = self._schedulers(options.config, options.batch_conf) if options.schedulers else None
        store = self.store
        self.api.ready_checks["sqlite"] = lambda: store.healthy
        if self.schedulers is not None:
            self._serve_metrics(self.schedulers.metrics)
            self.api.ready_checks["kubesched-schedulers"] = lambda: (
                self.schedulers is not None and self.schedulers.running
            )
            self.api.configs = RunningConfigs(
                options.config,
                options.config_text or DEFAULT_CONFIG_TEXT,
                options.batch_conf,
                options.batch_conf_text or DEFAULT_BATCH_CONF_YAML,
                options.registry or default_registry(),
                self._replace_schedulers,
            )
        self.kubeconfig = (options.data_dir / "kubeconfig").absolute()
        self._runner: web.AppRunner | None = None
        self._ticker: asyncio.Task[None] | None = None
        #: Free heap memory goes back to the system now and then: resident memory follows what is held.
        self._heap = HeapTrimmer()

    def _schedulers(self, config: SchedulerConfig | None, batch_conf: BatchConf | None) -> ServedSchedulers:
        gates = self.options.feature_gates
        if gates:
            # The served cluster's gates hold over the configuration's own, as one process's gates
            # (a gate may add default plugins: the configuration is read again with them).
            registry = self.options.registry or default_registry()
            config = with_feature_gates(config or default_config(registry), gates, registry)
        return ServedSchedulers(
            self.store,
            config,
            batch_conf,
            registry=self.options.registry,
            results=self.options.scheduling_results,
        )

    def _replace_schedulers(self, config: SchedulerConfig | None, batch_conf: BatchConf | None) -> None:
        """Stop the running schedulers and start ones with this configuration (off the event loop:
        the old ones' last step may be waiting on this API). They read the cluster afresh, so the
        pods the old ones had queued are scheduled by the new ones."""
        old = self.schedulers
        if old is not None and old.running:
            old.stop()
        new = self._schedulers(config, batch_conf)
        self.schedulers = new
        self._serve_metrics(new.metrics)
        new.start()

    def _serve_metrics(self, metrics: SchedulerMetrics) -> None:
        """Serve ``metrics`` at ``/metrics``, with the web UI's cost beside the schedulers'."""
        metrics.registry.register(UiCostCollector(self.api))
        self.api.metrics = metrics

    @property
    def url(self) -> str:
        host = self.options.address
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"https://{host}:{self.port}"

    async def start(self) -> None:
        self._runner = web.AppRunner(
            self.api.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.SockSite(self._runner, self._socket, ssl_context=self.identity.ssl_context())
        await site.start()
        write_kubeconfig(self.kubeconfig, self.url, self.identity)
        if self.schedulers is not None:
            self.schedulers.start()
        self._ticker = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        reported = False
        commit_failed = False
        while True:
            try:
                self.controllers.tick()
            except CommitFailed as exc:
                # Every tick would fail the same way until a restart: said once, without a traceback.
                if not commit_failed:
                    commit_failed = True
                    log.error("simulated kubelets and controllers: %s", exc)
            except Exception:
                log.exception("simulated kubelets and controllers")
            self._heap.maybe_trim()
            if self.schedulers is not None and not self.schedulers.running and not reported:
                reported = True
                try:
                    self.schedulers.stop()
                except Exception:
                    log.exception("the schedulers stopped; the API keeps serving")
            await asyncio.sleep(self.options.tick)

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self.schedulers is not None and self.schedulers.running:
            # Off the event loop: the scheduler's last step may be waiting for an HTTP extender
            # that is itself calling this API (a binding extender posting the Binding).
            try:
                await asyncio.to_thread(self.schedulers.stop)
            except Exception:
                # A step still running past the wait (an extender slower than that) or an error
                # that stopped the loop: reported, and the API and the store still shut down.
                log.exception("stopping the schedulers")
        if self._runner is not None:
            await self._runner.cleanup()
        self._socket.close()
        self.store.close()
        DEFAULT_FEATURE_GATES.set_all(self._previous_gates)


def _wall_clock() -> Any:
    return time.time


def serve(options: ServeOptions, ready: threading.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM."""

    async def main() -> None:
        served = Served(options)
        for warning in served.warnings:
            log.warning("%s", warning)
        await served.start()
        print(f"kubesched serving at {served.url}", flush=True)
        print(f"export KUBECONFIG={served.kubeconfig}", flush=True)
        print(f"web UI: {served.url}/ui/#code={served.api.login_codes.issue()} (a one-time link)", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if ready is not None:
            ready.set()
        await stop.wait()
        await served.stop()

    asyncio.run(main())
