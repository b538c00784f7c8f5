"""Health checks answered as Kubernetes components answer ``/healthz``, ``/livez`` and ``/readyz``.

Each endpoint runs its named checks (``ping`` always passes and is always first):

- all pass: ``200 ok``; with ``?verbose`` one line per check (``[+]ping ok``) and
  ``<endpoint> check passed``;
- one fails (returns False or raises): ``500``, always with the per-check lines (``[-]name failed:
  reason withheld``; the reason is logged, not served) and ``<endpoint> check failed``;
- ``?exclude=name`` (repeatable) skips a check (``[+]name excluded: ok``);
- ``/<endpoint>/<name>`` runs one check: ``200 ok``, ``500 internal server error: <name> check
  failed``, or ``404`` for a name that is not a check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

log = logging.getLogger(__name__)

#: A named check: True when healthy. It runs on the HTTP server's thread, so it should only read
#: (a flag, a thread's liveness), never wait.
Check = Callable[[], bool]

ENDPOINTS = ("healthz", "livez", "readyz")


def _passes(name: str, check: Check) -> bool:
    try:
        return bool(check())
    except Exception:
        log.exception("health check %s raised", name)
        return False


def with_ping(checks: Mapping[str, Check]) -> dict[str, Check]:
    """``checks`` after upstream's ``ping`` check (which always passes)."""
    out: dict[str, Check] = {"ping": lambda: True}
    out.update(checks)
    return out


def health_response(
    endpoint: str,
    checks: Mapping[str, Check],
    *,
    check: str | None = None,
    verbose: bool = False,
    exclude: Iterable[str] = (),
) -> tuple[int, str]:
    """The status code and body of ``GET /<endpoint>[/<check>]``; ``checks`` in the order they
    are listed (see :func:`with_ping`)."""
    if check is not None:
        fn = checks.get(check)
        if fn is None:
            return 404, "404 page not found\n"
        if _passes(check, fn):
            return 200, "ok"
        return 500, f"internal server error: {check} check failed\n"
    excluded = set(exclude)
    lines: list[str] = []
    failed = False
    for name, fn in checks.items():
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
        elif _passes(name, fn):
            lines.append(f"[+]{name} ok")
        else:
            lines.append(f"[-]{name} failed: reason withheld")
            log.warning("%s check %s failed", endpoint, name)
            failed = True
    unknown = sorted(excluded - set(checks))
    if unknown:
        lines.append(f"warn: some health checks cannot be excluded: no matches for {', '.join(unknown)}")
    if failed:
        return 500, "\n".join([*lines, f"{endpoint} check failed"]) + "\n"
    if verbose:
        return 200, "\n".join([*lines, f"{endpoint} check passed"]) + "\n"
    return 200, "ok"


__all__ = ["ENDPOINTS", "Check", "health_response", "with_ping"]
