"""What every ``kubesched`` command shares: exit codes, argparse value types, common flags, the plugin
registry ``--plugin`` builds and ``--feature-gates`` applied over a configuration."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kubesched.api.durations import parse_duration
from kubesched.api.features import check_gate_dependencies
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig, default_config, with_feature_gates
from kubesched.framework.registry import Registry
from kubesched.runtime.plugin_loading import plugin_registry

EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_BAD_INPUT = 2
#: ``kubesched run`` could not reach or list the cluster, or scheduling stopped on an error.
EXIT_RUN_FAILED = 1


def int_flag(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type for integers in ``[minimum, maximum]``; out of range is a usage error (exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{upper}, got {value}")
        return value

    return parse


count_flag = int_flag(0)

positive_flag = int_flag(1)

#: Seeds are unsigned 64-bit numbers, what NumPy's generators take.
seed_flag = int_flag(0, 2**64 - 1)


def bool_flag(text: str) -> bool:
    """A Go-style boolean flag value (``--leader-elect=false``)."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes", "on"):
        return True
    if value in ("0", "f", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def duration_flag(text: str) -> float:
    """A Go duration (``15s``, ``1m30s``) or seconds; a usage error (exit 2) when malformed."""
    try:
        return parse_duration(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def qps_flag(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def plugin_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE:CLASS",
        help="register an out-of-tree plugin class (repeatable); enable it by name in --config. "
        "Installed packages' kubesched.plugins entry points are registered too",
    )


def feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="feature gates, as kube-scheduler takes them (e.g. OpportunisticBatching=false)",
    )


def dra_driver_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dra-driver",
        action="store_true",
        help="run the simulated DRA driver gpu.kubesched.io: ResourceSlices for the GPU nodes (docs/dra.md)",
    )
    parser.add_argument(
        "--dra-partitions",
        action="store_true",
        help="with --dra-driver: each card also as two half-card devices sharing its counters",
    )
    parser.add_argument(
        "--dra-sharing",
        action="store_true",
        help="with --dra-driver: each card one device shared by milli-GPU (consumable capacity "
        "milli; needs --feature-gates DRAConsumableCapacity=true; docs/dra.md)",
    )


def sweep_engine_flags(parser: argparse.ArgumentParser, what: str, default: str) -> None:
    """``--workers`` and ``--cluster``: where the sweep engine runs ``what`` (kubesched.sim.sweep_engine)."""
    parser.add_argument(
        "--workers",
        "--jobs",
        dest="workers",
        type=int,
        default=None,
        metavar="N",
        help=f"worker processes of the local Dask cluster {what} run on (default: {default})",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help=f"run {what} on this existing Dask scheduler (tcp://host:8786) instead of a local cluster",
    )


def dra_driver_of(args: argparse.Namespace) -> DraDriverOptions | None:
    """The simulated driver's options when ``--dra-driver``, ``--dra-partitions`` or ``--dra-sharing``
    is given."""
    if args.dra_driver or args.dra_partitions or args.dra_sharing:
        return DraDriverOptions(partitions=args.dra_partitions, sharing=args.dra_sharing)
    return None


def plugin_registry_of(args: argparse.Namespace) -> Registry:
    """In-tree plugins, the installed ``kubesched.plugins`` entry points and every ``--plugin``."""
    return plugin_registry(args.plugin or ())


def gated(
    config: SchedulerConfig | None, gates: dict[str, bool], registry: Registry
) -> SchedulerConfig | None:
    """``config`` (or the default one) with ``--feature-gates`` over its ``featureGates``."""
    if not gates:
        return config
    base = config or default_config(registry)
    check_gate_dependencies({**base.feature_gates, **gates})
    return with_feature_gates(base, gates, registry)
