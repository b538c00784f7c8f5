"""Reading Volcano plugin arguments as Volcano's ``Arguments`` getters do.

The conf's YAML gives each argument a type: an integer, a float, a bool or a string. Volcano's
``GetInt`` takes an integer only, ``GetFloat64`` a float or an integer, ``GetBool`` a bool or a
string Go's ``strconv.ParseBool`` reads; anything else is logged and the default kept, so a conf
with a mistyped argument still loads and runs (a quoted number does not count as one).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)

#: Arguments already reported: plugins are built every session, and each would repeat it.
_reported: set[tuple[str, str, str]] = set()

#: What Go's ``strconv.ParseBool`` accepts.
_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


#: While a conf is loaded: its file, the plugin's place in it (``tiers[1].plugins[3]``) and the list
#: its warnings go to.
_where: ContextVar[tuple[str, str, list[str]] | None] = ContextVar("batch_plugin_arguments", default=None)


@contextmanager
def arguments_of(source: str, field: str, warnings: list[str]) -> Iterator[None]:
    """Report what the getters cannot read as warnings naming ``source`` and the argument's full path
    under ``field``, instead of a log line (a conf's plugins are built once when it is loaded)."""
    token = _where.set((source, field, warnings))
    try:
        yield
    finally:
        _where.reset(token)


def _ignored(plugin: str, key: str, value: Any, kind: str) -> None:
    entry = (plugin, key, repr(value))
    where = _where.get()
    if where is not None:
        source, field, warnings = where
        _reported.add(entry)  # told at load: the sessions' builds stay quiet
        warnings.append(
            f"{source}: {field}.arguments.{key}: could not read {value!r} as {kind}; the default is kept"
        )
        return
    if entry not in _reported:
        _reported.add(entry)
        log.warning("%s.arguments.%s: could not read %r as %s; the default is kept", plugin, key, value, kind)


def get_int(args: Mapping[str, Any], key: str, default: int, *, plugin: str) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    _ignored(plugin, key, value, "an integer")
    return default


def get_float(args: Mapping[str, Any], key: str, default: float, *, plugin: str) -> float:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    _ignored(plugin, key, value, "a number")
    return default


def get_bool(args: Mapping[str, Any], key: str, default: bool, *, plugin: str) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _BOOLS:
        return _BOOLS[value]
    _ignored(plugin, key, value, "true or false")
    return default
