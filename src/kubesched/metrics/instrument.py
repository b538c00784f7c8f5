"""Timing a framework's extension points and plugins without touching its code paths.

:func:`instrument_framework` replaces, on one :class:`~kubesched.framework.runtime.Framework`
instance, each ``run_<point>`` method by a wrapper that times it and records
``scheduler_framework_extension_point_duration_seconds``, and each plugin's extension-point method
by a wrapper that times it (``scheduler_plugin_execution_duration_seconds``), put in place only
while cycles are sampled. A framework that is never instrumented (simulations, benchmarks) runs
its plain methods: metrics off cost nothing.

The status label comes from what the call returned (its :class:`Status`, or the Status in the
tuple it returned); a call that raises is recorded as ``Error`` and the exception goes on. A Filter
plugin answers for all nodes at once: its call is ``Success`` when it rejected none of the table's
nodes, else ``Unschedulable``.

Upstream records Filter per node and so has no Filter extension-point duration; neither is one
recorded here.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from kubesched.cache.node_table import NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import FilterResult
from kubesched.metrics.families import HistogramChild
from kubesched.metrics.kube import CODE_NAMES, KubeSchedulerMetrics

#: Framework method → upstream's extension_point label.
FRAMEWORK_POINTS = {
    "run_pre_enqueue": "PreEnqueue",
    "run_pre_filter": "PreFilter",
    "run_post_filter": "PostFilter",
    "run_pre_score": "PreScore",
    "run_score": "Score",
    "run_reserve": "Reserve",
    "run_unreserve": "Unreserve",
    "run_permit": "Permit",
    "run_pre_bind": "PreBind",
    "run_bind": "Bind",
    "run_post_bind": "PostBind",
}

#: Framework plugin list → (plugin method, extension_point label) for the plugins in it.
PLUGIN_POINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "pre_enqueue": (("pre_enqueue", "PreEnqueue"),),
    "pre_filter": (("pre_filter", "PreFilter"),),
    "pre_filter_extensions": (
        ("add_pod", "PreFilterExtensionAddPod"),
        ("remove_pod", "PreFilterExtensionRemovePod"),
    ),
    "filter": (("filter_nodes", "Filter"), ("filter_rows", "Filter")),
    "post_filter": (("post_filter", "PostFilter"),),
    "pre_score": (("pre_score", "PreScore"),),
    "reserve": (("reserve", "Reserve"), ("unreserve", "Unreserve")),
    "permit": (("permit", "Permit"),),
    "pre_bind": (("pre_bind", "PreBind"),),
    "bind": (("bind", "Bind"),),
    "post_bind": (("post_bind", "PostBind"),),
}

_INSTRUMENTED = "_kubesched_metrics"


def status_label(out: object) -> str:
    """The ``status`` label of a call that returned ``out``."""
    if isinstance(out, tuple):
        out = next((x for x in out if isinstance(x, Status)), None)
    if isinstance(out, Status):
        return CODE_NAMES.get(out.code, str(out.code))
    return "Success"


def filter_status_label(out: object, table: NodeTable) -> str:
    """A Filter plugin's call: ``Unschedulable`` when it rejected a node of the table."""
    if isinstance(out, FilterResult) and any((f.nodes & table.valid).any() for f in out.failures):
        return "Unschedulable"
    return status_label(out)


def _time_extension_point(
    fn: Callable[..., Any], point: str, profile: str, metrics: KubeSchedulerMetrics
) -> Callable[..., Any]:
    family = metrics.extension_point_duration
    by_status: dict[str, HistogramChild] = {}

    def observe(status: str, seconds: float) -> None:
        child = by_status.get(status)
        if child is None:
            child = by_status[status] = family.labels(point, status, profile)
        child.observe(seconds)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
        except Exception:
            observe("Error", time.perf_counter() - start)
            raise
        observe(status_label(out), time.perf_counter() - start)
        return out

    return timed


