"""Time the web UI on a large served cluster, in headless Chromium; measure what an open UI costs.

    python scripts/ui_scale.py --nodes 5000 --pods 50000 [--runs 2] [--view pods]
    python scripts/ui_scale.py --loadbar 5 [--load-pods 8000] [--no-pin]
    python scripts/ui_scale.py --churn --nodes 5000 --pods 50000
    python scripts/ui_scale.py --interleave 5 [--pairs 40] [--view cluster|pods|poll] [--seed N]

Starts ``kubesched serve FILE --nodes N --no-schedulers`` (the kubesched found on ``PYTHONPATH``)
with the pods already bound round-robin but every hundredth, which waits for a node, opens the
printed one-time link and reports, from the browser's Performance API, the milliseconds from
navigation to the first drawing that counts every node and pod, and each API answer's size and
time. With ``--view pods`` it then opens the Pods view and reports the milliseconds from the click
to the first drawing of its rows, and how long a pod created afterwards takes to show. Needs
Debian's ``chromium`` and ``chromium-driver`` and Selenium.

``--loadbar ROUNDS`` runs the serve load test (``kubesched.apiserver.loadgen``, 1000 nodes) once
per setup per round, alternating: no UI, Chromium on the Cluster view, no UI again, Chromium on the
Pods view (``--setups`` picks others, ``poll``: the Cluster view's requests from a Python client);
a fresh ``serve`` for each run. ``serve`` runs on one core and everything else (the load
generator, the browser, this script) on the others, the browser at idle priority, as a user's
browser runs on another machine than the server and takes nothing from the load's clients
(``--no-pin`` shares every core alike). It prints each run's end-to-end pods/s, the CPU time
``serve`` spent per pod, the part of it spent making the UI's views
(``kubesched_ui_cpu_seconds_total``) and the browser's CPU per pod, then per setup the medians,
quartiles and ranges, and each UI setup's runs set against the no-UI runs next to them (the
paired ratio, its median and a 95 % bootstrap interval); "no UI again" against "no UI" is the
noise floor.

``--interleave SECONDS`` runs one ``serve`` (1,000 nodes, pinned as above) and one load test long
enough for every window, and switches the UI on and off in windows of SECONDS: ``--pairs`` pairs,
each on/off or off/on by a coin flip, after ``--warmup`` windows that are dropped. "On" is the
browser on ``--view`` (or, ``poll``, the Cluster view's summary requests from a Python client),
"off" the same page on its Edit view, which polls nothing (the page's idle watches stay open); the
browser runs at nice 10, not idle priority, so that its requests keep to their windows. At
each boundary it reads ``serve``'s CPU time (``/proc``), its count of pods scheduled and its
``kubesched_ui_cpu_seconds_total`` (``/metrics``) and prints per window the pods scheduled a second
and ``serve``'s CPU per pod; then each on-window over the mean of the off-windows next to it, the
median of those ratios and a 95 % bootstrap interval. The machine's slow phases, longer than a
window, slow both sides of a pair alike and cancel.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import yaml
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def pods_file(path: Path, nodes: int, pods: int) -> None:
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": "default"},
            "spec": {
                **({"nodeName": f"node-{i % nodes}"} if i % 100 else {}),
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                ],
            },
        }
        for i in range(pods)
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def browser() -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--ignore-certificate-errors")
    options.add_argument("--window-size=1500,1000")
    service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


def pods_view(driver: Any, base: str, token: str, pods: int) -> dict[str, Any]:
    """Milliseconds from clicking the Pods tab to the first drawing of its rows (counted in the
    page), then from creating a pod that waits for a node to its row on the page (counted here)."""
    drawn = driver.execute_async_script(
        """
        const [want, done] = arguments;
        const started = performance.now();
        document.querySelector('[data-view="pods"]').click();
        const tick = () => {
          const s = document.getElementById("pod-summary");
          if (s && s.textContent.startsWith(want) && document.querySelector("#pod-table tr[data-pod]")) {
            done([performance.now() - started, s.textContent]);
          } else requestAnimationFrame(tick);
        };
        tick();
        """,
        f"{pods} pod(s)",
    )
    ctx = ssl._create_unverified_context()
    body = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "live", "namespace": "a"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    ).encode()
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    started = time.monotonic()
    urlopen(Request(base + "/api/v1/namespaces/a/pods", body, headers, method="POST"), context=ctx).read()
    while not driver.execute_script("return !!document.querySelector('#pod-table tr[data-pod=\"a/live\"]')"):
        time.sleep(0.02)
    live_ms = round((time.monotonic() - started) * 1000)
    gone = Request(base + "/api/v1/namespaces/a/pods/live", headers=headers, method="DELETE")
    urlopen(gone, context=ctx).read()
    return {
        "pods_ms": round(drawn[0]),
        "pods_summary": drawn[1],
        "live_ms": live_ms,
    }


def first_drawing(base: str, token: str, nodes: int, pods: int, view: str = "cluster") -> dict[str, Any]:
    driver = browser()
    driver.set_script_timeout(300)
    try:
        # Signed in as the token would be typed in, then the page loaded afresh: that load is timed.
        driver.get(base + "/ui/")
        driver.execute_script("sessionStorage.setItem('kubesched-token', arguments[0])", token)
        driver.get(base + "/ui/")
        want = f"{nodes} nodes, {pods} pods"
        # Checked in the page on every animation frame, so the time is the page's own.
        drawn = driver.execute_async_script(
            """
            const [want, done] = arguments;
            const tick = () => {
              const s = document.getElementById("status");
              if (s && s.textContent.startsWith(want)) done([performance.now(), s.textContent]);
              else requestAnimationFrame(tick);
            };
            tick();
            """,
            want,
        )
        resources = driver.execute_script(
            """return performance.getEntriesByType("resource").filter((e) => e.name.includes("/api")
               || e.name.includes("/kubesched")).map((e) => [e.name.replace(location.origin, ""),
               Math.round(e.responseEnd - e.startTime), e.encodedBodySize])"""
        )
        out: dict[str, Any] = {"first_ms": round(drawn[0]), "status": drawn[1]}
        if view == "pods":
            out.update(pods_view(driver, base, token, pods))
            resources = driver.execute_script(
                """return performance.getEntriesByType("resource").filter((e) => e.name.includes("/api")
                   || e.name.includes("/kubesched")).map((e) => [e.name.replace(location.origin, ""),
                   Math.round(e.responseEnd - e.startTime), e.encodedBodySize])"""
            )
            resources = [r for r in resources if "pods" in r[0]][:6]
        time.sleep(3)
        heap = driver.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : 0")
        out["later"] = driver.execute_script('return document.getElementById("status").textContent')
        out["heap_mb"] = heap >> 20
        out["resources"] = resources
        return out
    finally:
        driver.quit()


def hold(base: str, token: str, view: str = "cluster", control: bool = False) -> None:
    """Keep a browser on ``view`` of the served cluster; with ``control``, switch between it ("on")
    and the Edit view, which asks nothing of the server, as told line by line on stdin."""
    driver = browser()
    try:
        driver.get(base + "/ui/")
        driver.execute_script("sessionStorage.setItem('kubesched-token', arguments[0])", token)
        driver.get(base + "/ui/")
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-node]"))
        if view == "pods":
            driver.find_element(By.CSS_SELECTOR, '[data-view="pods"]').click()
        print(f"holding the {view} view open", flush=True)
        if control:
            follow_commands(lambda on: show(driver, view if on else QUIET_VIEW))
        while True:
            time.sleep(5)
            driver.execute_script("return 1")  # the page keeps running; the driver stays attached
    finally:
        driver.quit()


#: The page's view that makes no request of its own (the editor): what "off" shows in
#: ``--interleave``. The page's watches (nodes, PodGroups, Queues, HyperNodes) stay open in every
#: view; they are idle under a load of pods.
QUIET_VIEW = "edit"


def show(driver: Any, view: str) -> int:
    """Switch the page to ``view``; the number of API requests the page made since the last switch."""
    made: int = driver.execute_script(
        """const n = performance.getEntriesByType("resource").filter((e) => e.name.includes("/api")
           || e.name.includes("/kubesched")).length;
           performance.clearResourceTimings(); performance.setResourceTimingBufferSize(100000);
           document.querySelector(`[data-view="${arguments[0]}"]`).click();
           return n;""",
        view,
    )
    return made


def follow_commands(switch: Any) -> None:
    """Read "on" and "off" from stdin until it closes, switch, and answer each with "ok N" (N: the
    requests the UI made in the window that ended)."""
    for line in sys.stdin:
        made = switch(line.strip() == "on")
        print(f"ok {made}", flush=True)
    sys.exit(0)


def poll(base: str, token: str, control: bool = False) -> None:
    """The Cluster view's requests: a watch on nodes, the summary every second; with ``control``,
    the summary only while told "on" on stdin (the watch stays open, as the page's does)."""
    ctx = ssl._create_unverified_context()
    headers = {"Authorization": "Bearer " + token}

    def watch_nodes() -> None:
        with urlopen(Request(base + "/api/v1/nodes?watch=1", headers=headers), context=ctx) as answer:
            for _ in answer:
                pass

    threading.Thread(target=watch_nodes, daemon=True).start()
    polling = threading.Event()
    made = [0]

    def summaries() -> None:
        rv = ""
        while True:
            polling.wait()
            made[0] += 1
            try:
                with urlopen(
                    Request(f"{base}/kubesched/v1/cluster?resourceVersion={rv}", headers=headers), context=ctx
                ) as a:
                    rv = json.loads(a.read())["resourceVersion"]
            except HTTPError as exc:
                if exc.code != 304:
                    raise
            time.sleep(1)

    threading.Thread(target=summaries, daemon=True).start()
    print("polling the summary", flush=True)
    if not control:
        polling.set()
        while True:
            time.sleep(3600)

    def switch(on: bool) -> int:
        (polling.set if on else polling.clear)()
        done, made[0] = made[0], 0
        return done

    follow_commands(switch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--port", type=int, default=18443)
    parser.add_argument(
        "--view",
        choices=("cluster", "pods", "poll"),
        default="cluster",
        help="the view to time, hold or switch on (poll: the Cluster view's requests without a browser)",
    )
    parser.add_argument(
        "--interleave",
        type=float,
        metavar="SECONDS",
        help="one serve, one long load, --view switched on and off in windows of SECONDS",
    )
    parser.add_argument(
        "--pairs", type=int, default=40, help="--interleave: on/off pairs of windows measured"
    )
    parser.add_argument("--warmup", type=int, default=2, help="--interleave: windows run first and dropped")
    parser.add_argument("--seed", type=int, default=None, help="--interleave: the coin flips' seed")
    parser.add_argument("--control", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--loadbar", type=int, metavar="ROUNDS", help="alternate load tests with and without a UI"
    )
    parser.add_argument(
        "--churn", action="store_true", help="time the server's work per second of changes, in-process"
    )
    parser.add_argument(
        "--summarize",
        metavar="LOG",
        help="print the summary of the runs a --loadbar output (perhaps cut short) lists",
    )
    parser.add_argument(
        "--catch-up",
        action="store_true",
        help="time, in-process, each view's CPU per pod of a load test's changes (--load-pods)",
    )
    parser.add_argument("--load-pods", type=int, default=8000, help="pods each load test creates")
    parser.add_argument(
        "--setups",
        default=",".join(SETUPS),
        help="the setups each round runs, in order (none, cluster, none-again, pods, poll)",
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="let serve share every core with the load generator and the browser",
    )
    parser.add_argument(
        "--hold",
        nargs=2,
        metavar=("URL", "DATA_DIR"),
        help="only keep a browser on the Cluster view of the served cluster at URL (until killed)",
    )
    parser.add_argument(
        "--poll",
        nargs=2,
        metavar=("URL", "DATA_DIR"),
        help="only make the Cluster view's requests (a watch on nodes, the summary every second), no browser",
    )
    args = parser.parse_args()
    # Stopped by a signal, the browser and servers this started are closed too (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if args.poll:
        poll(args.poll[0], read_token(Path(args.poll[1])), args.control)
        return
    if args.hold:
        hold(args.hold[0], read_token(Path(args.hold[1])), args.view, args.control)
        return
    if args.churn:
        churn(args.nodes, args.pods)
        return
    if args.catch_up:
        catch_up_cost(args.load_pods)
        return
    if args.summarize:
        summarize_log(Path(args.summarize))
        return
    if args.interleave:
        if args.interleave <= 0 or args.pairs < 2 or args.warmup < 0:
            parser.error("--interleave must be > 0 seconds, --pairs at least 2, --warmup at least 0")
        interleave(
            args.interleave,
            args.pairs,
            args.view,
            args.port,
            pin=not args.no_pin,
            warmup=args.warmup,
            seed=args.seed,
        )
        return
    if args.view == "poll":
        parser.error("--view poll only with --interleave")
    if args.loadbar:
        setups = tuple(args.setups.split(","))
        unknown = set(setups) - {*SETUPS, *CLIENTS}
        if unknown or "none" not in setups:
            parser.error(f"--setups: 'none' and some of {', '.join(SETUPS + CLIENTS[2:])}")
        loadbar(args.loadbar, args.load_pods, args.port, pin=not args.no_pin, setups=setups)
        return
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "pods.json"
        pods_file(manifest, args.nodes, args.pods)
        log = Path(tmp) / "serve.log"
        cmd = [
            sys.executable,
            "-m",
            "kubesched.cli",
            "serve",
            str(manifest),
            "--nodes",
            str(args.nodes),
            "--no-schedulers",
            "--data-dir",
            str(Path(tmp) / "data"),
            "--port",
            str(args.port),
        ]
        started = time.monotonic()
        with log.open("w") as out:
            serve = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
        try:
            link = None
            while link is None:
                if serve.poll() is not None:
                    sys.exit("serve ended:\n" + log.read_text()[-3000:])
                found = re.search(r"web UI: (\S+#code=)\S+", log.read_text())
                if found:
                    link = found.group(1)
                time.sleep(0.5)
            print(f"serve up in {time.monotonic() - started:.0f} s", flush=True)
            ctx = ssl._create_unverified_context()
            base = link.split("/ui/")[0]
            while True:
                try:
                    urlopen(base + "/readyz", context=ctx).read()
                    break
                except Exception as exc:
                    if "401" in str(exc):
                        break
                    time.sleep(0.5)
            for _ in range(args.runs):
                token = read_token(Path(tmp) / "data")
                print(json.dumps(first_drawing(base, token, args.nodes, args.pods, args.view)), flush=True)
        finally:
            serve.terminate()
            serve.wait()


#: The setups of ``--loadbar``, in the order run in each round; "none-again" is the noise floor.
SETUPS = ("none", "cluster", "none-again", "pods")
#: Setups with a UI client: a browser on either view, or ``poll`` (the Cluster view's requests made
#: by a Python client, no browser: what the view costs ``serve`` without the browser's own work).
CLIENTS = ("cluster", "pods", "poll")


def cores(pin: bool) -> tuple[set[int] | None, set[int] | None]:
    """The cores for ``serve`` and for everything else (load generator, browser, this script):
    one each when pinning on a machine with two or more, else no pinning."""
    have = sorted(os.sched_getaffinity(0))
    if not pin or len(have) < 2:
        return None, None
    return {have[0]}, set(have[1:])


def adjacent_pairs(runs: list[str], setup: str) -> list[tuple[int, list[int]]]:
    """Each run of ``setup`` (by its index in ``runs``, the order run) with the no-UI runs next to
    it: the nearest before and after it, skipping other setups' runs, so that a UI run is set
    against the baseline of its own minutes. For "none-again" the neighbours are the "none" runs."""
    base = ("none",) if setup == "none-again" else ("none", "none-again")
    out = []
    for i, one in enumerate(runs):
        if one != setup:
            continue
        before = next((j for j in range(i - 1, -1, -1) if runs[j] in base), None)
        after = next((j for j in range(i + 1, len(runs)) if runs[j] in base), None)
        near = [j for j in (before, after) if j is not None]
        if near:
            out.append((i, near))
    return out


def paired_ratios(values: list[float], runs: list[str], setup: str) -> list[float]:
    """Each run of ``setup`` over the mean of its adjacent no-UI runs (of the same figure)."""
    return [values[i] / statistics.fmean(values[j] for j in near) for i, near in adjacent_pairs(runs, setup)]


def bootstrap_median(ratios: list[float], draws: int = 4000, seed: int = 1) -> tuple[float, float]:
    """A 95 % percentile-bootstrap interval of the median of ``ratios``."""
    import random

    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def describe(values: list[float], unit: str) -> str:
    median = statistics.median(values)
    low, high = statistics.quantiles(values, n=4)[::2] if len(values) >= 2 else (values[0], values[0])
    return (
        f"median {median:{unit}} (quartiles {low:{unit}} to {high:{unit}}, "
        f"range {min(values):{unit}} to {max(values):{unit}}, n {len(values)})"
    )


def loadbar(rounds: int, pods: int, port: int, pin: bool = True, setups: tuple[str, ...] = SETUPS) -> None:
    """The load test's end-to-end pods/s and the CPU time ``serve`` spent per pod, per setup, the
    setups alternated run by run; each UI run is also set against the no-UI runs next to it."""
    serve_cores, other_cores = cores(pin)
    if other_cores is not None:
        os.sched_setaffinity(0, other_cores)
        print(f"serve pinned to cores {sorted(serve_cores or ())}, the rest to {sorted(other_cores)}")
    runs: list[str] = []
    rates: list[float] = []
    cpu: list[float] = []
    seen: list[float] = []
    views: list[float] = []
    for r in range(rounds):
        for setup in setups:
            with tempfile.TemporaryDirectory() as tmp:
                rate, ms, browser_ms, ui_ms = load_run(Path(tmp), setup, pods, port, serve_cores)
            runs.append(setup)
            rates.append(rate)
            cpu.append(ms)
            seen.append(browser_ms)
            views.append(ui_ms)
            shown = ""
            if setup in CLIENTS:
                shown = f" (its UI views {ui_ms:.4f}), the browser {browser_ms:.3f}"
            print(
                f"round {r + 1} {setup}: {rate:.0f} pods/s, serve {ms:.3f}{shown} ms CPU/pod",
                flush=True,
            )
    report(runs, rates, cpu, seen, views, setups)


def report(
    runs: list[str],
    rates: list[float],
    cpu: list[float],
    seen: list[float],
    views: list[float],
    setups: tuple[str, ...] = SETUPS,
) -> None:
    """Per setup the medians and spreads, then the paired ratios against adjacent no-UI runs."""
    for setup in setups:
        mine = [i for i, one in enumerate(runs) if one == setup]
        if not mine:
            continue
        print(f"{setup} pods/s: {describe([rates[i] for i in mine], '.0f')}")
        print(f"{setup} serve CPU ms/pod: {describe([cpu[i] for i in mine], '.3f')}")
        if setup in CLIENTS:
            print(f"{setup} browser CPU ms/pod: {describe([seen[i] for i in mine], '.3f')}")
            print(f"{setup} serve's UI views CPU ms/pod: {describe([views[i] for i in mine], '.4f')}")
            shares = [views[i] / cpu[i] * 100 for i in mine if cpu[i]]
            print(f"{setup} serve's UI views, % of serve's CPU: {describe(shares, '.2f')}")
    for setup in setups:
        if setup == "none":
            continue
        for what, values in (("pods/s", rates), ("serve CPU ms/pod", cpu)):
            ratios = paired_ratios(values, runs, setup)
            if len(ratios) < 2:
                continue
            low, high = bootstrap_median(ratios)
            listed = ", ".join(f"{(x - 1) * 100:+.1f}" for x in ratios)
            print(
                f"{setup} vs adjacent no UI, {what}: median {(statistics.median(ratios) - 1) * 100:+.1f} % "
                f"(95 % bootstrap {(low - 1) * 100:+.1f} to {(high - 1) * 100:+.1f} %; runs {listed})"
            )


RUN_LINE = re.compile(
    r"^round \d+ (?P<setup>[\w-]+): (?P<rate>\d+) pods/s, serve (?P<cpu>[\d.]+)"
    r"(?: \(its UI views (?P<views>[\d.]+)\), the browser (?P<browser>[\d.]+))? ms CPU/pod$"
)


def summarize_log(log: Path) -> None:
    """The summary :func:`loadbar` or :func:`interleave` prints, from the run or window lines it printed."""
    windows: list[Window] = []
    for line in log.read_text().splitlines():
        found = WINDOW_LINE.match(line)
        if found is not None:
            rate, cpu, views, seen = (float(found[name]) for name in ("rate", "cpu", "views", "browser"))
            windows.append(
                Window(
                    found["state"], rate, cpu, views, seen, int(found["requests"]), float(found["seconds"])
                )
            )
    if windows:
        interleave_report(windows)
        return
    runs: list[str] = []
    columns: list[list[float]] = [[], [], [], []]
    for line in log.read_text().splitlines():
        found = RUN_LINE.match(line)
        if found is None:
            continue
        runs.append(found["setup"])
        for column, name in zip(columns, ("rate", "cpu", "browser", "views"), strict=True):
            column.append(float(found[name] or 0.0))
    setups = tuple(dict.fromkeys(runs))
    rate_column, cpu_column, browser_column, views_column = columns
    report(runs, rate_column, cpu_column, browser_column, views_column, setups)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def low_priority() -> None:
    """Run this process (and the browser it starts) at nice 10: behind the load generator, yet
    never starved for seconds as at idle priority on a busy core, which would carry a view's
    requests over into the window after it was switched off."""
    os.nice(10)


def idle_priority() -> None:
    """Run this process (and the browser it starts) only when its core has nothing else to run:
    a user's browser runs on another machine and never delays the load generator's clients."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def ui_cpu_seconds(base: str, token: str) -> float:
    """The seconds ``serve`` has spent making the web UI's views, every view together."""
    request = Request(base + "/metrics", headers={"Authorization": "Bearer " + token})
    with urlopen(request, context=ssl._create_unverified_context()) as answer:
        text = answer.read().decode()
    found = re.findall(r"^kubesched_ui_cpu_seconds_total\{[^}]*\} (\S+)$", text, re.M)
    return sum(float(seconds) for seconds in found)


def tree_cpu_seconds(pid: int) -> float:
    """CPU time so far of a process and every process under it (the browser's are several)."""
    total = 0.0
    todo = [pid]
    while todo:
        one = todo.pop()
        try:
            total += cpu_seconds(one)
            for task in Path(f"/proc/{one}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def start_serve(
    data: Path, log: Path, port: int, extra: list[str], serve_cores: set[int] | None
) -> subprocess.Popen[bytes]:
    """A fresh ``serve`` of 1,000 nodes writing to ``log``, on ``serve_cores`` when given."""
    serve_cmd = [sys.executable, "-m", "kubesched.cli", "serve", "--nodes", "1000", *extra]
    serve_cmd += ["--data-dir", str(data), "--port", str(port)]
    with log.open("w") as out:
        return subprocess.Popen(
            serve_cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=os.environ,
            preexec_fn=None if serve_cores is None else lambda: os.sched_setaffinity(0, serve_cores),
        )


def wait_for_ui(serve: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``serve`` prints its web UI's link (and a moment more for its schedulers)."""
    while "web UI" not in log.read_text():
        if serve.poll() is not None:
            sys.exit("serve ended:\n" + log.read_text()[-3000:])
        time.sleep(0.5)
    time.sleep(2)


def load_run(
    tmp: Path, setup: str, pods: int, port: int, serve_cores: set[int] | None = None
) -> tuple[float, float, float, float]:
    """End-to-end pods/s of one load test, and the milliseconds of CPU ``serve`` and the browser
    (with its driver) spent per pod during it (which the other work on a shared machine does not
    inflate as it does the wall time), and of ``serve``'s the part spent making the UI's views
    (``kubesched_ui_cpu_seconds_total``)."""
    data = tmp / "data"
    log = tmp / "serve.log"
    serve = start_serve(data, log, port, [], serve_cores)
    holder = None
    try:
        wait_for_ui(serve, log)
        base = f"https://127.0.0.1:{port}"
        if setup in CLIENTS:
            hold_cmd = [sys.executable, __file__, "--hold", base, str(data), "--view", setup]
            if setup == "poll":
                hold_cmd = [sys.executable, __file__, "--poll", base, str(data)]
            holder = subprocess.Popen(
                hold_cmd,
                stdout=subprocess.PIPE,
                text=True,
                env=os.environ,
                preexec_fn=None if serve_cores is None else idle_priority,
            )
            assert holder.stdout is not None
            holder.stdout.readline()  # "holding the … view open"
            time.sleep(3)
        load_cmd = [sys.executable, "-m", "kubesched.apiserver.loadgen", "--server", base]
        load_cmd += ["--data-dir", str(data), "--pods", str(pods)]
        token = read_token(data)
        ui_before = ui_cpu_seconds(base, token)
        before = cpu_seconds(serve.pid)
        browser_before = tree_cpu_seconds(holder.pid) if holder is not None else 0.0
        done = subprocess.run(load_cmd, capture_output=True, text=True, env=os.environ, check=True)
        spent = cpu_seconds(serve.pid) - before
        browser_spent = tree_cpu_seconds(holder.pid) - browser_before if holder is not None else 0.0
        ui_spent = ui_cpu_seconds(base, token) - ui_before
        found = re.search(r"(\d+) pods/s end to end", done.stdout)
        if found is None:
            sys.exit("loadgen said:\n" + done.stdout + done.stderr)
        per_pod = 1000 / pods
        return float(found.group(1)), spent * per_pod, browser_spent * per_pod, ui_spent * per_pod
    finally:
        if holder is not None:
            holder.terminate()
            holder.wait()
        serve.terminate()
        serve.wait()


def serve_counts(base: str, token: str) -> tuple[float, float]:
    """From one read of ``serve``'s ``/metrics``: the pods scheduled so far, and the seconds of CPU
    it has spent making the web UI's views."""
    request = Request(base + "/metrics", headers={"Authorization": "Bearer " + token})
    with urlopen(request, context=ssl._create_unverified_context()) as answer:
        text = answer.read().decode()
    scheduled = re.findall(
        r'^scheduler_schedule_attempts_total\{[^}]*result="scheduled"[^}]*\} (\S+)$', text, re.M
    )
    views = re.findall(r"^kubesched_ui_cpu_seconds_total\{[^}]*\} (\S+)$", text, re.M)
    return sum(float(n) for n in scheduled), sum(float(seconds) for seconds in views)


class Window(NamedTuple):
    """One ``--interleave`` window: "on", "off" or "warm-up", pods scheduled a second, and per pod
    the milliseconds of CPU of ``serve``, of its UI views and of the browser; the UI's requests in
    the window and its seconds."""

    state: str
    rate: float
    cpu: float
    views: float
    browser: float
    requests: int
    seconds: float


#: One ``--interleave`` window as printed: its number, "on", "off" or "warm-up", then the figures.
WINDOW_LINE = re.compile(
    r"^window \d+ (?P<state>on|off|warm-up): (?P<rate>[\d.]+) pods/s, serve (?P<cpu>[\d.]+) ms CPU/pod, "
    r"UI views (?P<views>[\d.]+) ms/pod, browser (?P<browser>[\d.]+) ms/pod, (?P<requests>\d+) UI requests, "
    r"(?P<seconds>[\d.]+) s$"
)


def interleave(
    window: float,
    pairs: int,
    view: str,
    port: int,
    pin: bool = True,
    warmup: int = 2,
    seed: int | None = None,
) -> None:
    """One ``serve`` (1,000 nodes), one load test long enough for every window, and ``view``
    switched on and off in windows of ``window`` seconds: ``pairs`` pairs, each on/off or off/on by
    a coin flip, after ``warmup`` windows that are dropped. Per window the pods scheduled per
    second and ``serve``'s CPU per pod, read at each boundary; each on-window is set against the
    off-windows next to it, so that the machine's slow phases, longer than a window, cancel."""
    import random

    serve_cores, other_cores = cores(pin)
    if other_cores is not None:
        os.sched_setaffinity(0, other_cores)
        print(f"serve pinned to cores {sorted(serve_cores or ())}, the rest to {sorted(other_cores)}")
    rng = random.Random(seed)
    states: list[bool | None] = [None] * warmup
    for _ in range(pairs):
        first = rng.random() < 0.5
        states += [first, not first]
    # More pods than the windows can take at 2,000 a second; the load is stopped after the last.
    pods = int(2000 * window * len(states)) + 20_000
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        log = Path(tmp) / "serve.log"
        serve = start_serve(data, log, port, ["--node-pods", str(pods // 1000 + 10)], serve_cores)
        holder = load = None
        windows: list[Window] = []
        try:
            wait_for_ui(serve, log)
            base = f"https://127.0.0.1:{port}"
            token = read_token(data)
            hold_cmd = [sys.executable, __file__, "--hold", base, str(data), "--view", view, "--control"]
            if view == "poll":
                hold_cmd = [sys.executable, __file__, "--poll", base, str(data), "--control"]
            holder = subprocess.Popen(
                hold_cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=os.environ,
                preexec_fn=None if serve_cores is None else low_priority,
            )
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdout.readline()  # "holding the … view open"

            def switch(on: bool) -> int:
                assert holder is not None and holder.stdin is not None and holder.stdout is not None
                holder.stdin.write("on\n" if on else "off\n")
                holder.stdin.flush()
                return int(holder.stdout.readline().split()[1])

            switch(False)
            load_cmd = [sys.executable, "-m", "kubesched.apiserver.loadgen", "--server", base]
            load_cmd += ["--data-dir", str(data), "--pods", str(pods), "--timeout", "7200"]
            load = subprocess.Popen(load_cmd, stdout=subprocess.DEVNULL, env=os.environ)
            while serve_counts(base, token)[0] < 100:
                time.sleep(0.2)
            print(
                f"{view}: {len(states)} windows of {window:g} s ({warmup} dropped), "
                f"one load of up to {pods} pods",
                flush=True,
            )
            samples: list[tuple[float, float, float, float, float]] = []
            made: list[int] = []

            def window_done(i: int) -> None:
                """Window ``i`` (from 0), printed as it ends, so that a sitting cut short keeps it."""
                (t0, cpu0, n0, ui0, b0), (t1, cpu1, n1, ui1, b1) = samples[i], samples[i + 1]
                pods_in = max(n1 - n0, 1.0)
                state = states[i]
                name = "warm-up" if state is None else "on" if state else "off"
                per_pod = 1000 / pods_in
                one = Window(
                    name,
                    pods_in / (t1 - t0),
                    (cpu1 - cpu0) * per_pod,
                    (ui1 - ui0) * per_pod,
                    (b1 - b0) * per_pod,
                    made[i + 1],
                    t1 - t0,
                )
                windows.append(one)
                print(
                    f"window {i + 1} {name}: {one.rate:.1f} pods/s, serve {one.cpu:.4f} ms CPU/pod, "
                    f"UI views {one.views:.5f} ms/pod, browser {one.browser:.4f} ms/pod, "
                    f"{one.requests} UI requests, {one.seconds:.2f} s",
                    flush=True,
                )

            for i, state in enumerate([*states, False]):
                # Read before the switch: a view sends its first request as it is shown (the
                # catch-up over the changes while it was hidden), which belongs to the window it opens.
                scheduled, views = serve_counts(base, token)
                samples.append(
                    (time.monotonic(), cpu_seconds(serve.pid), scheduled, views, tree_cpu_seconds(holder.pid))
                )
                made.append(switch(bool(state)))
                if i > 0:
                    window_done(i - 1)
                if load.poll() is not None:
                    print("the load ended before the last window", flush=True)
                    break
                if i < len(states):
                    # Timed from this window's first reading, so that a slow switch does not
                    # shorten the window after it.
                    time.sleep(max(0.0, samples[-1][0] + window - time.monotonic()))
        finally:
            for process in (load, holder):
                if process is not None:
                    process.terminate()
                    process.wait()
            serve.terminate()
            serve.wait()
    interleave_report(windows)


def interleave_report(windows: list[Window]) -> None:
    """Per state the spread of the windows' figures; each on-window over the mean of the
    off-windows next to it (the paired ratio), their median and a 95 % bootstrap interval; the
    UI views' share of ``serve``'s CPU per on-window. Warm-up windows are left out."""
    states = [w[0] for w in windows]
    for state in ("on", "off"):
        mine = [w for w in windows if w[0] == state]
        if not mine:
            continue
        print(f"{state} pods/s: {describe([w[1] for w in mine], '.0f')}")
        print(f"{state} serve CPU ms/pod: {describe([w[2] for w in mine], '.4f')}")
        print(f"{state} UI requests per window: {describe([float(w[5]) for w in mine], '.1f')}")
        print(f"{state} browser CPU ms/pod: {describe([w[4] for w in mine], '.4f')}")
        shares = [w[3] / w[2] * 100 for w in mine if w[2]]
        print(f"{state} serve's UI views, % of serve's CPU: {describe(shares, '.2f')}")
    # The views' work comes in lumps (a catch-up over the changes since the last one, which an
    # off-window leaves for the next request), so its share is taken over the whole sitting.
    pods = {state: sum(w.rate * w.seconds for w in windows if w.state == state) for state in ("on", "off")}
    serve_ms = {s: sum(w.cpu * w.rate * w.seconds for w in windows if w.state == s) for s in pods}
    views_ms = {s: sum(w.views * w.rate * w.seconds for w in windows if w.state == s) for s in pods}
    if serve_ms["on"] and serve_ms["off"]:
        views_all = views_ms["on"] + views_ms["off"]
        print(
            f"serve's UI views over the sitting: {views_all:.0f} ms of CPU "
            f"({views_ms['on']:.0f} in on-windows), "
            f"{views_all / (serve_ms['on'] + serve_ms['off']) * 100:.2f} % of serve's CPU, "
            f"{views_all / serve_ms['on'] * 100:.2f} % of its CPU in the on-windows; "
            f"{pods['on'] + pods['off']:.0f} pods"
        )
    for what, values in (
        ("pods/s", [w.rate for w in windows]),
        ("serve CPU ms/pod", [w.cpu for w in windows]),
    ):
        ratios = []
        for i, state in enumerate(states):
            if state != "on":
                continue
            near = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(windows) and states[j] == "off"]
            if near:
                ratios.append(values[i] / statistics.fmean(near))
        if len(ratios) < 2:
            continue
        low, high = bootstrap_median(ratios)
        print(
            f"on vs adjacent off, {what}: median {(statistics.median(ratios) - 1) * 100:+.2f} % "
            f"(95 % bootstrap {(low - 1) * 100:+.2f} to {(high - 1) * 100:+.2f} %; "
            f"mean {(statistics.fmean(ratios) - 1) * 100:+.2f} %, n {len(ratios)})"
        )


def catch_up_cost(pods: int, rate: int = 1400, nodes: int = 1000, runs: int = 9) -> None:
    """In-process: the CPU microseconds per pod each view costs the server under a load test's
    changes (per pod: created, bound, running, and an Event; ``rate`` pods a second, the view
    brought up to date and answered once a second, as an open page asks), through the same
    catch-up from the store's changes as in ``serve``, with ``serve``'s collector settings."""
    import copy

    import orjson

    from kubesched.apiserver.cluster_summary import Tally, catch_up
    from kubesched.apiserver.pod_list import PodRows, page
    from kubesched.runtime.collector import tune_collector
    from kubesched.store.base import EventType, WatchEvent

    tune_collector()

    class Changes:
        """What ``catch_up`` reads of a store: its changes after a resourceVersion."""

        def __init__(self) -> None:
            self.history: list[WatchEvent] = []
            self.resource_version = 0

        def changes_since(self, rv: int, limit: int = 10_000) -> list[WatchEvent]:
            return self.history[rv : rv + limit]  # resourceVersion n is the n-th change

        def list_with_version(self, kind: str) -> tuple[list[Any], int]:
            return [], 0

        def add(self, kind: str, kind_of: EventType, obj: dict[str, Any]) -> None:
            self.resource_version += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.resource_version)
            self.history.append(WatchEvent(kind_of, kind, obj))

    def one_run(view: str) -> float:
        store: Any = Changes()
        fresh: Any = Tally if view == "cluster" else PodRows
        follower = catch_up(store, None, fresh)
        spent = 0.0
        for first in range(0, pods, rate):
            for i in range(first, min(pods, first + rate)):
                meta = {"name": f"load-{i}", "namespace": "load", "creationTimestamp": "2026-01-01T00:00:00Z"}
                container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}
                pod: dict[str, Any] = {"metadata": meta, "spec": {"containers": [container]}, "status": {}}
                store.add("Pod", EventType.ADDED, pod)
                pod["spec"]["nodeName"] = f"node-{i % nodes}"
                store.add("Pod", EventType.MODIFIED, pod)
                scheduled = {"type": "PodScheduled", "status": "True"}
                pod["status"] = {"phase": "Running", "conditions": [scheduled]}
                store.add("Pod", EventType.MODIFIED, pod)
                store.add("Event", EventType.ADDED, {"metadata": {"name": f"e-{i}", "namespace": "load"}})
            started = time.thread_time()
            follower = catch_up(store, follower, fresh)
            follower.settle()
            orjson.dumps(follower.body() if view == "cluster" else page(follower, 0, 100, "", "name"))
            spent += time.thread_time() - started
        return spent / pods * 1e6

    for view in ("cluster", "pods"):
        costs = [one_run(view) for _ in range(runs)]
        listed = ", ".join(f"{c:.1f}" for c in costs)
        print(f"{view} view: {listed} us CPU per pod; median {statistics.median(costs):.1f}", flush=True)


def churn(nodes: int, pods: int, rounds: int = 5) -> None:
    """In-process: the milliseconds the server spends, per second of a 300 pods/s load (300 pods
    created and 300 bound), bringing the Pods view's rows and the Cluster view's sums up to date
    and answering a page and a summary, over ``pods`` pods on ``nodes`` nodes."""
    from kubesched.apiserver.cluster_summary import Tally
    from kubesched.apiserver.pod_list import PodRows, page

    def made(i: int, node: str = "") -> dict[str, Any]:
        return {
            "metadata": {"namespace": "default", "name": f"p-{i}", "creationTimestamp": "2026-01-01T00:00Z"},
            "spec": {
                **({"nodeName": node} if node else {}),
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            },
            "status": {"phase": "Running" if node else "Pending"},
        }

    base = [made(i, f"node-{i % nodes}") for i in range(pods)]
    rows = PodRows(base, 1)
    tally = Tally(base, 1)
    page(rows, 0, 100, "", "name")
    tally.body()
    views: tuple[tuple[str, Callable[[], object], PodRows | Tally], ...] = (
        ("Pods view rows + page", lambda: page(rows, 0, 100, "", "name"), rows),
        ("Cluster view sums + summary", tally.body, tally),
    )
    for name, answer, follower in views:
        costs = []
        for r in range(rounds):
            first = pods + r * 300
            changes = [made(first + i) for i in range(300)]
            changes += [made(first + i, f"node-{i % nodes}") for i in range(300)]
            started = time.perf_counter()
            for pod in changes:
                follower.put(pod)
            answer()
            costs.append((time.perf_counter() - started) * 1000)
        listed = ", ".join(f"{c:.1f}" for c in costs)
        print(f"{name}: {listed} ms; median {statistics.median(costs):.1f} ms", flush=True)


def read_token(data: Path) -> str:
    """The bearer token from the kubeconfig ``serve`` wrote."""
    config = yaml.safe_load((data / "kubeconfig").read_text())
    return str(config["users"][0]["user"]["token"])


if __name__ == "__main__":
    main()
