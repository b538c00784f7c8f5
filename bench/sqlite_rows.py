"""What the served store's SQLite statements cost per pod, by table layout and page size.

The write mix of ``kubesched serve`` under the load generator, written the way the store writes
it (one multi-row ``INSERT OR REPLACE`` a commit, WAL, exclusive locking, ``synchronous=NORMAL``)
into a database that already holds 1,000 nodes and their leases: each pod created, bound and set
Running (three writes of one row that grows a little each time), one Event per pod, and a lease
renewal every twentieth pod. Prints the process CPU per pod, median of the rounds:

    python bench/sqlite_rows.py                       # 1.2 KB pods, 8 rows a commit
    python bench/sqlite_rows.py --pod-bytes 2400 --rows-per-commit 32
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

COLUMNS = (
    "kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, rv INTEGER NOT NULL, "
    "data BLOB NOT NULL, PRIMARY KEY (kind, namespace, name)"
)
UPSERT = "INSERT OR REPLACE INTO objects (kind, namespace, name, rv, data) VALUES"
LAYOUTS = {
    "rowid": f"CREATE TABLE objects ({COLUMNS})",
    "without-rowid": f"CREATE TABLE objects ({COLUMNS}) WITHOUT ROWID",
}


def _payload(size: int) -> bytes:
    return os.urandom(max(1, size // 2)).hex().encode()


def writes(pods: int, pod_bytes: int) -> list[tuple[str, str, str, bytes]]:
    created, bound, running = _payload(pod_bytes - 300), _payload(pod_bytes - 120), _payload(pod_bytes)
    event, lease = _payload(580), _payload(450)
    out: list[tuple[str, str, str, bytes]] = []
    for i in range(pods):
        out.append(("Pod", "default", f"load-{i}", created))
        if i >= 50:  # bound a little after it was created, with its event
            out.append(("Pod", "default", f"load-{i - 50}", bound))
            out.append(("Event", "default", f"load-{i - 50}.{i:016x}", event))
        if i >= 100:  # set Running at a later tick
            out.append(("Pod", "default", f"load-{i - 100}", running))
        if i % 20 == 0:
            out.append(("Lease", "kube-node-lease", f"node-{i % 1000}", lease))
    return out


def one_round(layout: str, page_size: int, pods: int, pod_bytes: int, per_commit: int) -> float:
    """CPU microseconds per pod of writing the mix."""
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(str(Path(tmp) / "state.db"), isolation_level=None)
        if page_size:
            db.execute(f"PRAGMA page_size={page_size}")
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(LAYOUTS[layout])
        node, lease = _payload(1650), _payload(450)
        insert = "INSERT INTO objects VALUES (?, ?, ?, ?, ?)"
        db.execute("BEGIN")
        for i in range(1000):
            db.execute(insert, ("Node", "", f"node-{i}", i, node))
            db.execute(insert, ("Lease", "kube-node-lease", f"node-{i}", i, lease))
        db.execute("COMMIT")
        mix = writes(pods, pod_bytes)
        rv = 2000
        start = time.process_time()
        for at in range(0, len(mix), per_commit):
            chunk = mix[at : at + per_commit]
            values: list[object] = []
            for kind, namespace, name, data in chunk:
                rv += 1
                values += (kind, namespace, name, rv, data)
            rows = ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
            db.execute(f"{UPSERT} {rows}", values)
        spent = time.process_time() - start
        db.close()
    return spent / pods * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--pod-bytes", type=int, default=1200, help="a running pod's stored JSON")
    parser.add_argument("--rows-per-commit", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cases = [
        ("without-rowid", 0),
        ("without-rowid", 8192),
        ("without-rowid", 16384),
        ("rowid", 0),
        ("rowid", 8192),
    ]
    results: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    for _ in range(args.rounds):  # the cases alternate within each round
        for layout, page in cases:
            results[(layout, page)].append(
                one_round(layout, page, args.pods, args.pod_bytes, args.rows_per_commit)
            )
    for (layout, page), runs in results.items():
        pages = f"{page // 1024} KB" if page else "default"
        print(
            f"{layout:14} pages {pages:8} {statistics.median(runs):6.1f} µs CPU per pod "
            f"({', '.join(f'{r:.0f}' for r in runs)})"
        )


if __name__ == "__main__":
    main()
