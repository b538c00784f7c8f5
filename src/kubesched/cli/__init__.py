"""The ``kubesched`` command line: global flags, one subcommand per module of this package
(:mod:`.simulate`, :mod:`.explain`, :mod:`.bench`, :mod:`.serve`, :mod:`.run`, :mod:`.experiment`),
their shared flags and exit codes in :mod:`.options`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kubesched import __version__
from kubesched.cli import bench, experiment, explain, run, serve, simulate, snapshot
from kubesched.cli.options import EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, EXIT_UNSCHEDULABLE
from kubesched.errors import InputError
from kubesched.metrics.logs import configure_logging
from kubesched.runtime.collector import tune_collector

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_UNSCHEDULABLE",
    "build_parser",
    "entry",
    "main",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubesched", description="A Kubernetes scheduler in Python.")
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument(
        "--logging-format",
        choices=("text", "json"),
        default="text",
        help="log lines as text, or as one JSON object each (as Kubernetes components' json format)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (simulate, explain, bench, serve, run, snapshot, experiment):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(logging.WARNING - 10 * min(args.verbose, 2), args.logging_format)
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


def entry() -> None:
    """The ``kubesched`` command: the process's collector tuned for scheduling, then :func:`main`."""
    tune_collector()
    sys.exit(main())
