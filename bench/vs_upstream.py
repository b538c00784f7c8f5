"""Side by side with the real control plane on this machine (``../shared/refcp``: kube-apiserver,
etcd and kube-scheduler v1.20.2).

``scheduler``: one API server (refcp's kube-apiserver and etcd), 1,000 nodes, then the same pods
scheduled (a) by kube-scheduler and (b) by ``kubesched run``, both with their client rate limits
lifted the same way (QPS and burst 5,000). Reports pods/s from the first create to the last bind
seen on a watch, the scheduler process's CPU seconds per pod and its peak resident memory, and
what the API server and etcd spent per pod meanwhile.

``serve``: the same load (``kubesched.apiserver.loadgen``) against the real plane (kube-apiserver,
etcd, kube-scheduler with lifted limits) and against ``kubesched serve``: pods/s end to end and
the CPU per pod of all the server-side processes.

``costs``: what each write of a scheduled pod costs kube-apiserver and etcd, measured alone: the
pods' creates, then their Bindings, then their ``Scheduled`` events (events.k8s.io/v1), each phase
from ``--clients`` kept-alive connections while ``--watchers`` pod watches are open, with the CPU
of both processes per write.

Each round starts a fresh plane (an empty etcd) or a fresh ``serve``; the sides alternate round by
round so that the machine's load falls on both alike. Run from the repository root:

    python bench/vs_upstream.py scheduler --rounds 3
    python bench/vs_upstream.py serve --rounds 3
    python bench/vs_upstream.py costs --rounds 2

It needs refcp built (``../shared/refcp/build.sh``) and nothing else using its ports.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import shlex
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from kubesched.apiserver.loadgen import run_load

ROOT = Path(__file__).resolve().parents[1]
REFCP = ROOT.parent / "shared" / "refcp"
REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: The real control plane's side in ``serve`` mode.
PLANE = "kube-apiserver + etcd + kube-scheduler"
#: Both schedulers' client limits, lifted the same way.
QPS = 5000


# -- processes ----------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def refcp_pid(name: str) -> int:
    return int((REF_DIR / "run" / f"{name}.pid").read_text().strip())


def refcp_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for line in (REF_DIR / "env.sh").read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = line[len("export ") :].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


@contextmanager
def refcp(*, scheduler: bool) -> Iterator[dict[str, str]]:
    args = [str(REFCP / "start.sh")]
    env = dict(os.environ, REF_DIR=str(REF_DIR))
    if scheduler:
        args.append("--scheduler")
        env["REF_SCHEDULER_ARGS"] = f"--kube-api-qps {QPS} --kube-api-burst {QPS}"
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    try:
        yield refcp_env()
    finally:
        subprocess.run([str(REFCP / "stop.sh")], check=False, env=env, stdout=subprocess.DEVNULL)


@contextmanager
def process(
    args: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the cluster --------------------------------------------------------------------------------------
def node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


@dataclass
class Api:
    base: str
    token: str
    ca: str

    def session(self, connections: int = 16) -> aiohttp.ClientSession:
        ctx = ssl.create_default_context(cafile=self.ca)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        return aiohttp.ClientSession(
            headers=headers, connector=aiohttp.TCPConnector(ssl=ctx, limit=connections)
        )


async def create_nodes(api: Api, count: int, clients: int = 8) -> None:
    async with api.session(clients) as session:

        async def create(names: list[str]) -> None:
            for name in names:
                async with session.post(f"{api.base}/api/v1/nodes", data=orjson.dumps(node(name))) as resp:
                    if resp.status != 201:
                        raise RuntimeError(f"node {name}: {resp.status} {await resp.text()}")

        names = [f"node-{i}" for i in range(count)]
        await asyncio.gather(*(create(names[i::clients]) for i in range(clients)))


async def probe(api: Api, timeout: float = 120.0) -> None:
    """Wait until the scheduler binds a pod: its informers are synced and it is taking pods."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }
    path = f"{api.base}/api/v1/namespaces/default/pods"
    async with api.session(2) as session:
        deadline = time.monotonic() + timeout
        while True:
            async with session.post(path, data=orjson.dumps(body)) as resp:
                if resp.status in (201, 409):
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the API server does not take pods")
            await asyncio.sleep(0.5)
        while time.monotonic() < deadline:
            async with session.get(f"{path}/probe") as resp:
                if ((await resp.json()).get("spec") or {}).get("nodeName"):
                    break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError("the scheduler bound nothing")
        async with session.delete(f"{path}/probe") as resp:
            await resp.read()


