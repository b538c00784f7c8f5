"""``--logging-format json``: one JSON object per log line, in the shape of Kubernetes components'."""

from __future__ import annotations

import json
import logging
import sys

from kubesched.cli import build_parser
from kubesched.metrics.logs import JsonFormatter


def record(level: int, msg: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("bad value")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord(
        "kubesched.scheduler", level, "/x/kubesched/scheduler/scheduler.py", 42, msg, args, exc_info
    )


def test_a_record_is_one_json_object() -> None:
    line = JsonFormatter().format(record(logging.INFO, "bound %s to %s", "default/web", "node-1"))
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["msg"] == "bound default/web to node-1"
    assert (
        obj["v"] == 0
        and obj["caller"] == "scheduler/scheduler.py:42"
        and obj["logger"] == "kubesched.scheduler"
    )
    assert isinstance(obj["ts"], float) and "level" not in obj and "err" not in obj


def test_debug_is_verbosity_4_and_errors_carry_the_exception() -> None:
    assert json.loads(JsonFormatter().format(record(logging.DEBUG, "details")))["v"] == 4
    obj = json.loads(JsonFormatter().format(record(logging.ERROR, "failed", exc=True)))
    assert obj["level"] == "error" and "ValueError: bad value" in obj["err"]


def test_the_cli_takes_the_format() -> None:
    parser = build_parser()
    assert parser.parse_args(["--logging-format", "json", "simulate", "x"]).logging_format == "json"
    assert parser.parse_args(["simulate", "x"]).logging_format == "text"
