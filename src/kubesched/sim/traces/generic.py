"""The generic trace format (CSV or JSON Lines), and the row plumbing every importer shares.

Columns (all optional; see ``docs/traces.md``): ``name, namespace, arrival, duration, cpu, memory,
gpu, priority, group, group_size, queue, scheduler_name`` plus ``label.<key>`` and
``annotation.<key>``. Times are seconds or Go durations; ``cpu``/``memory`` are Kubernetes
quantities; ``gpu`` becomes ``nvidia.com/gpu``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from kubesched.api.durations import parse_duration
from kubesched.api.manifests import dns_name_error, validate_labels
from kubesched.api.quantity import QuantityError, resource_amount
from kubesched.api.selectors import qualified_name_error
from kubesched.errors import InputError
from kubesched.sim.workload import BadRow, GroupSpec, Workload, WorkloadPod

OnBadRow = Literal["skip", "fail"]

GENERIC_COLUMNS: Final = frozenset(
    {
        "name",
        "namespace",
        "arrival",
        "duration",
        "cpu",
        "memory",
        "gpu",
        "priority",
        "group",
        "group_size",
        "queue",
        "scheduler_name",
    }
)
GPU_RESOURCE: Final = "nvidia.com/gpu"


class RowError(Exception):
    """One row is bad; the importer records or raises it per ``on_bad_row``."""


class Rows:
    """Bad-row policy for one source file."""

    def __init__(self, source: str, workload: Workload, on_bad_row: OnBadRow) -> None:
        if on_bad_row not in ("skip", "fail"):
            raise InputError(f"on_bad_row must be 'skip' or 'fail', got {on_bad_row!r}")
        self.source = source
        self.workload = workload
        self.on_bad_row = on_bad_row

    def bad(self, line: int, message: str) -> None:
        if self.on_bad_row == "fail":
            raise InputError(f"line {line}: {message}", file=self.source)
        self.workload.bad_rows.append(BadRow(self.source, line, message))


def csv_rows(f: TextIO, source: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and an iterator of ``(line number, fields)``; blank lines are skipped."""
    reader = csv.reader(f)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError("empty trace file: no header row", file=source) from None
    except csv.Error as exc:
        raise InputError(f"line 1: {exc}", file=source) from None

    def rows() -> Iterator[tuple[int, list[str]]]:
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InputError(f"line {reader.line_num}: {exc}", file=source) from None
            if not row or all(not v.strip() for v in row):
                continue
            yield reader.line_num, row

    return header, rows()


def as_dict(header: list[str], row: list[str]) -> dict[str, str]:
    if len(row) != len(header):
        raise RowError(f"expected {len(header)} fields, got {len(row)}")
    return dict(zip(header, row, strict=True))


#: Largest amount or count a row may give: what an int64 column holds.
INT64_MAX: Final = 2**63 - 1
INT32_MAX: Final = 2**31 - 1