# -- one measured load --------------------------------------------------------------------------------
@dataclass
class Run:
    side: str
    pods_per_second: float
    create_rate: float
    #: Milliseconds of CPU per pod, per process watched.
    cpu_ms: dict[str, float] = field(default_factory=dict)
    peak_mib: float = 0.0
    #: Requests per pod the API server answered during the load, by verb and resource
    #: (kube-apiserver's ``apiserver_request_total``; empty for a server without it).
    requests: dict[str, float] = field(default_factory=dict)
    #: TCP connections the scheduler process held open to the API server after the load.
    connections: int = 0


async def request_counts(api: Api) -> Counter[str]:
    """kube-apiserver's count of the requests it answered, by verb and resource/subresource, and of
    the events it sent on watches, by kind."""
    async with api.session(1) as session, session.get(f"{api.base}/metrics") as resp:
        if resp.status != 200:
            return Counter()
        text = await resp.text()
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if line.startswith("apiserver_watch_events_total{"):
            # What the server encoded and sent on watches, by kind (every watcher's copy).
            labels_text, _, value = line.rpartition(" ")
            kind = dict(re.findall(r'(\w+)="([^"]*)"', labels_text)).get("kind", "")
            counts[f"watch events {kind}"] += int(float(value))
            continue
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition(" ")
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        counts[f"{labels.get('verb', '')} {resource}"] += int(float(value))
    return counts


