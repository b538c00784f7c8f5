"""A served cluster on a free port, in a thread of the test process, torn down after each test."""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.apiserver.server import Served, ServeOptions


class Cluster:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.served: Served | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Cluster:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self.served = Served(self.options)
                loop.run_until_complete(self.served.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.served.stop())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert ready.wait(30), "the server did not start"
        if failure:
            raise failure[0]
        assert self.served is not None
        self.ctx = ssl.create_default_context(cafile=str(self.served.identity.ca_cert))
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._thread = None

    @property
    def port(self) -> int:
        assert self.served is not None
        return self.served.port

    @property
    def token(self) -> str:
        assert self.served is not None
        return self.served.identity.token

    @property
    def kubeconfig(self) -> Path:
        assert self.served is not None
        return self.served.kubeconfig

    @property
    def store(self) -> Any:
        assert self.served is not None
        return self.served.store

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        token: str | None = "default",
    ) -> tuple[int, Any, dict[str, str]]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        hdrs = {"Content-Type": content_type, **(headers or {})}
        if token is not None:
            hdrs["Authorization"] = f"Bearer {self.token if token == 'default' else token}"
        data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode()
        return resp.status, parsed, dict(resp.getheaders())

    def stream(self, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}", **(headers or {})})
        return conn.getresponse()


def started_clusters(tmp_path: Path, **defaults: Any) -> Iterator[Any]:
    """Yields ``make(**serve_options)``, which starts a served cluster (a data dir under
    ``tmp_path``, a free port, then ``defaults``, unless given); stops them all afterwards."""
    started: list[Cluster] = []

    def make(**kwargs: Any) -> Cluster:
        for key, value in {"data_dir": tmp_path / "data", "port": 0, **defaults}.items():
            kwargs.setdefault(key, value)
        cluster = Cluster(ServeOptions(**kwargs)).start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Any]:
    yield from started_clusters(tmp_path)


@pytest.fixture
def cluster(make_cluster: Any) -> Cluster:
    c: Cluster = make_cluster(nodes=2)
    return c


#: An aggregated API's registration whose Service does not exist (kube-aggregator's sample
#: apiserver): available False with ServiceNotFound.
WARDLE_API_SERVICE: dict[str, Any] = {
    "apiVersion": "apiregistration.k8s.io/v1",
    "kind": "APIService",
    "metadata": {"name": "v1alpha1.wardle.k8s.io"},
    "spec": {
        "insecureSkipTLSVerify": True,
        "group": "wardle.k8s.io",
        "groupPriorityMinimum": 1000,
        "versionPriority": 15,
        "service": {"name": "api", "namespace": "wardle"},
        "version": "v1alpha1",
    },
}


def pod(name: str, namespace: str = "default", cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name.split("-")[0]}},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }
