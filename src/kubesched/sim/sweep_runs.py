"""The finished runs of a ``simulate`` sweep on disk: each run's files written the moment its result
arrives, and the runs a resumed sweep can keep instead of running again.

Under the export directory, ``runs/<label>/`` (the label percent-encoded, a long one cut short) holds one run:

* ``timeseries.parquet`` and ``pods.parquet``: the run's rows of the combined export tables;
* ``summary.json``: its label, config source, metrics summary and input fingerprint;
* ``state.pickle``: what the command's output needs of the run (the simulation's result and the
  metrics recorder), for ``--resume``; internal, read only by the same kubesched version.

Every file is written under a temporary name and renamed, ``state.pickle`` last: a run whose state
file is present is whole, whenever the sweep was stopped. A run is kept by ``--resume`` only if its
**fingerprint** (the config's text, the workload's objects, the settings every run shares and the
kubesched version) is that of the run the sweep asks for now; otherwise it runs again.
:class:`RunStore` is the sweep's sink (:class:`~kubesched.sim.sweep_engine.CellSink`).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from kubesched import __version__
from kubesched.api.manifests import LoadResult
from kubesched.errors import InputError
from kubesched.framework.registry import Registry
from kubesched.sim.compare import RunResult, RunSettings, RunSpec
from kubesched.sim.export import PODS, TIMESERIES, pod_table, timeseries_table, write_parquet
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.report import RunReport
from kubesched.sim.simulation import SimulationResult
from kubesched.sim.sweep_engine import path_component, write_atomically

__all__ = ["RUNS", "STATE", "Fingerprint", "RunStore", "fingerprint", "workload_digest"]

#: The subdirectory of the export directory that holds one directory per finished run.
RUNS: Final = "runs"
STATE: Final = "state.pickle"
SUMMARY: Final = "summary.json"
_FILES: Final = (f"{TIMESERIES}.parquet", f"{PODS}.parquet", SUMMARY, STATE)
#: First line of a state file; the number changes with the file's layout.
_MAGIC: Final = b"kubesched-run-state 1\n"
#: The parts of a fingerprint, in the words a re-run's note uses.
_PARTS: Final = ("config", "workload", "settings", "kubesched version")
_POD_FLOATS: Final = ("arrival", "bound", "finished", "deleted", "latency", "duration")


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A digest of each input a run's output depends on; equal fingerprints, equal output."""

    parts: dict[str, str]

    @property
    def digest(self) -> str:
        return _sha256(json.dumps(self.parts, sort_keys=True).encode())

    def changed(self, other: dict[str, str]) -> list[str]:
        """The parts that differ from ``other`` (a stored fingerprint's parts)."""
        return [p for p in _PARTS if other.get(p) != self.parts.get(p)]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def workload_digest(loaded: LoadResult) -> str:
    """A digest of the objects (and their order and origin) and the load warnings every run reads."""
    h = hashlib.sha256()
    for mo in loaded.objects:
        h.update(json.dumps([mo.kind, mo.source, mo.document, mo.obj], sort_keys=True, default=str).encode())
        h.update(b"\0")
    h.update(json.dumps(loaded.warnings).encode())
    return h.hexdigest()


def _settings_digest(settings: RunSettings) -> str:
    """A digest of every field of ``settings``: a field added later is in it without more code."""
    doc: dict[str, Any] = {}
    for f in fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, Registry):
            doc[f.name] = sorted(value)
        elif isinstance(value, BaseModel):
            doc[f.name] = value.model_dump_json()
        elif isinstance(value, dict):
            doc[f.name] = repr(sorted(value.items()))
        else:
            doc[f.name] = repr(value)
    return _sha256(json.dumps(doc, sort_keys=True).encode())


def fingerprint(run: RunSpec, workload: str, settings: RunSettings) -> Fingerprint:
    """``run``'s fingerprint; ``workload`` is :func:`workload_digest` of what every run loads."""
    return Fingerprint(
        {
            "config": _sha256(run.text.encode()),
            "workload": workload,
            "settings": _settings_digest(settings),
            "kubesched version": __version__,
        }
    )