@contextmanager
def sampled(pid: int, out: Path | None) -> Iterator[None]:
    """py-spy sampling ``pid`` while the block runs: 200 Hz, only the thread holding the GIL (so the
    shares are of the Python CPU, not of threads waiting), raw collapsed stacks into ``out``."""
    if out is None:
        yield
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    args = [spy, "record", "--pid", str(pid), "--rate", "200", "--gil", "-f", "raw", "-o", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the load starts
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def connections_of(pid: int, url: str) -> int:
    """Established TCP connections of process ``pid`` to the port of ``url`` (``ss``; 0 without it)."""
    port = url.rsplit(":", 1)[-1].split("/", 1)[0]
    try:
        out = subprocess.run(
            ["ss", "-Htnp", "state", "established", "dport", "=", f":{port}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except FileNotFoundError:
        return 0
    return sum(1 for line in out.splitlines() if f"pid={pid}," in line)


def measured_load(
    side: str,
    api: Api,
    pids: dict[str, int],
    pods: int,
    clients: int,
    peak_of: str | None,
    profile: Path | None = None,
) -> Run:
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    requests_before = asyncio.run(request_counts(api))
    with sampled(pids[peak_of] if peak_of else next(iter(pids.values())), profile):
        result = asyncio.run(run_load(api.base, api.token, api.ca, pods=pods, clients=clients, timeout=600))
    after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    connections = connections_of(pids[peak_of], api.base) if peak_of else 0
    requests = asyncio.run(request_counts(api)) - requests_before
    if result.failed:
        raise RuntimeError(f"{side}: {result.failed} creates failed")
    cpu = {name: 1000 * (after[name] - before[name]) / pods for name in pids}
    peak = peak_rss_mib(pids[peak_of]) if peak_of else 0.0
    per_pod = {key: n / pods for key, n in requests.most_common() if n / pods >= 0.01}
    return Run(side, result.pods_per_second, pods / result.create_seconds, cpu, peak, per_pod, connections)


def kube_scheduler_round(
    nodes: int, pods: int, clients: int, side: str = "kube-scheduler", profile: Path | None = None
) -> Run:
    """refcp with kube-scheduler; the peak memory reported is kube-scheduler's."""
    with refcp(scheduler=True) as env:
        api = Api(env["REF_API_URL"], env["REF_TOKEN"], env["REF_CA"])
        asyncio.run(create_nodes(api, nodes))
        asyncio.run(probe(api))
        pids = {
            "scheduler": refcp_pid("kube-scheduler"),
            "apiserver": refcp_pid("kube-apiserver"),
            "etcd": refcp_pid("etcd"),
        }
        return measured_load(side, api, pids, pods, clients, "scheduler", profile)


def kubesched_run_round(
    nodes: int, pods: int, clients: int, log_dir: Path, profile: Path | None = None
) -> Run:
    with refcp(scheduler=False) as env:
        api = Api(env["REF_API_URL"], env["REF_TOKEN"], env["REF_CA"])
        asyncio.run(create_nodes(api, nodes))
        grant_kubesched_role()
        args = [
            sys.executable, "-m", "kubesched.cli", "run",
            "--kubeconfig", str(REF_DIR / "run" / "scheduler.kubeconfig"),
            "--no-leader-elect", "--secure-port", "0",
            "--kube-api-qps", str(QPS), "--kube-api-burst", str(QPS),
        ]  # fmt: skip
        with process(args, log_dir / "kubesched-run.log") as proc:
            asyncio.run(probe(api))
            pids = {
                "scheduler": proc.pid,
                "apiserver": refcp_pid("kube-apiserver"),
                "etcd": refcp_pid("etcd"),
            }
            return measured_load("kubesched run", api, pids, pods, clients, "scheduler", profile)


def grant_kubesched_role() -> None:
    """kubesched reads more kinds than v1.20's ``system:kube-scheduler`` role lists (Namespaces,
    PriorityClasses, CSIDrivers, VolumeAttachments, ...): the identity it runs as here,
    kube-scheduler's, gets deploy/rbac.yaml's ClusterRole as well."""
    kubectl = [str(REF_DIR / "bin" / "kubectl"), "--kubeconfig", str(REF_DIR / "kubeconfig")]
    rbac = str(ROOT / "deploy" / "rbac.yaml")
    subprocess.run([*kubectl, "apply", "-f", rbac], check=True, stdout=subprocess.DEVNULL)
    bind = ["create", "clusterrolebinding", "kubesched-bench", "--clusterrole=kubesched"]
    subprocess.run([*kubectl, *bind, "--user=system:kube-scheduler"], check=True, stdout=subprocess.DEVNULL)


def serve_round(nodes: int, pods: int, clients: int, log_dir: Path, port: int) -> Run:
    data = Path(tempfile.mkdtemp(prefix="serve-", dir=log_dir))
    args = [
        sys.executable,
        "-m",
        "kubesched.cli",
        "serve",
        "--nodes",
        str(nodes),
        "--data-dir",
        str(data),
        "--port",
        str(port),
    ]
    with process(args, log_dir / "serve.log") as proc:
        deadline = time.monotonic() + 120
        while not (data / "kubeconfig").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start: see {log_dir / 'serve.log'}")
            time.sleep(0.2)
        api = Api(f"https://127.0.0.1:{port}", (data / "token").read_text().strip(), str(data / "ca.crt"))
        asyncio.run(probe(api))
        return measured_load("kubesched serve", api, {"serve": proc.pid}, pods, clients, None)


# -- what each write costs the plane ------------------------------------------------------------------
def pod_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]},
    }


