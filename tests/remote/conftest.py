"""A served cluster (schedulers off) in the test process, and a loop thread with a client on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.conftest import Cluster, pod

from kubesched.remote.client import ApiClient
from kubesched.remote.config import ClientConfig, load_client_config
from kubesched.remote.loop import LoopThread

__all__ = ["Cluster", "pod"]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Any]:
    started: list[Cluster] = []

    def make(**kwargs: Any) -> Cluster:
        from kubesched.apiserver.server import ServeOptions

        kwargs.setdefault("data_dir", tmp_path / "data")
        kwargs.setdefault("port", 0)
        kwargs.setdefault("schedulers", False)
        cluster = Cluster(ServeOptions(**kwargs)).start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()


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