class RunStore:
    """``DIR/runs/``: the finished runs of one sweep, as its sink, each keyed by its label.
    ``resume=False`` removes the runs a previous sweep left there (a new sweep); ``resume=True``
    keeps them for :meth:`restore`. ``prints`` are the ``runs``' fingerprints; ``flag`` names the
    directory in errors; ``note`` is told of each finished run that runs again, and why, and of the
    runs kept."""

    def __init__(
        self,
        directory: Path,
        runs: Sequence[RunSpec],
        prints: Sequence[Fingerprint],
        *,
        flag: str,
        resume: bool = False,
        note: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.directory = directory / RUNS
        self.flag = flag
        self.note = note
        self._runs = {run.label: (run, fp) for run, fp in zip(runs, prints, strict=True)}
        try:
            if self.directory.is_dir():
                for run_dir in self.directory.iterdir():
                    if run_dir.is_dir():
                        _clean(run_dir, everything=not resume)
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot read or write: {exc}", field=flag) from None

    def path_of(self, run: RunSpec) -> Path:
        return self.directory / path_component(run.label)

    def restore(self, keys: Sequence[str]) -> dict[str, RunResult]:
        """The runs of ``keys`` already finished here with the same fingerprint, by label."""
        kept: dict[str, RunResult] = {}
        try:
            for key in keys:
                run, fp = self._runs[key]
                state = self.path_of(run) / STATE
                if not state.is_file():
                    continue
                got = _read_state(state, fp)
                if isinstance(got, str):
                    self.note(f"{run.label}: running again: {got} ({state})")
                else:
                    kept[key] = got
        except OSError as exc:
            raise InputError(f"cannot read or write: {exc}", field=self.flag) from None
        if kept:
            self.note(f"kept {len(kept)} of {len(keys)} runs finished in {self.directory}")
        return kept

    def write(self, key: str, result: RunResult) -> None:
        """Write the run's files (its state last), each whole or not at all."""
        run, fp = self._runs[key]
        try:
            self._write(run, fp, result)
        except OSError as exc:
            raise InputError(f"cannot write: {exc}", field=self.flag) from None

    def _write(self, run: RunSpec, fp: Fingerprint, result: RunResult) -> None:
        sim_result, recorder = result
        where = self.path_of(run)
        where.mkdir(parents=True, exist_ok=True)
        # A state file from an earlier run of this label goes first: the new files and an old state
        # must never be read together.
        (where / STATE).unlink(missing_ok=True)
        summary: dict[str, Any] = {"run": run.label, "config": run.source}
        if recorder is not None:
            report = [RunReport(run.label, recorder, run.source, run.text)]
            series = timeseries_table(report)
            pods = pod_table(report)
            write_atomically(
                where / f"{TIMESERIES}.parquet",
                lambda p: write_parquet(p, series, float_columns=[n for n in series if n != "run"]),
            )
            write_atomically(
                where / f"{PODS}.parquet",
                lambda p: write_parquet(p, pods, float_columns=[n for n in _POD_FLOATS if n in pods]),
            )
            summary["summary"] = recorder.summary()
        summary["fingerprint"] = {"digest": fp.digest, **fp.parts}
        text = json.dumps(summary, indent=2, allow_nan=False) + "\n"
        write_atomically(where / SUMMARY, lambda p: p.write_text(text, encoding="utf-8"))
        payload = pickle.dumps((sim_result, recorder), protocol=pickle.HIGHEST_PROTOCOL)
        header = json.dumps(
            {"fingerprint": fp.parts, "label": run.label, "sha256": _sha256(payload)}, sort_keys=True
        )
        write_atomically(where / STATE, lambda p: p.write_bytes(_MAGIC + header.encode() + b"\n" + payload))


def _clean(run_dir: Path, *, everything: bool) -> None:
    """Remove what a stopped write left in ``run_dir`` (temporary files); with ``everything``, the
    run's files too, and the directory when nothing else is in it."""
    for tmp in run_dir.glob("*.tmp"):
        tmp.unlink()
    if not everything:
        return
    for name in _FILES:
        (run_dir / name).unlink(missing_ok=True)
    if not any(run_dir.iterdir()):
        shutil.rmtree(run_dir)


def _read_state(path: Path, fp: Fingerprint) -> RunResult | str:
    """The run stored at ``path`` if it was made from ``fp``'s inputs, else why it runs again. A
    file kubesched did not write is an input error: the directory is not this sweep's."""
    try:
        with path.open("rb") as f:
            magic = f.read(len(_MAGIC))
            if magic != _MAGIC:
                if magic.startswith(_MAGIC[: _MAGIC.index(b" ")]):
                    return "its state file is of another kubesched version"
                raise InputError(
                    "not a kubesched run state file; give --resume the --export directory of a sweep",
                    file=str(path),
                )
            header = json.loads(f.readline())
            payload = f.read()
    except OSError as exc:
        return f"cannot read its state file: {exc.strerror or exc}"
    except ValueError:
        return "its state file is damaged"
    if not isinstance(header, dict) or not isinstance(header.get("fingerprint"), dict):
        return "its state file is damaged"
    changed = fp.changed(header["fingerprint"])
    if changed:
        return f"its {', '.join(changed)} changed since it ran"
    if header.get("sha256") != _sha256(payload):
        return "its state file is damaged"
    try:
        result = pickle.loads(payload)
    except Exception:  # any failure to restore means: run it again
        return "its state file cannot be read by this kubesched"
    if not (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], SimulationResult)
        and isinstance(result[1], MetricsRecorder | None)
    ):
        return "its state file cannot be read by this kubesched"
    return result
