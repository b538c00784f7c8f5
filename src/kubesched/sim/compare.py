"""Policy comparison: which scheduler configurations to run on one workload, and how to name them.

The runs come from repeated ``--config`` files and from a *sweep file*::

    # sweep.yaml: paths are relative to this file
    configs: [least.yaml, most.yaml]        # whole KubeSchedulerConfiguration files
    base: least.yaml                         # what variants start from (default: the first
                                             #   --config, else the built-in defaults)
    variants:                                # small changes to the base, each one run
      - name: most-allocated
        scoringStrategy: MostAllocated       # NodeResourcesFit scoringStrategy (type, or the mapping)
      - name: score-10pct
        percentageOfNodesToScore: 10

Every run gets a fresh simulation of the same workload with the same seed; see ``docs/reports.md``.
One run goes inline in the command's process (:func:`run_inline`); several are cells of a sweep
(:func:`run_as_sweep`, tasks of the Dask sweep engine), the workload shared once per worker, and
come back in the order of the runs whatever order they finish in, so the output is the same either
way.
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.api.manifests import LoadResult
from kubesched.api.yaml_input import safe_load
from kubesched.batch.conf import BatchConf
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig, config_from_dict, load_config
from kubesched.framework.registry import Registry
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.progress import ReplayProgress
from kubesched.sim.simulation import Simulation, SimulationResult

if TYPE_CHECKING:
    from rich.console import Console

    # Not at run time: one run never starts the engine, nor pays for importing it.
    from kubesched.sim.sweep_engine import CellRunner, CellSink

__all__ = [
    "RunSettings",
    "RunSpec",
    "apply_variant",
    "load_sweep",
    "plan_runs",
    "run_as_sweep",
    "run_inline",
    "run_one",
]

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_LABEL: Final = "default"
_SWEEP_FIELDS: Final = ("configs", "base", "variants")
_VARIANT_FIELDS: Final = ("name", "scoringStrategy", "percentageOfNodesToScore")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One configuration to simulate."""

    label: str
    #: ``None``: the built-in default profile.
    config: SchedulerConfig | None
    #: Where it came from: a file path, or a sweep variant; ``None`` for the defaults.
    source: str | None
    #: The configuration as YAML, for the report.
    text: str


def _read_yaml(path: Path, field: str | None = None) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path), field=field) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=str(path), field=field) from None
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", file=str(path)) from None


def _config_file(path: str | Path, registry: Registry) -> RunSpec:
    p = Path(path)
    config = load_config(p, registry)
    return RunSpec(label=p.name, config=config, source=str(p), text=p.read_text(encoding="utf-8"))


