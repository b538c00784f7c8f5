"""A served cluster (schedulers off) in the test process, and a loop thread with a client on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.conftest import Cluster, pod, started_clusters

from kubesched.remote.client import ApiClient
from kubesched.remote.config import ClientConfig, load_client_config
from kubesched.remote.loop import LoopThread
from kubesched.remote.run import Runner, RunOptions

__all__ = ["Cluster", "pod"]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Any]:
    yield from started_clusters(tmp_path, schedulers=False)


def started_runners(**defaults: Any) -> Iterator[Callable[..., Runner]]:
    """Yields ``start(target, **RunOptions)``: a started Runner for ``target`` (a kubeconfig path,
    or anything with a ``kubeconfig``), without leader election unless asked, seed 0, then
    ``defaults``; leading at once when it does not elect. Stops them all afterwards."""
    runners: list[Runner] = []

    def start(target: Any, **options: Any) -> Runner:
        kubeconfig = target if isinstance(target, (str, Path)) else target.kubeconfig
        for key, value in {"leader_elect": False, "seed": 0, "sync_timeout": 30.0, **defaults}.items():
            options.setdefault(key, value)
        runner = Runner(RunOptions(kubeconfig=str(kubeconfig), **options))
        runner.start()
        runners.append(runner)
        if not runner.options.leader_elect:
            runner.on_started_leading()
        return runner

    yield start
    for runner in runners:
        runner.stop()


@pytest.fixture
def cluster(make_cluster: Any) -> Cluster:
    c: Cluster = make_cluster(nodes=2)
    return c


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.stop()


@pytest.fixture
def connect(loop_thread: LoopThread) -> Iterator[Any]:
    """``connect(cluster_or_config, **client_options)`` → an ApiClient on the loop thread."""
    clients: list[ApiClient] = []

    def make(target: Cluster | ClientConfig, **options: Any) -> ApiClient:
        config = target if isinstance(target, ClientConfig) else load_client_config(str(target.kubeconfig))
        client = loop_thread.run(ApiClient.connect(config, **options))
        clients.append(client)
        return client

    yield make
    for client in clients:
        loop_thread.run(client.close(), timeout=10)


class Proxy:
    """A TCP proxy in front of a served cluster (TLS passes through untouched): it can cut every
    connection, refuse new ones for a while, and delay what it forwards."""

    def __init__(self, target_port: int, delay: float = 0.0) -> None:
        self.target_port = target_port
        self.delay = delay
        self.accepting = True
        self.port = 0
        self.connections = 0
        self._loop = LoopThread("test-proxy")
        self._open: set[Any] = set()
        self._server: Any = None
        self._loop.run(self._start())

    async def _start(self) -> None:
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: Any, writer: Any) -> None:
        import asyncio

        if not self.accepting:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        pair = (writer, up_writer)
        self._open.add(pair)

        async def pipe(src: Any, dst: Any) -> None:
            try:
                while chunk := await src.read(65536):
                    if self.delay:
                        await asyncio.sleep(self.delay)
                    dst.write(chunk)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._open.discard(pair)

    def cut(self, refuse: bool = True) -> None:
        """Drop every open connection (and with ``refuse``, refuse new ones until :meth:`resume`)."""

        async def cut() -> None:
            self.accepting = not refuse
            for down, up in list(self._open):
                down.transport.abort()
                up.transport.abort()

        self._loop.run(cut())

    def resume(self) -> None:
        self.accepting = True

    def stop(self) -> None:
        self.cut()
        self._loop.stop()

    def config(self, cluster: Cluster) -> ClientConfig:
        config = load_client_config(str(cluster.kubeconfig))
        config.server = f"https://127.0.0.1:{self.port}"
        return config


@pytest.fixture
def make_proxy() -> Iterator[Any]:
    proxies: list[Proxy] = []

    def make(cluster: Cluster, delay: float = 0.0) -> Proxy:
        proxy = Proxy(cluster.port, delay)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()
