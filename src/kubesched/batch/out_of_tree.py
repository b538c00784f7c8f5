"""Out-of-tree batch plugins and actions run guarded: a bug in one must not stop the scheduler.

An out-of-tree session plugin sees the session through :class:`GuardedSession`, which wraps every
function it registers: when one raises, the session records a warning naming the plugin and the
function, and the call answers what leaves the decision to others or holds the job back — a predicate
rejects every node with ``batch plugin NAME failed: ...`` (the pod's message then names it), an order
function calls the two equal, a node order scores nothing, a ready function says not ready. The pods
stay pending and are tried again next session. ``on_session_open``/``on_session_close`` and an
action's ``execute`` that raise are reported the same way and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.batch.job_info import ABSTAIN
from kubesched.framework.types import FilterResult

log = logging.getLogger(__name__)


def _reject_all(plugin: str, exc: BaseException, args: tuple[Any, ...]) -> Any:
    table = args[1]
    return FilterResult.reject(
        np.ones(table.capacity, dtype=np.bool_), f"batch plugin {plugin} failed: {exc}"
    )


#: ``add_<kind>_fn`` → what a failing function of that kind answers (from its arguments).
_FALLBACKS: dict[str, Callable[[str, BaseException, tuple[Any, ...]], Any]] = {
    "job_order": lambda p, e, a: 0,
    "queue_order": lambda p, e, a: 0,
    "task_order": lambda p, e, a: 0,
    "predicate": _reject_all,
    "node_order": lambda p, e, a: np.zeros(len(a[2]), dtype=np.int64),
    "preemptable": lambda p, e, a: ([], ABSTAIN),
    "reclaimable": lambda p, e, a: ([], ABSTAIN),
    "overused": lambda p, e, a: False,
    "allocatable": lambda p, e, a: False,
    "preemptive": lambda p, e, a: False,
    "job_ready": lambda p, e, a: False,
    "job_pipelined": lambda p, e, a: ABSTAIN,
    "job_valid": lambda p, e, a: None,
    "job_enqueueable": lambda p, e, a: ABSTAIN,
    "job_enqueued": lambda p, e, a: None,
    "job_starving": lambda p, e, a: False,
    "victim_tasks": lambda p, e, a: [],
}


def _warn(ssn: Any, plugin: str, where: str, exc: BaseException) -> None:
    message = f"batch plugin {plugin} failed in {where}: {type(exc).__name__}: {exc}"
    log.warning("%s", message, exc_info=exc)
    warnings: list[str] = ssn.warnings
    if message not in warnings:
        warnings.append(message)


class GuardedSession:
    """The session as an out-of-tree plugin sees it: everything as is, but the functions it
    registers are wrapped (see the module docstring)."""

    def __init__(self, ssn: Any, plugin: str) -> None:
        object.__setattr__(self, "_ssn", ssn)
        object.__setattr__(self, "_plugin", plugin)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._ssn, attr)
        kind = attr[len("add_") : -len("_fn")] if attr.startswith("add_") and attr.endswith("_fn") else ""
        if kind not in _FALLBACKS:
            return value
        fallback = _FALLBACKS[kind]

        def add(name: str, fn: Callable[..., Any], *rest: Any, **kw: Any) -> Any:
            if kind in ("predicate", "job_order"):
                # A predicate's mask function and a job order's sort key answer the same as the
                # function itself: drop them, so that only the guarded function is called.
                rest, kw = (), {}
            return value(name, self._guard(kind, fn, fallback), *rest, **kw)

        return add

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._ssn, attr, value)

    def _guard(
        self,
        kind: str,
        fn: Callable[..., Any],
        fallback: Callable[[str, BaseException, tuple[Any, ...]], Any],
    ) -> Callable[..., Any]:
        ssn, plugin = self._ssn, self._plugin

        def guarded(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception as exc:
                _warn(ssn, plugin, f"its {kind} function", exc)
                return fallback(plugin, exc, args)

        return guarded


class GuardedPlugin:
    """An out-of-tree session plugin, opened and closed on a :class:`GuardedSession`."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.name: str = plugin.name

    def on_session_open(self, ssn: Any) -> None:
        try:
            self.plugin.on_session_open(GuardedSession(ssn, self.name))
        except Exception as exc:
            _warn(ssn, self.name, "on_session_open", exc)

    def on_session_close(self, ssn: Any) -> None:
        try:
            self.plugin.on_session_close(GuardedSession(ssn, self.name))
        except Exception as exc:
            _warn(ssn, self.name, "on_session_close", exc)


class GuardedAction:
    """An out-of-tree action whose failure is reported, not raised: the session goes on."""

    def __init__(self, action: Any) -> None:
        self.action = action
        self.name: str = action.name

    def execute(self, ssn: Any) -> None:
        try:
            self.action.execute(ssn)
        except Exception as exc:
            _warn(ssn, self.name, "execute", exc)
