"""``kubesched serve``: a one-process cluster (API server, both schedulers, simulated nodes) for
kubectl."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.batch.conf_loader import load_batch_conf
from kubesched.cli.options import (
    EXIT_OK,
    EXIT_RUN_FAILED,
    feature_gates_flag,
    gated,
    plugin_flag,
    plugin_registry_of,
)
from kubesched.errors import InputError
from kubesched.framework.config import load_config, parse_feature_gates
from kubesched.gpu.cards import MAX_CARDS


def add_parser(sub: Any) -> None:
    serve = sub.add_parser(
        "serve", help="run a one-process cluster (API server, both schedulers, simulated nodes) for kubectl"
    )
    serve.add_argument("paths", nargs="*", metavar="FILE_OR_DIR", help="manifests to create at start")
    serve.add_argument("--nodes", type=int, default=0, help="simulated nodes to create (node-0 …)")
    serve.add_argument("--node-cpu", default="32", help="each simulated node's CPU (default 32)")
    serve.add_argument("--node-memory", default="256Gi", help="each simulated node's memory (default 256Gi)")
    serve.add_argument("--node-pods", default="110", help="each simulated node's pod capacity (default 110)")
    serve.add_argument("--zones", type=int, default=3, help="zones the simulated nodes are spread over")
    serve.add_argument(
        "--node-gpus", type=int, default=0, help="each simulated node's GPU cards (nvidia.com/gpu)"
    )
    serve.add_argument(
        "--node-gpu-model", default="", help="the simulated nodes' GPU model (label kubesched.io/gpu-model)"
    )
    serve.add_argument(
        "--no-dra-driver",
        action="store_true",
        help="do not run the simulated DRA driver gpu.kubesched.io (ResourceSlices for GPU nodes)",
    )
    serve.add_argument(
        "--dra-partitions",
        action="store_true",
        help="the DRA driver also offers each card as two half-card devices sharing its counters",
    )
    serve.add_argument(
        "--dra-sharing",
        action="store_true",
        help="the DRA driver offers each card as one device shared by milli-GPU (consumable capacity "
        "milli; needs the DRAConsumableCapacity gate)",
    )
    serve.add_argument("--data-dir", default=".kubesched", help="state, certificates and kubeconfig")
    serve.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=6443, help="port to listen on (0: any free one)")
    serve.add_argument(
        "--service-cluster-ip-range",
        default="10.0.0.0/24",
        metavar="CIDR",
        help="the CIDR Services' cluster IPs come from (default 10.0.0.0/24, as kube-apiserver's)",
    )
    serve.add_argument("--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file")
    serve.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch profile")
    serve.add_argument(
        "--no-auto-namespaces",
        action="store_true",
        help="refuse objects in missing namespaces (404, as kube-apiserver) instead of creating them",
    )
    serve.add_argument(
        "--no-schedulers",
        action="store_true",
        help="serve the API and the simulated nodes only; schedule with another scheduler (kubesched run)",
    )
    plugin_flag(serve)
    feature_gates_flag(serve)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from kubesched.apiserver.manifests import load_start_manifests
    from kubesched.apiserver.server import ServeOptions, StartupError, serve
    from kubesched.controllers.dradriver import DraDriverOptions

    if args.nodes < 0 or not 0 <= args.port <= 65535 or args.zones < 1:
        raise InputError("--nodes must be >= 0, --zones >= 1 and --port within 0..65535")
    try:
        service_cidr = str(ipaddress.ip_network(args.service_cluster_ip_range, strict=True))
    except ValueError as exc:
        raise InputError(f"--service-cluster-ip-range {args.service_cluster_ip_range}: {exc}") from None
    if not 0 <= args.node_gpus <= MAX_CARDS:
        raise InputError(f"--node-gpus must be within 0..{MAX_CARDS}")
    registry = plugin_registry_of(args)
    config = load_config(args.config, registry) if args.config else None
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    config = gated(config, gates, registry)
    batch_conf = load_batch_conf(args.batch_conf) if args.batch_conf else None
    served_gates = {**(config.feature_gates if config is not None else {}), **gates}
    # The manifests given at start are checked as the API will serve them: with its gates.
    DEFAULT_FEATURE_GATES.set_all(served_gates)
    objects, skipped = load_start_manifests(args.paths) if args.paths else ([], [])
    for warning in skipped:
        print(f"warning: {warning}", file=sys.stderr)
    options = ServeOptions(
        data_dir=Path(args.data_dir),
        address=args.address,
        port=args.port,
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        node_pods=args.node_pods,
        zones=args.zones,
        service_cidr=service_cidr,
        node_gpus=args.node_gpus,
        node_gpu_model=args.node_gpu_model,
        dra_driver=None
        if args.no_dra_driver
        else DraDriverOptions(partitions=args.dra_partitions, sharing=args.dra_sharing),
        objects=objects,
        config=config,
        batch_conf=batch_conf,
        auto_create_namespaces=not args.no_auto_namespaces,
        registry=registry,
        schedulers=not args.no_schedulers,
        feature_gates=served_gates,
    )
    try:
        serve(options)
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_OK