def _time_bind_later(
    fn: Callable[..., None], profile: str, metrics: KubeSchedulerMetrics
) -> Callable[..., None]:
    """The Bind extension point started without waiting: timed from its start until its result
    comes, as :func:`_time_extension_point` times ``run_bind``."""
    family = metrics.extension_point_duration

    @functools.wraps(fn)
    def timed(state: Any, pod: Any, node_name: str, done: Callable[[Any], None]) -> None:
        start = time.perf_counter()

        def finished(st: Any) -> None:
            family.labels("Bind", status_label(st), profile).observe(time.perf_counter() - start)
            done(st)

        fn(state, pod, node_name, finished)

    return timed


def _timed_plugin(
    fn: Callable[..., Any], plugin: str, point: str, metrics: KubeSchedulerMetrics
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
        except Exception:
            metrics.plugin(plugin, point, "Error", time.perf_counter() - start)
            raise
        seconds = time.perf_counter() - start
        if point == "Filter" and len(args) >= 3 and isinstance(args[2], NodeTable):
            metrics.plugin(plugin, point, filter_status_label(out, args[2]), seconds)
        else:
            metrics.plugin(plugin, point, status_label(out), seconds)
        return out

    return timed


class PluginTimers:
    """Timing wrappers for one framework's plugin methods, put on the plugin instances only while
    the scheduler's cycles are sampled: a cycle that is not sampled calls the plugins as they are."""

    def __init__(self, fwk: Framework, metrics: KubeSchedulerMetrics) -> None:
        self._fwk = fwk
        #: (plugin instance, method name, its own bound method, the timing wrapper)
        self._methods: list[tuple[object, str, Callable[..., Any], Callable[..., Any]]] = []
        self._normalizers: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = []
        seen: set[tuple[int, str]] = set()

        def add(pl: object, method: str, point: str) -> None:
            fn = getattr(pl, method, None)
            if fn is None or (id(pl), method) in seen:
                return
            seen.add((id(pl), method))
            try:
                # Its own method put back as an attribute: a plugin whose instances take no
                # attributes (slots) is found once here and is not timed.
                setattr(pl, method, fn)
            except (AttributeError, TypeError):
                return
            name = str(getattr(pl, "name", type(pl).__name__))
            self._methods.append((pl, method, fn, _timed_plugin(fn, name, point, metrics)))

        for attr, points in PLUGIN_POINTS.items():
            for pl in getattr(fwk, attr):
                for method, point in points:
                    add(pl, method, point)
        for pl, _weight in fwk.score:
            add(pl, "score_nodes", "Score")
        for name, fn in fwk._normalizers.items():
            self._normalizers.append((name, fn, _timed_plugin(fn, name, "ScoreExtensionNormalize", metrics)))

    def switch(self, on: bool) -> None:
        """Time the plugins' calls from now on (``on``) or stop timing them."""
        # Called on about a fifth of the cycles (each sampled one and the one after it): a plain
        # loop over the methods found settable when the timers were made.
        for pl, method, fn, timed in self._methods:
            setattr(pl, method, timed if on else fn)
        normalizers = self._fwk._normalizers
        for name, fn, timed in self._normalizers:
            normalizers[name] = timed if on else fn
        self._fwk.kept_scores_paused = on


def instrument_framework(fwk: Framework, metrics: KubeSchedulerMetrics) -> None:
    """Record ``fwk``'s extension points, and its plugins' calls in sampled cycles, in
    ``metrics``; a framework is instrumented once, later calls do nothing."""
    if getattr(fwk, _INSTRUMENTED, None) is not None:
        return
    setattr(fwk, _INSTRUMENTED, metrics)
    profile = fwk.profile_name
    for method, point in FRAMEWORK_POINTS.items():
        setattr(fwk, method, _time_extension_point(getattr(fwk, method), point, profile, metrics))
    fwk.run_bind_later = _time_bind_later(fwk.run_bind_later, profile, metrics)  # type: ignore[method-assign]
    timers = PluginTimers(fwk, metrics)
    timers.switch(metrics.sampled)
    metrics.sampling_switches.append(timers.switch)


__all__ = [
    "FRAMEWORK_POINTS",
    "PLUGIN_POINTS",
    "PluginTimers",
    "filter_status_label",
    "instrument_framework",
    "status_label",
]
