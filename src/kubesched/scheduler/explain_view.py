"""Human view of one pod's latest scheduling attempt (``kubesched explain``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.framework.outcome import PodOutcome
from kubesched.scheduler.explain import PASSED


def filter_summary(explain: dict[str, Any]) -> tuple[int, dict[str, Counter[str]], int]:
    """(nodes evaluated, plugin → reason histogram of the nodes it rejected, nodes that passed)."""
    rejected: dict[str, Counter[str]] = defaultdict(Counter)
    passed = 0
    filters: dict[str, dict[str, str]] = explain.get("filter") or {}
    for plugins in filters.values():
        verdicts = list(plugins.items())
        if verdicts and verdicts[-1][1] != PASSED:
            plugin, reason = verdicts[-1]
            rejected[plugin][reason] += 1
        else:
            passed += 1
    return len(filters), dict(rejected), passed


def top_nodes(explain: dict[str, Any], top: int) -> list[tuple[str, int]]:
    totals: dict[str, int] = explain.get("totalScore") or {}
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def render_explain(outcome: PodOutcome, console: Console, top: int = 5) -> None:
    where = f" on [bold]{escape(outcome.node)}[/]" if outcome.node else ""
    head = f"[bold]Pod {escape(outcome.key)}[/]: {outcome.status}{where}"
    console.print(f"{head} (attempts: {outcome.attempts})")
    if outcome.message:
        console.print(escape(outcome.message))
    explain = outcome.explain
    if not explain:
        console.print("No scheduling attempt was recorded for this pod.")
        return
    preemption = explain.get("preemption")
    if preemption:
        victims = ", ".join(preemption.get("victims") or []) or "none"
        console.print(
            f"Preemption: nominated to [bold]{escape(str(preemption.get('nominatedNode')))}[/], "
            f"evicted {escape(victims)}"
        )
    post = explain.get("postFilter")
    if post and post.get("message"):
        console.print(f"PostFilter {escape(str(post.get('plugin')))}: {escape(str(post['message']))}")
    pre = explain.get("preFilter")
    if pre:
        console.print(f"Rejected at PreFilter by {escape(pre['plugin'])}: {escape(pre['reason'])}")
        return
    evaluated, rejected, passed = filter_summary(explain)
    table = Table(title=f"Filter: {evaluated} node(s) evaluated, {passed} passed", title_justify="left")
    table.add_column("PLUGIN")
    table.add_column("REJECTED", justify="right")
    table.add_column("REASONS", overflow="fold")
    for plugin, reasons in sorted(rejected.items(), key=lambda kv: -sum(kv[1].values())):
        text = "; ".join(f"{escape(r)} ({n})" for r, n in reasons.most_common())
        table.add_row(plugin, str(sum(reasons.values())), text)
    if rejected:
        console.print(table)
    else:
        console.print(table.title)
    best = top_nodes(explain, top)
    if not best:
        if passed == 1:
            console.print("One feasible node: chosen without scoring.")
        return
    final: dict[str, dict[str, int]] = explain.get("finalScore") or {}
    raw: dict[str, dict[str, int]] = explain.get("score") or {}
    plugins = sorted({p for node, _ in best for p in final.get(node, {})})
    scores = Table(
        title=f"Scores: top {len(best)} of {len(explain.get('totalScore') or {})} feasible node(s)",
        title_justify="left",
    )
    scores.add_column("NODE")
    scores.add_column("TOTAL", justify="right")
    for p in plugins:
        scores.add_column(p, justify="right")
    for node, total in best:
        cells = [f"{final[node].get(p, 0)} (raw {raw.get(node, {}).get(p, 0)})" for p in plugins]
        scores.add_row(escape(node), str(total), *cells)
    console.print(scores)
