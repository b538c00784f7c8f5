"""CronJobs (``batch/v1``): upstream's defaults (``concurrencyPolicy: Allow``, ``suspend: false``,
history limits 3 and 1), ``ValidateCronJob``'s rules (a standard five-field schedule or a
descriptor, a known time zone, a job template whose pods restart OnFailure or Never) and kubectl's
columns. :func:`parse_schedule` is what the CronJob controller runs the schedule with."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from croniter import croniter

from kubesched.api.durations import parse_duration
from kubesched.errors import InputError
from kubesched.registry.apps.daemonset import label_selector_text
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import (
    AGE,
    NAME,
    Column,
    Resource,
    Row,
    Strategy,
    age,
    human_duration,
    meta_of,
)
from kubesched.store.parsers import DEFAULT_PARSERS

Cause = tuple[str, str, str]
POLICIES = ("Allow", "Forbid", "Replace")
#: A CronJob's name leaves room for the 11 characters of its Jobs' suffix.
MAX_NAME = 52
#: robfig/cron's descriptors (``ParseStandard``).
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_TZ_PREFIX = re.compile(r"^\s*(CRON_)?TZ=")


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: a cron expression in a zone, or a fixed ``@every`` interval."""

    expression: str
    zone: tzinfo
    every: float | None = None

    def times_between(self, after: float, until: float, limit: int = 101) -> list[float]:
        """Schedule times in ``(after, until]``, oldest first, at most ``limit`` of them."""
        out: list[float] = []
        if self.every is not None:
            t = after - after % 1 + self.every
            while t <= until and len(out) < limit:
                out.append(t)
                t += self.every
            return out
        it = croniter(self.expression, datetime.fromtimestamp(after, self.zone))
        while len(out) < limit:
            t = it.get_next(datetime).timestamp()
            if t > until:
                break
            out.append(t)
        return out

    def next_after(self, after: float) -> float:
        if self.every is not None:
            return after - after % 1 + self.every
        return float(
            croniter(self.expression, datetime.fromtimestamp(after, self.zone)).get_next(datetime).timestamp()
        )


