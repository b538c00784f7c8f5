"""Log records as one JSON object per line, in the shape of Kubernetes components'
``--logging-format=json`` (component-base's zap-based logger).

Each line has ``ts`` (Unix seconds), ``caller`` (``module/file.py:line``), ``msg`` and ``v`` (the
verbosity: 0 for records at INFO and above, 4 for DEBUG), the ``logger`` name, and ``err`` with
the exception for records that carry one. Warnings and errors also say their ``level`` (klog's
JSON output marks errors by ``err`` only; the level keeps warnings apart).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

#: Python level → klog verbosity in the ``v`` field.
_VERBOSITY = {logging.DEBUG: 4}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        path = record.pathname.replace("\\", "/")
        caller = "/".join(path.split("/")[-2:])
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "caller": f"{caller}:{record.lineno}",
            "msg": record.getMessage(),
            "v": _VERBOSITY.get(record.levelno, 0),
            "logger": record.name,
        }
        if record.levelno >= logging.WARNING:
            out["level"] = record.levelname.lower()
        if record.exc_info:
            out["err"] = self.formatException(record.exc_info)
        return orjson.dumps(out).decode()


def configure_logging(level: int, logging_format: str) -> None:
    """Root logging at ``level`` to stderr, as ``text`` (``LEVEL logger: message``) or ``json``."""
    handler = logging.StreamHandler()
    if logging_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


__all__ = ["JsonFormatter", "configure_logging"]
