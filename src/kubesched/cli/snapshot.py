"""``kubesched snapshot``: a running cluster's scheduling state as manifests for ``simulate``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import yaml

from kubesched.cli.options import EXIT_OK, EXIT_RUN_FAILED
from kubesched.errors import InputError


def add_parser(sub: Any) -> None:
    snap = sub.add_parser(
        "snapshot",
        help="write a cluster's nodes, pods and scheduling objects as manifests simulate reads",
        description=(
            "List every kind the scheduler follows (read-only; deploy/snapshot-rbac.yaml grants it) and "
            "write each as a manifest file in DIR, less what scheduling never reads (docs/snapshot.md). "
            "`kubesched simulate DIR` then keeps running pods where they are and schedules pending ones."
        ),
    )
    snap.add_argument("-o", "--output-dir", required=True, metavar="DIR", help="directory to write into")
    snap.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the pod's service account)",
    )
    snap.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    snap.add_argument(
        "--anonymise",
        action="store_true",
        help="replace names and label values by a keyed hash, consistently (docs/snapshot.md)",
    )
    snap.add_argument(
        "--anonymise-key",
        metavar="TEXT",
        help="key of the hash (default: random, so two snapshots do not share names)",
    )
    snap.add_argument("--kube-api-qps", type=float, default=50.0, help="client QPS (default 50)")
    snap.add_argument("--kube-api-burst", type=int, default=100, help="client burst (default 100)")
    snap.set_defaults(func=cmd_snapshot)


def cmd_snapshot(args: argparse.Namespace) -> int:
    from kubesched.remote.client import ApiClient
    from kubesched.remote.config import load_client_config_async
    from kubesched.remote.discovery import Discovery
    from kubesched.remote.snapshot import Anonymiser, take_snapshot
    from kubesched.store.base import StoreError

    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory", file=str(out))
    anonymiser = None
    if args.anonymise or args.anonymise_key:
        anonymiser = Anonymiser(args.anonymise_key.encode() if args.anonymise_key else None)

    async def take() -> Any:
        config = await load_client_config_async(args.kubeconfig, args.context)
        client = await ApiClient.connect(config, qps=args.kube_api_qps, burst=args.kube_api_burst)
        async with client:
            discovery = await Discovery.discover(client)
            return await take_snapshot(client, discovery, anonymiser=anonymiser)

    try:
        snap = asyncio.run(take())
    except StoreError as exc:
        print(f"error: snapshot failed: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    out.mkdir(parents=True, exist_ok=True)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    written = []
    for i, (kind, objects) in enumerate(snap.ordered()):
        path = out / f"{i:02d}-{_file_stem(kind)}.yaml"
        with path.open("w", encoding="utf-8") as f:
            yaml.dump_all(objects, f, Dumper=dumper, sort_keys=False, default_flow_style=False)
        written.append(f"{len(objects)} {kind}")
    pending = sum(1 for p in snap.objects.get("Pod", ()) if not (p.get("spec") or {}).get("nodeName"))
    for warning in snap.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {', '.join(written) or 'nothing'} to {out} ({pending} pods pending", end="")
    print(f", {snap.finished_pods} finished pods left out)" if snap.finished_pods else ")")
    return EXIT_OK


def _file_stem(kind: str) -> str:
    """``pods``; a kind stored under a qualified name (``PodGroup.scheduling.k8s.io``) keeps its
    group (``podgroups.scheduling.k8s.io``)."""
    name, _, group = kind.partition(".")
    return f"{name.lower()}s.{group}" if group else f"{name.lower()}s"
