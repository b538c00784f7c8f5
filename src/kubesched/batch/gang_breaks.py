"""Gangs that Volcano's own eviction rules leave partly bound below ``minMember``, told on the
PodGroup.

Volcano's ``preempt`` and ``reclaim`` may evict members of a running gang until fewer than
``minMember`` stay bound: victims are decided tier by tier and a later tier (``drf``,
``proportion``) decides without the ``gang`` rule when an earlier one decided nothing, and ``gang``
counts best-effort and completed members as ready. kubesched keeps those decisions. What it adds is
the explanation: when the evictions a session carried out take a gang from at least ``minMember``
bound members to fewer (but not none), the job gets a note naming the action, the victims, the
tasks they made room for and the tier rule that chose them. The note goes into the PodGroup's
``Unschedulable`` condition (Volcano's ``NotEnoughResources`` reason) each time the status is
written while the gang stays below ``minMember``; it is recorded when the evictions happen, since
by the next session the evicted members are gone rather than releasing. ``gangpreempt`` and
``gangreclaim`` break a gang only through a whole bundle, which holds the gang's members in the
domain searched; members elsewhere keep running, and the note says so.

The same holds for Volcano's readiness rule: ``allocate`` commits a gang once its ready members plus
its *pending best-effort* members reach ``minMember``, and leaves those best-effort members to
``backfill``. When one of them cannot be placed (no node passes its predicates, or it is gated), the
gang is bound below ``minMember``; kubesched keeps Volcano's decision and notes which members it
counted and why they are still pending.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.batch.job_info import JobInfo, TaskStatus
from kubesched.batch.operations import Evictee, VictimVerdict

#: The actions that evict by bundles: a whole bundle breaks its gang on purpose.
GANG_AWARE_ACTIONS = frozenset({"gangpreempt", "gangreclaim"})
#: Volcano's PodGroup condition type and reason for a gang without enough members placed.
CONDITION_TYPE = "Unschedulable"
CONDITION_REASON = "NotEnoughResources"


def bound_members(job: JobInfo) -> int:
    """Members bound to a node and not finished."""
    index = job.task_status_index
    return len(index.get(TaskStatus.BOUND, ())) + len(index.get(TaskStatus.RUNNING, ()))


def _rule(verdict: VictimVerdict | None) -> str:
    if verdict is None:
        return "no victim function was asked"
    skipped = [
        f"tier {n} decided nothing ({plugin} answered no victims)"
        if plugin
        else f"tier {n} decided nothing (no plugin answered)"
        for n, plugin in verdict.undecided
    ]
    chose = f"tier {verdict.tier} ({', '.join(verdict.plugins)}) chose the victims"
    if verdict.switch in GANG_AWARE_ACTIONS:
        how = (
            f"and {verdict.switch} took the gang's members in one topology domain as a whole bundle "
            "(its members elsewhere keep running)"
        )
    elif "gang" in verdict.plugins:
        how = "with gang counting best-effort and completed members as ready"
    else:
        how = "without gang's minMember check"
    return ", then ".join([*skipped, f"{chose} {how}"])


def gang_break_notes(jobs: dict[str, JobInfo], evicted: Iterable[Evictee]) -> dict[str, str]:
    """Job uid → note, for each job whose members in ``evicted`` (evictions carried out) took it
    from at least ``minMember`` bound members to fewer, but not to none."""
    by_job: dict[str, list[Evictee]] = {}
    for ev in evicted:
        by_job.setdefault(ev.task.job, []).append(ev)
    notes: dict[str, str] = {}
    for uid, evictees in by_job.items():
        job = jobs.get(uid)
        if job is None:
            continue
        after = bound_members(job)
        if not 0 < after < job.min_available <= after + len(evictees):
            continue
        # Victims grouped by the action, the task they made room for and the rule that chose them.
        groups: dict[tuple[str, str, str], list[str]] = {}
        for ev in evictees:
            verdict = ev.verdict
            made_room = f" for {verdict.preemptor}" if verdict is not None else ""
            groups.setdefault((ev.reason, made_room, _rule(verdict)), []).append(ev.task.key)
        clauses = [
            f"{action} evicted {', '.join(names)}{made_room}: {rule}"
            for (action, made_room, rule), names in groups.items()
        ]
        notes[uid] = (
            f"Gang below minMember by Volcano's preemption rules: {after} of minMember "
            f"{job.min_available} members bound after {'; '.join(clauses)}."
        )
    return notes


def best_effort_notes(
    jobs: dict[str, JobInfo], placed: Iterable[str], backfill: bool = True
) -> dict[str, str]:
    """Job uid → note, for each job of ``placed`` (jobs with members bound this session) left with
    some but fewer than ``minMember`` bound members while pending best-effort members made it ready.
    ``backfill``: whether the conf has the action that places best-effort members."""
    notes: dict[str, str] = {}
    for uid in sorted(set(placed)):
        job = jobs.get(uid)
        if job is None:
            continue
        bound = bound_members(job)
        if not 0 < bound < job.min_available:
            continue
        waiting = sorted(
            (t for t in job.iter_tasks_in(TaskStatus.PENDING) if t.best_effort), key=lambda t: t.key
        )
        if not waiting:
            continue
        reasons = []
        for t in waiting:
            if t.sch_gated:
                gates = " ".join(t.pod.scheduling_gates)
                why = f"waiting for scheduling gates: [{gates}]"
            else:
                why = job.fit_errors.get(t.uid) or (
                    "not placed by backfill" if backfill else "the conf has no backfill action"
                )
            reasons.append(f"{t.key} ({why})")
        notes[uid] = (
            f"Gang below minMember by Volcano's readiness rule: {bound} of minMember "
            f"{job.min_available} members bound after allocate counted pending best-effort members "
            f"as ready, which could not be placed: {'; '.join(reasons)}."
        )
    return notes


def with_note(
    conditions: list[dict[str, str]], note: str, transition_id: str, stamp: str
) -> list[dict[str, str]]:
    """``conditions`` with ``note`` in the ``Unschedulable`` condition: added to the message a
    plugin set in this session (``transition_id``), else as the condition's own message."""
    out = [dict(c) for c in conditions]
    for cond in out:
        if cond.get("type") != CONDITION_TYPE:
            continue
        message = cond.get("message") or ""
        if note in message:
            return out
        if cond.get("transitionID") == transition_id and cond.get("status") == "True" and message:
            cond["message"] = f"{message} {note}" if message.endswith(".") else f"{message}. {note}"
            return out
        cond.update(
            status="True",
            reason=CONDITION_REASON,
            message=note,
            transitionID=transition_id,
            lastTransitionTime=stamp,
        )
        return out
    out.append(
        {
            "type": CONDITION_TYPE,
            "status": "True",
            "reason": CONDITION_REASON,
            "message": note,
            "transitionID": transition_id,
            "lastTransitionTime": stamp,
        }
    )
    return out


__all__ = [
    "CONDITION_REASON",
    "CONDITION_TYPE",
    "best_effort_notes",
    "bound_members",
    "gang_break_notes",
    "with_note",
]
