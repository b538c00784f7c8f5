"""What the simulated kubelet's ``containerLogs`` endpoint answers. Its containers run no process and
write nothing, so a container's log is its simulated lifecycle, read from the pod's status: when the
pod was scheduled (and by whom), when the container started, and how it ended. The lines are served
as kubelet serves a container's output: plain text, optionally prefixed with their timestamps, cut
by ``tailLines``, ``sinceTime`` and ``limitBytes`` in kubelet's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: kubelet's ``timeFormatOut``: RFC 3339 with nanoseconds, always nine digits.
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.{nanos:09d}Z"


class LogUnavailable(Exception):
    """kubelet refuses the request (a 400 whose body is this message)."""


@dataclass(frozen=True, slots=True)
class LogLine:
    at: float
    text: str


@dataclass(frozen=True, slots=True)
class LogOptions:
    """The part of ``PodLogOptions`` the kubelet applies."""

    timestamps: bool = False
    tail_lines: int | None = None
    since: float | None = None
    limit_bytes: int | None = None


def parse_time(stamp: Any) -> float | None:
    """An RFC 3339 timestamp as seconds since the epoch; None if it is not one."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def format_time(at: float) -> str:
    whole = int(at)
    nanos = round((at - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, 0
    stamp = datetime.fromtimestamp(whole, UTC)
    return stamp.strftime(_TIME_FORMAT.format(nanos=nanos))


def container_log(pod: Mapping[str, Any], container: str, *, previous: bool = False) -> list[LogLine]:
    """The lines of ``container`` (a container of ``pod``) so far. Raises :class:`LogUnavailable`
    where kubelet would: a container not started yet, or ``previous`` (simulated containers never
    restart, so there is no earlier one)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    name = str(meta.get("name", ""))
    if previous:
        raise LogUnavailable(f'previous terminated container "{container}" in pod "{name}" not found')
    container_status = _status_of(status, container)
    init = container in _names(spec.get("initContainers"))
    phase = status.get("phase") or "Pending"
    if container_status is None and not (init and phase != "Pending") and phase != "Failed":
        reason = "PodInitializing" if _names(spec.get("initContainers")) and not init else "ContainerCreating"
        raise LogUnavailable(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    lines = [_scheduled(pod)]
    started_at = parse_time(status.get("startTime"))
    state = (container_status or {}).get("state") or {}
    if init and container_status is None:
        # The simulated kubelet starts a pod's containers at once: its init containers have run.
        at = started_at or lines[0].at
        text = f'kubesched: init container "{container}" started and completed (simulated)'
        lines.append(LogLine(at, text))
        return lines
    if container_status is None:
        # A pod the kubelet refused: none of its containers started.
        why = ": ".join(str(part) for part in (status.get("reason"), status.get("message")) if part)
        at = parse_time(_condition_time(status)) or lines[0].at
        lines.append(LogLine(at, f"kubesched: pod failed before container {container!r} started: {why}"))
        return lines
    running = state.get("running") or {}
    terminated = state.get("terminated") or {}
    started = parse_time(running.get("startedAt") or terminated.get("startedAt")) or started_at
    if started is not None:
        image = container_status.get("image") or _image(spec, container)
        lines.append(
            LogLine(
                started,
                f'kubesched: container "{container}" started (image {image}); the pod is simulated: '
                "no process runs, so the container writes no output",
            )
        )
    if terminated:
        finished = parse_time(terminated.get("finishedAt")) or started or lines[0].at
        how = f"exit code {terminated.get('exitCode', 0)}"
        if terminated.get("reason"):
            how += f" ({terminated['reason']})"
        lines.append(LogLine(finished, f'kubesched: container "{container}" terminated: {how}'))
    return lines


def is_finished(pod: Mapping[str, Any], container: str) -> bool:
    """Whether ``container`` will write no more lines (a follow ends there)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    state = (_status_of(status, container) or {}).get("state") or {}
    return bool(state.get("terminated"))


def render(lines: list[LogLine], options: LogOptions) -> bytes:
    """The body kubelet sends for ``lines``: the last ``tail_lines``, those since ``since``, each
    prefixed with its time when asked, cut at ``limit_bytes``."""
    if options.tail_lines is not None:
        lines = lines[len(lines) - options.tail_lines :] if options.tail_lines else []
    if options.since is not None:
        lines = [line for line in lines if line.at >= options.since]
    out = b"".join(render_line(line, options.timestamps) for line in lines)
    if options.limit_bytes is not None:
        out = out[: options.limit_bytes]
    return out


def render_line(line: LogLine, timestamps: bool) -> bytes:
    text = f"{format_time(line.at)} {line.text}\n" if timestamps else f"{line.text}\n"
    return text.encode()


def _scheduled(pod: Mapping[str, Any]) -> LogLine:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    node = spec.get("nodeName")
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            at = parse_time(condition.get("lastTransitionTime"))
            scheduler = spec.get("schedulerName") or "default-scheduler"
            if at is not None:
                return LogLine(at, f"kubesched: pod {where} scheduled to node {node} by {scheduler}")
    created = parse_time(meta.get("creationTimestamp")) or 0.0
    return LogLine(created, f"kubesched: pod {where} created bound to node {node} (spec.nodeName)")


def _condition_time(status: Mapping[str, Any]) -> Any:
    times = [c.get("lastTransitionTime") for c in status.get("conditions") or [] if isinstance(c, dict)]
    return max((t for t in times if isinstance(t, str)), default=None)


def _status_of(status: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or []:
            if isinstance(entry, dict) and entry.get("name") == container:
                return entry
    return None


def _names(containers: Any) -> list[str]:
    if not isinstance(containers, list):
        return []
    return [str(c.get("name")) for c in containers if isinstance(c, dict)]


def _image(spec: Mapping[str, Any], container: str) -> str:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict) and c.get("name") == container:
                return str(c.get("image") or "")
    return ""
