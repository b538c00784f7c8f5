"""``kubesched explain``: simulate, then show why one pod went where it went (or nowhere)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

from kubesched.api.manifests import load_manifests
from kubesched.batch.conf_loader import load_batch_conf
from kubesched.cli.options import (
    EXIT_OK,
    count_flag,
    dra_driver_flags,
    dra_driver_of,
    feature_gates_flag,
    gated,
    plugin_flag,
    plugin_registry_of,
    seed_flag,
)
from kubesched.errors import InputError
from kubesched.framework.config import load_config, parse_feature_gates
from kubesched.sim.batch_output import explain_batch_pod
from kubesched.sim.simulation import Simulation


def add_parser(sub: Any) -> None:
    explain = sub.add_parser(
        "explain", help="simulate, then show why one pod went where it went (or nowhere)"
    )
    explain.add_argument(
        "paths", nargs="+", metavar="FILE_OR_DIR", help="manifest files or directories; - for stdin"
    )
    explain.add_argument(
        "--pod", required=True, metavar="NS/NAME", help="the pod to explain (namespace default if omitted)"
    )
    explain.add_argument("--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file")
    explain.add_argument("--seed", type=seed_flag, default=0, help="seed for random tie-breaks (default 0)")
    explain.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch profile")
    feature_gates_flag(explain)
    explain.add_argument(
        "--top", type=count_flag, default=5, help="how many top-scored nodes to show (default 5)"
    )
    dra_driver_flags(explain)
    plugin_flag(explain)
    explain.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    """Run the simulation with explain on, then show one pod's latest attempt."""
    from kubesched.scheduler.explain_view import render_explain

    registry = plugin_registry_of(args)
    config = load_config(args.config, registry) if args.config else None
    if args.feature_gates:
        config = gated(config, parse_feature_gates(args.feature_gates), registry)
    loaded = load_manifests(args.paths)
    batch_conf = load_batch_conf(args.batch_conf) if args.batch_conf else None
    sim = Simulation(
        config, registry, seed=args.seed, explain=True, batch_conf=batch_conf, dra_driver=dra_driver_of(args)
    )
    sim.load(loaded)
    result = sim.run()
    key = args.pod if "/" in args.pod else f"default/{args.pod}"
    outcome = next((o for o in result.outcomes if o.key == key), None)
    if outcome is None:
        known = ", ".join(o.key for o in result.outcomes[:10])
        raise InputError(
            f"no pending pod {key} in the input (pods: {known}{', …' if len(result.outcomes) > 10 else ''})"
        )
    console = Console()
    if outcome.explain is None and explain_batch_pod(result, outcome.namespace, outcome.name, console):
        console.print(f"{escape(outcome.key)}: {outcome.status} {escape(outcome.message)}", soft_wrap=True)
        return EXIT_OK
    render_explain(outcome, console, top=args.top)
    return EXIT_OK
