"""A small kube-scheduler HTTP extender (upstream extender/v1 protocol), standard library only.

Filter keeps the nodes that carry the label ``example.com/zone-ok=true`` and reports the others in
``FailedNodes``; prioritize prefers nodes whose ``example.com/speed`` label is higher (0..10).

    python examples/extender/label_extender.py --port 8888
    kubesched simulate examples/extender/cluster.yaml --config examples/extender/scheduler-config.yaml

It reads the labels from the Node objects the scheduler sends, so it is configured without
``nodeCacheCapable`` (an extender with that flag gets node names only and keeps its own node cache).
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ZONE_OK = "example.com/zone-ok"
SPEED = "example.com/speed"


def labels(node: dict[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    items = (args.get("Nodes") or {}).get("items") or []
    keep = [n for n in items if labels(n).get(ZONE_OK) == "true"]
    failed = {n["metadata"]["name"]: "node(s) are outside the allowed zones" for n in items if n not in keep}
    return {"Nodes": {"items": keep}, "FailedNodes": failed, "Error": ""}


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    items = (args.get("Nodes") or {}).get("items") or []
    out = []
    for n in items:
        try:
            speed = int(labels(n).get(SPEED, "0"))
        except ValueError:
            speed = 0
        out.append({"Host": n["metadata"]["name"], "Score": max(0, min(10, speed))})
    return out


VERBS = {"filter": filter_nodes, "prioritize": prioritize}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        handler = VERBS.get(verb)
        if handler is None:
            self.send_error(404, f"unknown verb {verb!r}")
            return
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        body = json.dumps(handler(args)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def serve(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888)
    serve(parser.parse_args().port).serve_forever()
