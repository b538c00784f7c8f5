"""Time the web UI's first Cluster drawing on a large served cluster, in headless Chromium.

    python scripts/ui_scale.py --nodes 5000 --pods 50000 [--runs 2]

Starts ``kubesched serve FILE --nodes N --no-schedulers`` (the kubesched found on ``PYTHONPATH``)
with the pods already bound round-robin, opens the printed one-time link and reports, from the
browser's Performance API, the milliseconds from navigation to the first drawing that counts
every node and pod, and each API answer's size and time. Needs Debian's ``chromium`` and
``chromium-driver`` and Selenium.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import yaml
from selenium import webdriver


def pods_file(path: Path, nodes: int, pods: int) -> None:
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": "default"},
            "spec": {
                "nodeName": f"node-{i % nodes}",
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


def first_drawing(base: str, token: str, nodes: int, pods: int) -> dict[str, Any]:
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
        time.sleep(3)
        heap = driver.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : 0")
        later = driver.execute_script('return document.getElementById("status").textContent')
        return {
            "first_ms": round(drawn[0]),
            "status": drawn[1],
            "later": later,
            "heap_mb": heap >> 20,
            "resources": resources,
        }
    finally:
        driver.quit()


def hold(base: str, token: str) -> None:
    driver = browser()
    try:
        driver.get(base + "/ui/")
        driver.execute_script("sessionStorage.setItem('kubesched-token', arguments[0])", token)
        driver.get(base + "/ui/")
        print("holding the Cluster view open", flush=True)
        while True:
            time.sleep(5)
            driver.execute_script("return 1")  # the page keeps running; the driver stays attached
    finally:
        driver.quit()


def poll(base: str, token: str) -> None:
    ctx = ssl._create_unverified_context()
    headers = {"Authorization": "Bearer " + token}

    def watch_nodes() -> None:
        with urlopen(Request(base + "/api/v1/nodes?watch=1", headers=headers), context=ctx) as answer:
            for _ in answer:
                pass

    threading.Thread(target=watch_nodes, daemon=True).start()
    rv = ""
    print("polling the summary", flush=True)
    while True:
        try:
            with urlopen(
                Request(f"{base}/kubesched/v1/cluster?resourceVersion={rv}", headers=headers), context=ctx
            ) as a:
                rv = json.loads(a.read())["resourceVersion"]
        except HTTPError as exc:
            if exc.code != 304:
                raise
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--port", type=int, default=18443)
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
    if args.poll:
        poll(args.poll[0], read_token(Path(args.poll[1])))
        return
    if args.hold:
        hold(args.hold[0], read_token(Path(args.hold[1])))
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
                print(json.dumps(first_drawing(base, token, args.nodes, args.pods)), flush=True)
        finally:
            serve.terminate()
            serve.wait()


def read_token(data: Path) -> str:
    """The bearer token from the kubeconfig ``serve`` wrote."""
    config = yaml.safe_load((data / "kubeconfig").read_text())
    return str(config["users"][0]["user"]["token"])


if __name__ == "__main__":
    main()
