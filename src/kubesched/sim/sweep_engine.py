"""Sweeps of independent cells (one simulation each) as tasks of Dask distributed, with each finished
cell written at once as Parquet.

:class:`SweepEngine` is a Dask client: by default on a local cluster it starts itself (one worker
process per core, one thread each, since a cell is single-threaded Python and NumPy), or on an
existing cluster at a scheduler's address (``tcp://host:8786``). Inputs every cell reads (a cluster,
a pod list) go to every worker once through :meth:`SweepEngine.share` and are passed to the cells as
futures, so no cell carries them. A worker that dies mid-cell (killed, out of memory) is replaced by
its nanny and the scheduler runs its cells again on a live worker; a cell that fails by itself
(an exception) is not retried: it would fail again.

A :class:`CellSink` keeps each cell as it finishes and gives back, to a resumed sweep, those it kept
before. :class:`ParquetCells` is the experiments' sink: a directory of Parquet files, one per
finished cell, each written under a temporary name and renamed (:func:`write_atomically`), so a
sweep stopped at any point leaves only whole cells and a later run can skip them (``--resume``). The
directory reads as one table (``pyarrow.parquet.read_table(dir)``, ``pandas.read_parquet(dir)``).

:func:`run_sweep` is a whole sweep: the cells its sink kept read back, the others run on an engine
(or in the command's own process, :class:`InlineCells`), each given to the sink as it finishes.
:func:`cell_task` is what a worker runs for a cell that simulates: bad input comes back as a value,
and the run's garbage goes before the next cell.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Generic, Protocol, TypeVar
from urllib.parse import quote

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kubesched.errors import InputError
from kubesched.runtime.collector import tune_collector

__all__ = [
    "CellRunner",
    "CellSink",
    "InlineCells",
    "ParquetCells",
    "SweepEngine",
    "SweepProgress",
    "cell_task",
    "path_component",
    "run_sweep",
    "write_atomically",
]

T = TypeVar("T")


class SweepEngine:
    """A Dask distributed client for one sweep: ``with SweepEngine(workers=2) as engine: ...``.

    ``address``: an existing scheduler (``tcp://host:8786``); without it a local cluster of
    ``workers`` processes (default: one per core) is started and stopped with the engine; ``profile``
    turns its workers' statistical profiler (the dashboard's) back on."""

    def __init__(
        self, address: str | None = None, workers: int | None = None, *, profile: bool = False
    ) -> None:
        if workers is not None and workers < 1:
            raise InputError(f"must be at least 1, got {workers}", field="--workers")
        self.address = address
        self.requested_workers = workers
        self.profile = profile
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> SweepEngine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        # Imported here: the engine's import costs about a second that no other command pays.
        from distributed import Client, LocalCluster

        if self._client is not None:
            return
        # Dask sets its loggers' levels when first imported (INFO, each connection and worker):
        # the root logger's level (the CLI's -v) applies to them too.
        logging.getLogger("distributed").setLevel(logging.getLogger().getEffectiveLevel())
        if self.address is not None:
            try:
                self._client = Client(self.address, timeout="10s")  # type: ignore[no-untyped-call]
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(f"cannot reach the Dask scheduler: {exc}", field="--cluster") from None
            return
        import dask

        n = self.requested_workers or os.cpu_count() or 1
        # Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, which also fixes glibc's mmap
        # threshold: every NumPy temporary above 128 KiB is then mapped and unmapped afresh, and a
        # cell ran about a quarter slower (docs/experiments.md). Cells hold little memory.
        # No statistical profiler: nobody reads a sweep's dashboard profile, and its thread would
        # take the GIL from the cell every 10 ms.
        # No active memory manager: it would drop the copies of the inputs that workers hold
        # between two of their cells, and they would travel again.
        settings = {
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
            "distributed.worker.profile.enabled": self.profile,
            "distributed.scheduler.active-memory-manager.start": False,
        }
        with dask.config.set(settings):
            self._cluster = LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                # The dashboard on any free port: a sweep on a shared machine must not need 8787.
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
        self._client = Client(self._cluster)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RuntimeError("the sweep engine is not started")
        return self._client

    @property
    def workers(self) -> int:
        """Workers connected now."""
        return len(self.client.scheduler_info()["workers"])

    def worker_pids(self) -> dict[str, int]:
        """Process id of each worker, by its address."""
        return dict(self.client.run(os.getpid))

    def share(self, value: Any) -> Any:
        """A future of ``value``: pass it to :meth:`run`'s cells in place of the value, which then
        travels to each worker once (with its first cell that reads it), not once per cell."""
        # A task that returns the value rather than scattered data: the scheduler keeps the task,
        # so when every worker holding the value is gone (the only worker killed) it is made again
        # where the next cell runs; scattered data would be lost with them, and the sweep with it.
        key = f"input-{type(value).__name__}-{uuid.uuid4().hex}"
        return self.client.submit(_itself, value, key=key, pure=False)

    def run(
        self,
        fn: Callable[..., Any],
        cells: Iterable[tuple[str, tuple[Any, ...]]],
        priority: Callable[[str], int] | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """``fn(*args)`` for each cell ``(key, args)`` as a task; yields ``(key, result)`` as each cell
        finishes, every key exactly once. Higher ``priority(key)`` starts first."""
        from distributed import as_completed

        token = uuid.uuid4().hex[:8]
        names: dict[str, str] = {}
        futures = []
        for key, args in cells:
            fut = self.client.submit(
                fn,
                *args,
                key=f"cell-{token}-{key}",
                pure=False,
                priority=priority(key) if priority else 0,
            )
            names[fut.key] = key
            futures.append(fut)
        try:
            for fut in as_completed(futures):  # type: ignore[no-untyped-call]
                yield names[fut.key], fut.result()
        finally:
            # Results are dropped from the workers' memory, and a sweep stopped early (an error,
            # ^C) leaves nothing running on a shared cluster.
            self.client.cancel(futures, force=True)


class SweepProgress:
    """A sweep's progress bar on stderr: cells done out of all, elapsed, time left. Call it with
    ``(done, total, started)`` as cells finish; :meth:`stop` when the sweep ends."""

    def __init__(self, unit: str = "cells", console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
        )
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int, started: float = 0.0) -> None:
        if self._task is None:
            self._task = self._progress.add_task("sweep", total=total)
            self._progress.start()
        self._progress.update(self._task, completed=done)

    def stop(self) -> None:
        self._progress.stop()


def _itself(value: Any) -> Any:
    return value


#: Longest file or directory name a sweep writes whole; file systems allow 255 bytes.
_NAME_MAX: Final = 200


def path_component(key: str) -> str:
    """``key`` as one path component: percent-encoded, never ``.``, ``..`` or hidden, and a long
    one cut short with a digest of the whole key."""
    name = quote(key, safe="")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) > _NAME_MAX:
        name = f"{name[: _NAME_MAX - 17]}~{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    return name


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` to a temporary name beside ``path``, then renamed to it: ``path`` is whole or
    not there, wherever the process was stopped. A stopped write leaves ``*.tmp`` to remove."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


class CellSink(Protocol[T]):
    """Where a sweep keeps each cell as it finishes, and finds the cells a resumed sweep need not
    run again."""

    def restore(self, keys: Sequence[str]) -> dict[str, T]:
        """The cells of ``keys`` kept before, by key."""
        ...

    def write(self, key: str, result: T) -> None:
        """Keep the cell ``key``, just finished."""
        ...


class ParquetCells(Generic[T]):
    """A directory of finished cells, one Parquet file of one row each, named by the cell's key: a
    result is written as the row ``to_row(key, result)`` and read back through ``from_row(key,
    row)``, which refuses (an :class:`InputError`) a cell the sweep would not make now.

    ``resume=False`` empties the directory's cells first (a new sweep); ``resume=True`` keeps them
    for :meth:`restore`."""

    def __init__(
        self,
        directory: Path,
        schema: pa.Schema,
        *,
        to_row: Callable[[str, T], Mapping[str, Any]],
        from_row: Callable[[str, dict[str, Any]], T],
        resume: bool = False,
    ) -> None:
        self.directory = directory
        self.schema = schema
        self.to_row = to_row
        self.from_row = from_row
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.tmp"):
            stale.unlink()
        if not resume:
            for old in directory.glob("*.parquet"):
                old.unlink()

    def path_of(self, key: str) -> Path:
        # One file per key, whatever characters (and however many) a pod list's name has.
        return self.directory / f"{path_component(key)}.parquet"

    def restore(self, keys: Sequence[str]) -> dict[str, T]:
        kept: dict[str, T] = {}
        for key in keys:
            path = self.path_of(key)
            if not path.is_file():
                continue
            try:
                kept[key] = self.from_row(key, self._read(key))
            except InputError as exc:
                raise exc.located(file=str(path)) from None
        return kept

    def write(self, key: str, result: T) -> None:
        table = pa.Table.from_pylist([dict(self.to_row(key, result))], schema=self.schema)
        write_atomically(self.path_of(key), lambda tmp: pq.write_table(table, tmp))

    def _read(self, key: str) -> dict[str, Any]:
        path = self.path_of(key)
        try:
            rows = pq.read_table(path, schema=self.schema).to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"not a cell of this sweep: {exc}", file=str(path)) from None
        if len(rows) != 1:
            raise InputError(f"expected one cell, found {len(rows)} rows", file=str(path))
        row: dict[str, Any] = rows[0]
        return row


class CellRunner(Protocol):
    """What a sweep's cells run on: :class:`SweepEngine` (started), or :class:`InlineCells`."""

    def share(self, value: Any) -> Any: ...

    def run(
        self,
        fn: Callable[..., Any],
        cells: Iterable[tuple[str, tuple[Any, ...]]],
        priority: Callable[[str], int] | None = None,
    ) -> Iterator[tuple[str, Any]]: ...