def apply_variant(base: Mapping[str, Any] | None, variant: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (a KubeSchedulerConfiguration as data) with a sweep variant's changes applied.

    ``percentageOfNodesToScore`` is set at the top level and in every profile that sets its own (a
    profile's value would win otherwise). ``scoringStrategy`` replaces NodeResourcesFit's
    ``args.scoringStrategy`` in every profile (a string is the strategy ``type``).
    """
    data: dict[str, Any] = copy.deepcopy(dict(base)) if base else {"apiVersion": API_VERSION, "kind": KIND}
    pct = variant.get("percentageOfNodesToScore")
    if pct is not None:
        data["percentageOfNodesToScore"] = pct
        for profile in data.get("profiles") or []:
            if isinstance(profile, dict) and "percentageOfNodesToScore" in profile:
                profile["percentageOfNodesToScore"] = pct
    strategy = variant.get("scoringStrategy")
    if strategy is not None:
        wanted = {"type": strategy} if isinstance(strategy, str) else copy.deepcopy(strategy)
        profiles = data.get("profiles")
        if not profiles:
            profiles = [{"schedulerName": "default-scheduler"}]
            data["profiles"] = profiles
        for profile in profiles:
            if not isinstance(profile, dict):
                continue  # the config loader reports it
            plugin_config = profile.setdefault("pluginConfig", [])
            if not isinstance(plugin_config, list):
                continue
            entry = next(
                (e for e in plugin_config if isinstance(e, dict) and e.get("name") == "NodeResourcesFit"),
                None,
            )
            if entry is None:
                entry = {"name": "NodeResourcesFit", "args": {}}
                plugin_config.append(entry)
            args = entry.get("args")
            if not isinstance(args, dict):
                args = {}
                entry["args"] = args
            args["scoringStrategy"] = wanted
    return data


def load_sweep(path: str | Path, registry: Registry, base_config: str | None = None) -> list[RunSpec]:
    """The runs a sweep file lists: its ``configs``, then one run per ``variants`` entry."""
    p = Path(path)
    source = str(p)
    data = _read_yaml(p)
    if not isinstance(data, Mapping):
        raise InputError("expected a mapping with configs, base and/or variants", file=source)
    unknown = [k for k in data if k not in _SWEEP_FIELDS]
    if unknown:
        raise InputError(
            f"unknown field {unknown[0]!r}; a sweep file has {', '.join(_SWEEP_FIELDS)}",
            file=source,
            field=str(unknown[0]),
        )
    runs: list[RunSpec] = []
    configs = data.get("configs") or []
    if not isinstance(configs, list):
        raise InputError("expected a list of KubeSchedulerConfiguration files", file=source, field="configs")
    for i, entry in enumerate(configs):
        if not isinstance(entry, str) or not entry:
            raise InputError("expected a file path", file=source, field=f"configs[{i}]")
        target = p.parent / entry
        if not target.is_file():
            raise InputError(f"file not found: {target}", file=source, field=f"configs[{i}]")
        runs.append(_config_file(target, registry))

    base_path: Path | None = None
    base_raw = data.get("base")
    if base_raw is not None:
        if not isinstance(base_raw, str) or not base_raw:
            raise InputError("expected a file path", file=source, field="base")
        base_path = p.parent / base_raw
        if not base_path.is_file():
            raise InputError(f"file not found: {base_path}", file=source, field="base")
    elif base_config is not None:
        base_path = Path(base_config)
    base_data = _read_yaml(base_path) if base_path is not None else None
    if base_data is not None and not isinstance(base_data, Mapping):
        raise InputError(f"expected a {KIND} mapping", file=str(base_path))

    variants = data.get("variants") or []
    if not isinstance(variants, list):
        raise InputError("expected a list of variants", file=source, field="variants")
    for i, variant in enumerate(variants):
        where = f"variants[{i}]"
        if not isinstance(variant, Mapping):
            raise InputError("expected a mapping with name and changes", file=source, field=where)
        bad = [k for k in variant if k not in _VARIANT_FIELDS]
        if bad:
            raise InputError(
                f"unknown field {bad[0]!r}; a variant has {', '.join(_VARIANT_FIELDS)}",
                file=source,
                field=f"{where}.{bad[0]}",
            )
        name = variant.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("every variant needs a name", file=source, field=f"{where}.name")
        if "scoringStrategy" not in variant and "percentageOfNodesToScore" not in variant:
            raise InputError(
                "a variant changes scoringStrategy and/or percentageOfNodesToScore", file=source, field=where
            )
        strategy = variant.get("scoringStrategy")
        if strategy is not None and not isinstance(strategy, str | Mapping):
            raise InputError(
                "expected a strategy type (LeastAllocated, MostAllocated, RequestedToCapacityRatio) "
                "or a scoringStrategy mapping",
                file=source,
                field=f"{where}.scoringStrategy",
            )
        data_variant = apply_variant(base_data, variant)
        on = f" on {base_path}" if base_path is not None else ""
        origin = f"{source}: {where} ({name}{on})"
        try:
            config = config_from_dict(data_variant, registry, source=origin)
        except InputError as exc:
            raise exc.located(file=origin) from None
        text = yaml.safe_dump(data_variant, sort_keys=False)
        runs.append(RunSpec(label=name, config=config, source=origin, text=text))
    if not runs:
        raise InputError("the sweep lists no configs and no variants", file=source)
    return runs


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Labels made unique by suffixing ``#2``, ``#3`` to repeats."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for label in labels:
        n = seen.get(label, 0) + 1
        seen[label] = n
        out.append(label if n == 1 else f"{label}#{n}")
    return out


def plan_runs(config_paths: Sequence[str], sweep: str | None, registry: Registry) -> list[RunSpec]:
    """The runs of one ``simulate``: each ``--config``, then the sweep's; the defaults when none."""
    runs = [_config_file(path, registry) for path in config_paths]
    if sweep is not None:
        runs.extend(load_sweep(sweep, registry, base_config=config_paths[0] if config_paths else None))
    if not runs:
        runs = [RunSpec(label=DEFAULT_LABEL, config=None, source=None, text="")]
    labels = unique_labels([r.label for r in runs])
    return [
        r if r.label == label else RunSpec(label, r.config, r.source, r.text)
        for r, label in zip(runs, labels, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What every run of one ``simulate`` shares besides the workload: plain data, so that it travels
    to the sweep engine's workers."""

    registry: Registry
    #: ``--feature-gates``: the simulated cluster's own gates (admission, the API's fields); the
    #: runs' configs carry them already.
    gates: dict[str, bool] = field(default_factory=dict)
    seed: int = 0
    explain: bool = False
    batch_conf: BatchConf | None = None
    schedule_period: float | None = None
    dra_driver: DraDriverOptions | None = None
    #: Record metrics (a report, an export or a comparison reads them).
    metrics: bool = False
    sample_every: float | None = None
    pool_label: str | None = None


#: What a run gives back: the simulation's result and, when metrics are recorded, the finished
#: recorder (its simulation detached, so it pickles).
RunResult = tuple[SimulationResult, MetricsRecorder | None]


def run_one(
    settings: RunSettings,
    run: RunSpec,
    loaded: LoadResult,
    *,
    release: bool = False,
    progress: Console | None = None,
) -> RunResult:
    """One run: a fresh simulation of ``loaded`` under ``run``'s config. The simulated cluster goes
    when it returns; the result and the recorder keep what the output needs. ``release``: no run
    reads ``loaded`` again, so its objects go once they are in the store; ``progress``: a console
    to show a trace replay's progress on (when metrics are recorded)."""
    # Process-wide: a worker of the engine starts with the defaults.
    DEFAULT_FEATURE_GATES.set_all(settings.gates)
    recorder = (
        MetricsRecorder(sample_every=settings.sample_every, pool_label=settings.pool_label)
        if settings.metrics
        else None
    )
    sim = Simulation(
        run.config,
        settings.registry,
        seed=settings.seed,
        explain=settings.explain,
        metrics=recorder,
        # Each run its own copy: nothing one simulation does to its conf reaches the next.
        batch_conf=copy.deepcopy(settings.batch_conf),
        schedule_period=settings.schedule_period,
        dra_driver=settings.dra_driver,
    )
    sim.load(loaded)
    if release:
        # What the loader kept of each object (its own top-level dict and metadata) goes before
        # the replay.
        loaded.objects.clear()
    if progress is not None and recorder is not None:
        with ReplayProgress(run.label, progress) as bar:
            recorder.progress = bar.update
            result = sim.run()
        recorder.progress = None
        return result, recorder
    return sim.run(), recorder


def run_inline(
    settings: RunSettings,
    runs: Sequence[RunSpec],
    loaded: LoadResult,
    progress: Console | None = None,
    on_result: Callable[[int, RunResult], None] | None = None,
) -> list[RunResult]:
    """The runs one after the other in this process, in order; ``loaded`` is spent after.
    ``on_result(i, result)`` as each run ends."""
    done: list[RunResult] = []
    for i, run in enumerate(runs):
        last = i == len(runs) - 1
        done.append(run_one(settings, run, loaded, release=last, progress=progress))
        if on_result is not None:
            on_result(i, done[-1])
        if not last:
            # A run's cluster is cyclic garbage once it returns, and the collector's thresholds
            # (kubesched.runtime.collector) make full passes rare: without one, every run would
            # stay in memory beside the next.
            gc.collect()
    return done


def run_as_sweep(
    settings: RunSettings,
    runs: Sequence[RunSpec],
    loaded: LoadResult,
    *,
    sink: CellSink[RunResult] | None = None,
    engine: CellRunner | None = None,
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> list[RunResult]:
    """The runs as cells of a sweep (:func:`kubesched.sim.sweep_engine.run_sweep`, which says what
    ``sink``, ``engine``, ``address``, ``workers`` and ``progress`` do), each keyed by its label,
    the settings and the workload shipped once per worker. The results come in the order of
    ``runs``, whatever order they finish in."""
    from kubesched.sim.sweep_engine import cell_task, run_sweep

    by_label = {run.label: run for run in runs}
    if len(by_label) != len(runs):
        raise ValueError("runs of one sweep need distinct labels (plan_runs makes them so)")

    def cells(runner: CellRunner, todo: Sequence[str]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        settings_f = runner.share(settings)
        loaded_f = runner.share(loaded)
        return ((label, (run_one, settings_f, by_label[label], loaded_f)) for label in todo)

    done = run_sweep(
        cell_task,
        list(by_label),
        cells,
        sink=sink,
        engine=engine,
        address=address,
        workers=workers,
        progress=progress,
    )
    return list(done.values())