def parse_schedule(schedule: str, time_zone: str | None) -> Schedule:
    """The schedule as kube-controller-manager's cron library reads it; InputError if it cannot."""
    zone: tzinfo = UTC
    if time_zone:
        try:
            zone = zoneinfo.ZoneInfo(time_zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise InputError(f"unknown time zone {time_zone}: {exc}") from None
    text = schedule.strip()
    if text.startswith("@every "):
        try:
            every = parse_duration(text[len("@every ") :].strip())
        except InputError as exc:
            raise InputError(f"failed to parse duration {text}: {exc.message}") from None
        if every < 1:
            every = 1.0  # robfig/cron runs @every at one second at least
        return Schedule(text, zone, every)
    expression = _DESCRIPTORS.get(text, text)
    if expression.startswith("@"):
        raise InputError(f"unrecognized descriptor: {text}")
    fields = expression.split()
    if len(fields) != 5:
        raise InputError(f"expected exactly 5 fields, found {len(fields)}: {text}")
    if not croniter.is_valid(expression):
        raise InputError(f"failed to parse the schedule: {text}")
    return Schedule(expression, zone)


def set_defaults(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1


class CronJobStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (
        NAME,
        ("Schedule", "string", 0),
        ("Timezone", "string", 0),
        ("Suspend", "boolean", 0),
        ("Active", "integer", 0),
        ("Last Schedule", "string", 0),
        AGE,
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    )

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        set_defaults(obj)

    def validate(self, body: dict[str, Any]) -> None:
        name = str(body["metadata"].get("name", ""))
        causes = _causes(name, body.get("spec") or {})
        if causes:
            raise invalid("CronJob", "batch", name, causes)
        job = _map(_map(body.get("spec")).get("jobTemplate"))
        self.check_quantities(job)
        template = _map(_map(job.get("spec")).get("template"))
        pod = {
            "kind": "Pod",
            "metadata": {"name": name, **_map(template.get("metadata"))},
            "spec": _map(template.get("spec")),
        }
        self.check_parses(DEFAULT_PARSERS["Pod"], pod, name)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        pod = (job_spec.get("template") or {}).get("spec") or {}
        containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
        last = status.get("lastScheduleTime")
        return [
            meta_of(obj).get("name"),
            spec.get("schedule"),
            spec.get("timeZone") or "<none>",
            "True" if spec.get("suspend") else "False",
            len(status.get("active") or []),
            _since(last, now) if last else "<none>",
            age(meta_of(obj).get("creationTimestamp"), now),
            ",".join(str(c.get("name")) for c in containers),
            ",".join(str(c.get("image")) for c in containers),
            label_selector_text(job_spec.get("selector") or {}),
        ]


def _since(stamp: str, now: float) -> str:
    try:
        then = datetime.strptime(str(stamp)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(max(0.0, now - then))


def _causes(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if len(name) > MAX_NAME:
        causes.append(
            (
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{name}": must be no more than {MAX_NAME} characters',
            )
        )
    schedule = spec.get("schedule")
    time_zone = spec.get("timeZone")
    if not schedule:
        causes.append(("FieldValueRequired", "spec.schedule", "Required value"))
    elif not isinstance(schedule, str):
        causes.append(
            ("FieldValueInvalid", "spec.schedule", f"Invalid value: {schedule!r}: must be a string")
        )
    elif _TZ_PREFIX.match(schedule):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.schedule",
                f'Invalid value: "{schedule}": cannot use TZ or CRON_TZ in schedule, '
                "use timeZone field instead",
            )
        )
    else:
        try:
            parse_schedule(schedule, None)
        except InputError as exc:
            causes.append(
                ("FieldValueInvalid", "spec.schedule", f'Invalid value: "{schedule}": {exc.message}')
            )
    if time_zone is not None:
        try:
            if not isinstance(time_zone, str) or not time_zone or time_zone.strip() != time_zone:
                raise InputError("unknown time zone")
            zoneinfo.ZoneInfo(time_zone)
        except (InputError, zoneinfo.ZoneInfoNotFoundError, ValueError):
            causes.append(
                (
                    "FieldValueInvalid",
                    "spec.timeZone",
                    f'Invalid value: "{time_zone}": unknown time zone {time_zone}',
                )
            )
    policy = spec.get("concurrencyPolicy")
    if policy not in POLICIES:
        shown = ", ".join(f'"{p}"' for p in POLICIES)
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.concurrencyPolicy",
                f'Unsupported value: "{policy}": supported values: {shown}',
            )
        )
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"spec.{field}",
                    f"Invalid value: {value}: must be greater than or equal to 0",
                )
            )
    template = _map(_map(spec.get("jobTemplate")).get("spec")).get("template")
    if not isinstance(template, Mapping):
        causes.append(("FieldValueRequired", "spec.jobTemplate.spec.template", "Required value"))
    else:
        policy = _map(template.get("spec")).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            causes.append(
                (
                    "FieldValueRequired" if not policy else "FieldValueNotSupported",
                    "spec.jobTemplate.spec.template.spec.restartPolicy",
                    'Required value: valid values: "OnFailure", "Never"'
                    if not policy
                    else f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
                )
            )
    return causes


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def schedule_stamp(seconds: float, zone: tzinfo) -> str:
    """The scheduled time as the Job's annotation carries it (RFC 3339 in the CronJob's zone)."""
    moment = datetime.fromtimestamp(seconds, zone)
    text = moment.isoformat()
    return text.replace("+00:00", "Z") if moment.utcoffset() == timedelta(0) else text


STRATEGY = CronJobStrategy(
    Resource("batch", "v1", "cronjobs", "cronjob", "CronJob", True, ("cj",), ("status",), ("all",))
)