class InlineCells:
    """The engine's two calls in the command's own process, one cell after the other: for a sweep
    with one cell to run, where starting a cluster of workers would cost more than it saves."""

    def share(self, value: Any) -> Any:
        return value

    def run(
        self,
        fn: Callable[..., Any],
        cells: Iterable[tuple[str, tuple[Any, ...]]],
        priority: Callable[[str], int] | None = None,
    ) -> Iterator[tuple[str, Any]]:
        for key, args in cells:
            yield key, fn(*args)


def cell_task(fn: Callable[..., T], *args: Any) -> T | InputError:
    """``fn(*args)`` as a worker of the engine runs a cell that simulates; :func:`run_sweep` raises
    the :class:`InputError` it may return."""
    # A worker is a Dask process, not the kubesched command: its collector runs with Python's
    # thresholds unless set here, and walks the run's whole heap again and again.
    tune_collector()
    try:
        out: T | InputError = fn(*args)
    except InputError as exc:
        # Bad input is the command's error to report, located, as when run inline; raised here, it
        # would also be logged by the worker with the task's whole repr and traceback.
        out = exc
    # A run's simulation is cyclic garbage once it returns: a worker would otherwise hold every
    # cluster it simulated until a full collection.
    gc.collect()
    return out


def run_sweep(
    fn: Callable[..., T | InputError],
    keys: Sequence[str],
    cells: Callable[[CellRunner, Sequence[str]], Iterable[tuple[str, tuple[Any, ...]]]],
    *,
    sink: CellSink[T] | None = None,
    engine: CellRunner | None = None,
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    priority: Callable[[str], int] | None = None,
    inline_one: bool = False,
) -> dict[str, T]:
    """``fn(*args)`` for every cell of ``keys``; the results by key, in the order of ``keys``.

    ``cells(runner, todo)`` gives the ``(key, args)`` of the cells to run, sharing their inputs
    through ``runner.share``. With a ``sink`` the cells it kept are taken instead of running, and
    each cell run is given to it as it finishes. The cells run on ``engine`` when given (a started
    :class:`SweepEngine`, or :class:`InlineCells`), else on one started for the sweep: the Dask
    scheduler at ``address``, or a local cluster of ``workers`` (default: one per cell to run, at
    most one per core); with ``inline_one``, a single cell to run and no ``address`` runs in this
    process. A cell that returns an :class:`InputError` (bad input it found) stops the sweep with
    it. ``progress(done, total, started)`` after the kept cells are read and after each cell run."""
    done: dict[str, T] = sink.restore(keys) if sink is not None else {}
    todo = [k for k in keys if k not in done]
    started = time.perf_counter()
    report = progress or (lambda d, t, s: None)
    report(len(done), len(keys), started)
    if todo:
        runner: CellRunner
        own: SweepEngine | None = None
        if engine is not None:
            runner = engine
        elif inline_one and len(todo) == 1 and address is None:
            runner = InlineCells()
        else:
            if workers is None and address is None:
                workers = min(len(todo), os.cpu_count() or 1)
            runner = own = SweepEngine(address, workers)
        try:
            if own is not None:
                own.start()
            for key, result in runner.run(fn, cells(runner, todo), priority):
                if isinstance(result, InputError):
                    raise result
                if sink is not None:
                    sink.write(key, result)
                done[key] = result
                report(len(done), len(keys), started)
        finally:
            if own is not None:
                own.close()
    return {key: done[key] for key in keys}
