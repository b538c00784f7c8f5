"""The kube-scheduler's Prometheus metrics (upstream ``pkg/scheduler/metrics``), health checks and logs.

- :mod:`~kubesched.metrics.families`: counter and histogram families with upstream's label handling;
- :mod:`~kubesched.metrics.kube`: the kube-scheduler's metric families (upstream names, labels,
  buckets) and the recording calls the scheduler, its queue and its frameworks make;
- :mod:`~kubesched.metrics.instrument`: timing a framework's extension points and plugins;
- :mod:`~kubesched.metrics.health`: the checks behind ``/healthz``, ``/livez`` and ``/readyz``;
- :mod:`~kubesched.metrics.logs`: the CLI's ``--logging-format json``.

The Volcano scheduler's families are :mod:`kubesched.batch.metrics`; one process's registry of both,
and the endpoints that serve it, are :mod:`kubesched.runtime.metrics` and
:mod:`kubesched.runtime.health_server`.
"""