def to_int(value: object, what: str, minimum: int | None = 0, maximum: int = INT64_MAX) -> int:
    if isinstance(value, bool):
        raise RowError(f"{what}: expected an integer, got {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        try:
            number = int(text)
        except ValueError:
            try:
                as_float = float(text)
            except ValueError:
                raise RowError(f"{what}: expected an integer, got {value!r}") from None
            if not as_float.is_integer():
                raise RowError(f"{what}: expected an integer, got {value!r}") from None
            number = int(as_float)
    if minimum is not None and number < minimum:
        raise RowError(f"{what}: must be at least {minimum}, got {number}")
    if number > maximum:
        raise RowError(f"{what}: must be at most {maximum}, got {value!r}")
    return number


def to_seconds(value: object, what: str) -> float:
    try:
        return parse_duration(value if isinstance(value, int | float | str) else repr(value))
    except InputError as exc:
        raise RowError(f"{what}: {exc.message}") from None


def to_amount(resource: str, value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(f"{what}: invalid quantity {value!r}")
    try:
        return resource_amount(resource, value)
    except QuantityError as exc:
        raise RowError(f"{what}: {exc}") from None


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _text(value: object, what: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise RowError(f"{what}: expected a string, got {value!r}")
    return str(value).strip()


def generic_pod(record: Mapping[str, Any], line: int, stem: str) -> tuple[WorkloadPod, int | None]:
    """One pod from a generic record, and its ``group_size`` if the record has one."""
    get = record.get
    pod = WorkloadPod(name=f"{stem}-{line}")
    if not _blank(get("name")):
        pod.name = _text(get("name"), "name")
    if not _blank(get("namespace")):
        pod.namespace = _text(get("namespace"), "namespace")
    if not _blank(get("arrival")):
        pod.arrival = to_seconds(get("arrival"), "arrival")
    if not _blank(get("duration")):
        pod.duration = to_seconds(get("duration"), "duration")
    for column, resource in (("cpu", "cpu"), ("memory", "memory"), ("gpu", GPU_RESOURCE)):
        if not _blank(get(column)):
            amount = to_amount(resource, get(column), column)
            if amount:
                pod.requests[resource] = amount
    if not _blank(get("priority")):
        pod.priority = to_int(get("priority"), "priority", minimum=None, maximum=2_000_000_000)
        if pod.priority < -2_000_000_000:
            raise RowError(f"priority: out of range: {pod.priority}")
    if not _blank(get("scheduler_name")):
        pod.scheduler_name = _text(get("scheduler_name"), "scheduler_name")
    if not _blank(get("queue")):
        pod.queue = _text(get("queue"), "queue")
    group_size: int | None = None
    if not _blank(get("group")):
        pod.group = _text(get("group"), "group")
    if not _blank(get("group_size")):
        if pod.group is None:
            raise RowError("group_size given without group")
        group_size = to_int(get("group_size"), "group_size", minimum=1, maximum=INT32_MAX)
    for key, value in record.items():
        if key in ("labels", "annotations") and isinstance(value, Mapping):
            target = pod.labels if key == "labels" else pod.annotations
            for k, v in value.items():
                target[str(k)] = _text(v, f"{key}.{k}")
        elif key.startswith("label.") and not _blank(value):
            pod.labels[key[len("label.") :]] = _text(value, key)
        elif key.startswith("annotation.") and not _blank(value):
            pod.annotations[key[len("annotation.") :]] = _text(value, key)
    _check_names(pod)
    return pod, group_size


def _check_names(pod: WorkloadPod) -> None:
    """What the API server would refuse in the objects the row becomes: names and labels."""
    for what, value, label in (
        ("name", pod.name, False),
        ("namespace", pod.namespace, True),
        ("group", pod.group, False),
        ("queue", pod.queue, False),
    ):
        if value is not None and (why := dns_name_error(value, label=label)) is not None:
            raise RowError(f"{what}: {why}")
    try:
        validate_labels(pod.labels, "labels")
    except InputError as exc:
        raise RowError(f"{exc.field}: {exc.message}") from None
    for key in pod.annotations:
        if (why := qualified_name_error(key.lower())) is not None:
            raise RowError(f"annotations: {why}")


def _check_columns(columns: list[str], source: str) -> None:
    unknown = [
        c
        for c in columns
        if c not in GENERIC_COLUMNS
        and not c.startswith(("label.", "annotation."))
        and c not in ("labels", "annotations")
    ]
    if unknown:
        raise InputError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; generic traces use "
            f"{', '.join(sorted(GENERIC_COLUMNS))}, label.<key> and annotation.<key>",
            file=source,
        )


def _records(path: Path, source: str) -> Iterator[tuple[int, Mapping[str, Any] | RowError]]:
    with path.open(encoding="utf-8", newline="") as f:
        if is_jsonl(path):
            for number, text in enumerate(f, start=1):
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except ValueError as exc:
                    yield number, RowError(f"invalid JSON: {exc}")
                    continue
                except RecursionError:
                    yield number, RowError("invalid JSON: nested too deeply")
                    continue
                if not isinstance(obj, dict):
                    yield number, RowError("expected a JSON object")
                    continue
                _check_columns(list(obj), source)
                yield number, obj
        else:
            header, rows = csv_rows(f, source)
            _check_columns(header, source)
            for number, row in rows:
                try:
                    yield number, as_dict(header, row)
                except RowError as exc:
                    yield number, exc


def is_jsonl(path: Path) -> bool:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    if path.suffix.lower() in (".csv", ".tsv"):
        return False
    with path.open(encoding="utf-8", errors="replace") as f:
        head = f.read(4096).lstrip()
    return head.startswith("{")


def load_generic(path: Path, on_bad_row: OnBadRow = "skip", limit: int | None = None) -> Workload:
    source = str(path)
    workload = Workload()
    rows = Rows(source, workload, on_bad_row)
    seen: set[tuple[str, str]] = set()
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    count = 0
    for number, record in _records(path, source):
        if limit is not None and count >= limit:
            break
        try:
            if isinstance(record, RowError):
                raise record
            pod, size = generic_pod(record, number, path.stem)
            if (pod.namespace, pod.name) in seen:
                raise RowError(f"duplicate pod {pod.namespace}/{pod.name}")
            if pod.group is not None:
                group = workload.groups.get(pod.group)
                if group is not None and pod.queue != group.queue:
                    raise RowError(f"group {pod.group}: queue {pod.queue!r} differs from {group.queue!r}")
                if group is not None and pod.namespace != group.namespace:
                    raise RowError(f"group {pod.group}: pods of one group must share a namespace")
                if size is not None and sizes.setdefault(pod.group, size) != size:
                    raise RowError(f"group {pod.group}: group_size {size} differs from {sizes[pod.group]}")
        except RowError as exc:
            rows.bad(number, str(exc))
            continue
        seen.add((pod.namespace, pod.name))
        if pod.group is not None:
            counts[pod.group] = counts.get(pod.group, 0) + 1
            workload.groups.setdefault(pod.group, GroupSpec(pod.group, 0, pod.queue, pod.namespace))
        workload.add_queue(pod.queue)
        workload.pods.append(pod)
        count += 1
    for name, group in workload.groups.items():
        # Without a group_size, the gang is every pod of the group.
        group.min_member = sizes.get(name, counts[name])
    for pod in workload.pods:
        if pod.group is not None:
            pod.group_min_member = workload.groups[pod.group].min_member
    return workload
