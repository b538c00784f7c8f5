"""Reading the Prometheus text a registry exposes, and the served cluster of tests/apiserver."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from tests.apiserver.conftest import cluster, make_cluster  # noqa: F401  (fixtures)


def samples(text: str | bytes, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample called ``name`` (a full sample name: ``x_total``, ``x_bucket``) in ``text``."""
    if isinstance(text, bytes):
        text = text.decode()
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


def sample(text: str | bytes, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` whose labels include ``labels`` (None when absent)."""
    for got, value in samples(text, name):
        if all(got.get(k) == v for k, v in labels.items()):
            return value
    return None


def bucket_bounds(text: str | bytes, histogram: str, **labels: str) -> list[str]:
    """The ``le`` bounds of one series of ``histogram``, as exposed."""
    return [
        got["le"]
        for got, _ in samples(text, f"{histogram}_bucket")
        if all(got.get(k) == v for k, v in labels.items())
    ]