def binding_body(name: str, uid: str, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def event_body(name: str, uid: str, node_name: str) -> dict[str, Any]:
    """The Scheduled event as both schedulers write it (events.k8s.io/v1)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": "default"},
        "eventTime": now,
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-bench",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": "default", "uid": uid},
        "note": f"Successfully assigned default/{name} to {node_name}",
        "type": "Normal",
    }


async def post_all(api: Api, items: list[tuple[str, dict[str, Any]]], clients: int) -> list[Any]:
    """POST each (path, body) from ``clients`` kept-alive connections; the answers, in order."""
    answers: list[Any] = [None] * len(items)
    async with api.session(clients) as session:

        async def worker(first: int) -> None:
            for i in range(first, len(items), clients):
                path, body = items[i]
                async with session.post(f"{api.base}{path}", data=orjson.dumps(body)) as resp:
                    raw = await resp.read()
                    if resp.status not in (200, 201):
                        raise RuntimeError(f"POST {path}: {resp.status} {raw[:200]!r}")
                    answers[i] = orjson.loads(raw)

        await asyncio.gather(*(worker(i) for i in range(clients)))
    return answers


def costs_round(nodes: int, pods: int, clients: int, watchers: int) -> dict[str, dict[str, float]]:
    """refcp without a scheduler: the pods' creates, then their Bindings, then their Scheduled
    events, each phase timed alone; kube-apiserver's and etcd's CPU per write in each. ``watchers``
    pod watches stay open meanwhile (a scheduler's and the load generator's)."""
    out: dict[str, dict[str, float]] = {}
    with refcp(scheduler=False) as env:
        api = Api(env["REF_API_URL"], env["REF_TOKEN"], env["REF_CA"])
        asyncio.run(create_nodes(api, nodes))
        pids = {"apiserver": refcp_pid("kube-apiserver"), "etcd": refcp_pid("etcd")}
        names = [f"cost-{i}" for i in range(pods)]
        pod_path = "/api/v1/namespaces/default/pods"

        async def phases() -> None:
            async with api.session(watchers + 1) as session:
                watches = [
                    asyncio.create_task(_drain_watch(session, f"{api.base}{pod_path}?watch=true"))
                    for _ in range(watchers)
                ]
                await asyncio.sleep(0.5)
                created = await timed("create pod", [(pod_path, pod_body(n)) for n in names])
                uids = [c["metadata"]["uid"] for c in created]
                nodes_of = [f"node-{i % nodes}" for i in range(pods)]
                await timed(
                    "POST pods/binding",
                    [
                        (f"{pod_path}/{n}/binding", binding_body(n, u, node))
                        for n, u, node in zip(names, uids, nodes_of, strict=True)
                    ],
                )
                await timed(
                    "POST events (events.k8s.io/v1)",
                    [
                        ("/apis/events.k8s.io/v1/namespaces/default/events", event_body(n, u, node))
                        for n, u, node in zip(names, uids, nodes_of, strict=True)
                    ],
                )
                for task in watches:
                    task.cancel()
                await asyncio.gather(*watches, return_exceptions=True)

        async def timed(what: str, items: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            start = time.monotonic()
            answers = await post_all(api, items, clients)
            seconds = time.monotonic() - start
            # What the watches still have to send is part of the write's cost.
            await asyncio.sleep(0.5)
            after = {name: cpu_seconds(pid) for name, pid in pids.items()}
            out[what] = {name: 1000 * (after[name] - before[name]) / len(items) for name in pids}
            out[what]["per second"] = len(items) / seconds
            return answers

        asyncio.run(phases())
    return out


async def _drain_watch(session: aiohttp.ClientSession, url: str) -> None:
    async with session.get(url) as resp:
        async for _chunk in resp.content.iter_any():
            pass


def costs(args: argparse.Namespace) -> None:
    rounds = [costs_round(args.nodes, args.pods, args.clients, args.watchers) for _ in range(args.rounds)]
    print("| write | per second | kube-apiserver CPU ms per write | etcd CPU ms per write |")
    print("| --- | --- | --- | --- |")
    for what in rounds[0]:
        rate = [r[what]["per second"] for r in rounds]
        api = [r[what]["apiserver"] for r in rounds]
        etcd = [r[what]["etcd"] for r in rounds]

        def listed(xs: list[float], digits: int) -> str:
            return ", ".join(f"{x:.{digits}f}" for x in xs)

        print(f"| {what} | {listed(rate, 0)} | {listed(api, 2)} | {listed(etcd, 2)} |")
    print(
        f"({args.pods} writes each, {args.clients} clients, {args.watchers} pod watches open; load average "
        f"{os.getloadavg()[0]:.1f})"
    )


# -- the report ---------------------------------------------------------------------------------------
def row(run: Run, with_peak: bool) -> str:
    cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in run.cpu_ms.items())
    peak = f" | {run.peak_mib:.0f}" if with_peak else ""
    return f"| {run.side} | {run.pods_per_second:.0f} | {run.create_rate:.0f} | {cpu}{peak} |"


def summary(runs: list[Run]) -> list[str]:
    out = []
    sides = list(dict.fromkeys(r.side for r in runs))
    for side in sides:
        mine = [r for r in runs if r.side == side]
        rates = [r.pods_per_second for r in mine]
        cpu = [r.cpu_ms.get("scheduler", r.cpu_ms.get("serve", 0.0)) for r in mine]
        total = [sum(r.cpu_ms.values()) for r in mine]
        out.append(
            f"{side}: median {statistics.median(rates):.0f} pods/s ({', '.join(f'{x:.0f}' for x in rates)}); "
            f"scheduler/serve CPU {statistics.median(cpu):.2f} ms/pod; "
            f"all watched processes {statistics.median(total):.2f} ms/pod"
        )
        requests = mine[-1].requests
        if requests:
            listed = ", ".join(f"{key} {n:.2f}" for key, n in requests.items())
            out.append(f"  API requests per pod (last run, all clients): {listed}")
        if mine[-1].connections:
            out.append(f"  scheduler's connections to the API server after the load: {mine[-1].connections}")
    if len(sides) == 2:
        a, b = ([r.pods_per_second for r in runs if r.side == s] for s in sides)
        out.append(
            f"ratio {sides[1]} / {sides[0]}: {statistics.median(b) / statistics.median(a):.2f}x pods/s"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("scheduler", "serve", "costs"))
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each side, alternated")
    parser.add_argument("--port", type=int, default=16480, help="serve's port (serve mode)")
    parser.add_argument("--watchers", type=int, default=3, help="pod watches held open (costs mode)")
    parser.add_argument(
        "--only", choices=("upstream", "kubesched"), help="run one side only (scheduler mode)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="sample `kubesched run` with py-spy during each load (raw stacks into DIR/run-N.txt)",
    )
    args = parser.parse_args()
    if not (REF_DIR / "bin" / "kube-apiserver").exists():
        raise SystemExit(f"refcp is not built in {REF_DIR}: run ../shared/refcp/build.sh")
    if args.mode == "costs":
        costs(args)
        return
    log_dir = Path(tempfile.mkdtemp(prefix="vs-upstream-"))
    runs: list[Run] = []
    columns = ["side", "pods/s end to end", "create rate", "CPU ms per pod"]
    if args.mode == "scheduler":
        columns.append("scheduler peak MiB")
    print("| " + " | ".join(columns) + " |")
    print("| --- " * len(columns) + "|")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    for n in range(args.rounds):
        pair: list[Callable[[], Run]]
        if args.mode == "scheduler":
            profile = args.profile / f"run-{n}.txt" if args.profile else None
            pair = [
                lambda: kube_scheduler_round(args.nodes, args.pods, args.clients),
                functools.partial(kubesched_run_round, args.nodes, args.pods, args.clients, log_dir, profile),
            ]
            if args.only:
                pair = pair[:1] if args.only == "upstream" else pair[1:]
        else:
            pair = [
                lambda: kube_scheduler_round(args.nodes, args.pods, args.clients, PLANE),
                lambda: serve_round(args.nodes, args.pods, args.clients, log_dir, args.port),
            ]
        for measure in pair:
            run = measure()
            runs.append(run)
            print(row(run, with_peak=args.mode == "scheduler"), flush=True)
    print()
    for line in summary(runs):
        print(line)
    print(f"(logs in {log_dir}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
