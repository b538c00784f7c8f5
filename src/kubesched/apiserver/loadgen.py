"""Load for a served cluster: concurrent clients create pods through the API while watchers follow
them, until every pod is bound. Used by the load tests and ``python -m kubesched.apiserver.loadgen``
(the throughput figure in docs/performance.md)."""

from __future__ import annotations

import argparse
import asyncio
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson


@dataclass
class WatchLog:
    #: (type, name, resourceVersion, nodeName) in the order received.
    events: list[tuple[str, str, int, str]] = field(default_factory=list)


@dataclass
class LoadResult:
    created: list[str]
    failed: int
    create_seconds: float
    #: Seconds from the first create until the watchers saw every pod bound.
    bound_seconds: float
    watches: list[WatchLog]

    @property
    def pods_per_second(self) -> float:
        return len(self.created) / self.bound_seconds if self.bound_seconds else 0.0


def _pod(name: str, namespace: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"load": "1"}},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]},
    }


async def _watch(
    session: aiohttp.ClientSession,
    base: str,
    path: str,
    rv: str,
    log: WatchLog,
    done: asyncio.Event,
    want: int,
) -> None:
    bound: set[str] = set()
    async with session.get(
        f"{base}{path}?watch=1&resourceVersion={rv}&labelSelector=load%3D1&timeoutSeconds=600"
    ) as resp:
        async for line in resp.content:
            if not line.strip():
                continue
            event = orjson.loads(line)
            obj = event["object"]
            meta = obj.get("metadata") or {}
            node = (obj.get("spec") or {}).get("nodeName") or ""
            log.events.append(
                (event["type"], meta.get("name", ""), int(meta.get("resourceVersion", 0)), node)
            )
            if node:
                bound.add(meta.get("name", ""))
            if len(bound) >= want:
                break
    done.set()


async def run_load(
    base: str,
    token: str,
    ca_file: str,
    *,
    pods: int,
    clients: int = 8,
    watchers: int = 2,
    namespace: str = "default",
    cpu: str = "10m",
    prefix: str = "load",
    timeout: float = 300.0,
) -> LoadResult:
    ctx = ssl.create_default_context(cafile=ca_file)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(ssl=ctx, limit=clients + watchers + 4)
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        async with session.get(f"{base}{path}?limit=1") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        logs = [WatchLog() for _ in range(watchers)]
        dones = [asyncio.Event() for _ in range(watchers)]
        watch_tasks = [
            asyncio.create_task(_watch(session, base, path, rv, log, done, pods))
            for log, done in zip(logs, dones, strict=True)
        ]
        created: list[str] = []
        failed = 0
        names = [f"{prefix}-{i}" for i in range(pods)]

        async def client(chunk: list[str]) -> None:
            nonlocal failed
            for name in chunk:
                async with session.post(
                    f"{base}{path}", data=orjson.dumps(_pod(name, namespace, cpu))
                ) as resp:
                    await resp.read()
                    if resp.status == 201:
                        created.append(name)
                    else:
                        failed += 1

        start = time.perf_counter()
        await asyncio.gather(*(client(names[i::clients]) for i in range(clients)))
        create_seconds = time.perf_counter() - start
        try:
            await asyncio.wait_for(asyncio.gather(*(d.wait() for d in dones)), timeout)
        finally:
            bound_seconds = time.perf_counter() - start
            for task in watch_tasks:
                task.cancel()
            await asyncio.gather(*watch_tasks, return_exceptions=True)
    return LoadResult(created, failed, create_seconds, bound_seconds, logs)


def main() -> None:
    parser = argparse.ArgumentParser(description="create pods on a served cluster and time their binding")
    parser.add_argument("--server", required=True, help="https://host:port")
    parser.add_argument("--data-dir", required=True, help="the server's data dir (token and CA)")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients creating pods")
    parser.add_argument(
        "--watchers", type=int, default=2, help="watches that follow the pods until all are bound"
    )
    parser.add_argument("--prefix", default="load")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for every pod to be bound"
    )
    args = parser.parse_args()
    if args.pods < 1 or args.clients < 1 or args.watchers < 1:
        parser.error("--pods, --clients and --watchers must be at least 1")

    data = Path(args.data_dir)
    try:
        result = _run(args, data)
    except TimeoutError:
        raise SystemExit(f"not every pod was bound within --timeout {args.timeout:g}s") from None
    print(
        f"{len(result.created)} pods created in {result.create_seconds:.2f}s "
        f"({len(result.created) / result.create_seconds:.0f}/s), "
        f"all bound after {result.bound_seconds:.2f}s: "
        f"{result.pods_per_second:.0f} pods/s end to end; {result.failed} creates failed"
    )


def _run(args: argparse.Namespace, data: Path) -> LoadResult:
    return asyncio.run(
        run_load(
            args.server,
            (data / "token").read_text().strip(),
            str(data / "ca.crt"),
            pods=args.pods,
            clients=args.clients,
            watchers=args.watchers,
            prefix=args.prefix,
            timeout=args.timeout,
        )
    )


if __name__ == "__main__":
    main()
