"""A simulation's batch outcomes for the command line: the PodGroup and queue tables, the JSON keys of
``simulate -o json``, and why a batch pod waits."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.sim.simulation import SimulationResult


def batch_document(result: SimulationResult, explain: bool) -> dict[str, Any]:
    """The ``queues`` and ``podGroups`` keys of ``simulate -o json`` (empty without batch objects)."""
    if not result.queues and not result.pod_groups:
        return {}
    queues = []
    for q in result.queues:
        entry: dict[str, Any] = {
            "name": q.name,
            "weight": q.weight,
            "allocated": q.allocated,
            "podsBound": q.bound,
            "podsPending": q.pending,
        }
        if q.deserved is not None:
            entry["deserved"] = q.deserved
        if q.parent:
            entry["parent"] = q.parent
        queues.append(entry)
    groups = []
    for g in result.pod_groups:
        entry = {
            "namespace": g.namespace,
            "name": g.name,
            "queue": g.queue,
            "phase": g.phase,
            "bound": g.bound,
            "minMember": g.min_member,
            "message": g.message,
        }
        if explain:
            entry["fitErrors"] = dict(sorted(g.fit_errors.items()))
        groups.append(entry)
    return {"queues": queues, "podGroups": groups}


def print_batch_tables(result: SimulationResult, console: Console) -> None:
    if not result.queues and not result.pod_groups:
        return
    qt = Table(title="queues", title_justify="left")
    for col in ("QUEUE", "WEIGHT", "ALLOCATED", "DESERVED", "BOUND", "PENDING"):
        qt.add_column(col)
    for q in result.queues:
        qt.add_row(
            # A child queue is indented under its parent (the list is in tree order).
            escape("  " * q.depth + q.name),
            str(q.weight),
            escape(_resources(q.allocated)),
            escape(_resources(q.deserved)) if q.deserved is not None else "-",
            str(q.bound),
            str(q.pending),
        )
    console.print(qt)
    gt = Table(title="pod groups", title_justify="left")
    for col in ("POD GROUP", "QUEUE", "PHASE", "BOUND/MIN"):
        gt.add_column(col)
    gt.add_column("MESSAGE", overflow="fold")
    for g in result.pod_groups:
        gt.add_row(
            escape(f"{g.namespace}/{g.name}"),
            escape(g.queue),
            g.phase,
            f"{g.bound}/{g.min_member}",
            escape(g.message),
        )
    console.print(gt)


def explain_batch_pod(result: SimulationResult, namespace: str, name: str, console: Console) -> bool:
    """Why a batch pod's gang waits: the gang condition and each task's fit error. False when the
    pod belongs to no PodGroup the run knows."""
    for g in result.pod_groups:
        if g.namespace != namespace:
            continue
        if name not in g.fit_errors and not g.message:
            continue
        console.print(
            f"pod group {escape(g.namespace)}/{escape(g.name)} (queue {escape(g.queue)}): "
            f"{g.phase}, {g.bound}/{g.min_member} bound"
        )
        if g.message:
            console.print(f"  {escape(g.message)}", soft_wrap=True)
        for task, err in sorted(g.fit_errors.items()):
            console.print(f"  {escape(task)}: {escape(err)}", soft_wrap=True)
        return True
    return False


def _resources(values: dict[str, int] | None) -> str:
    if not values:
        return "-"
    parts = []
    for k, v in values.items():
        if k == "cpu":
            parts.append(f"cpu={v / 1000:g}")
        elif k == "memory":
            parts.append(f"memory={v / 2**30:.3g}Gi")
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)
