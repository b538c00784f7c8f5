"""Prometheus metrics of both schedulers, and the health and metrics HTTP endpoints.

- :mod:`~kubesched.metrics.kube`: the kube-scheduler's metric families (upstream names, labels,
  buckets) and the recording calls the scheduler, its queue and its frameworks make;
- :mod:`~kubesched.metrics.volcano`: the Volcano scheduler's families, recorded per session;
- :mod:`~kubesched.metrics.instrument`: timing a framework's extension points and plugins;
- :mod:`~kubesched.metrics.collectors`: gauges read at scrape time (queue sizes);
- :mod:`~kubesched.metrics.registry`: :class:`SchedulerMetrics`, one registry per scheduler process;
- :mod:`~kubesched.metrics.server`: ``/metrics``, ``/healthz``, ``/livez``, ``/readyz`` over HTTP;
- :mod:`~kubesched.metrics.logs`: the CLI's ``--logging-format json``.

``SchedulerMetrics`` is imported on first use, so that the CLI's logging setup does not load the
Prometheus client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesched.metrics.registry import CONTENT_TYPE, SchedulerMetrics

__all__ = ["CONTENT_TYPE", "SchedulerMetrics"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kubesched.metrics import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
