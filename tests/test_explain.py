"""The --explain contract of DESIGN §5: per node, per plugin filter verdicts and scores."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from kubesched.api.manifests import load_manifests
from kubesched.cli.simulate import result_document
from kubesched.scheduler.explain_view import render_explain
from kubesched.sim.simulation import Simulation

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DEFAULT_WEIGHTS = {"NodeResourcesFit": 1, "TaintToleration": 3}


def _explained() -> dict:
    sim = Simulation(seed=1, explain=True)
    sim.load(load_manifests([str(QUICKSTART)]))
    return result_document(sim.run(), explain=True)


def test_scores_are_normalized_times_weight_and_sum_to_total() -> None:
    doc = _explained()
    web = next(p for p in doc["pods"] if p["name"] == "web-1")
    assert web["status"] == "Scheduled"
    assert web["totalScore"], "a pod with several feasible nodes is scored"
    for node, total in web["totalScore"].items():
        final = web["finalScore"][node]
        for plugin, value in final.items():
            weight = DEFAULT_WEIGHTS.get(plugin, 1)
            assert value == web["normalizedScore"][node][plugin] * weight
            assert 0 <= web["normalizedScore"][node][plugin] <= 100
        assert total == sum(final.values())
    # The chosen node has the highest total.
    assert web["totalScore"][web["node"]] == max(web["totalScore"].values())


def test_filter_lists_plugins_until_the_first_rejection() -> None:
    doc = _explained()
    gpu = next(p for p in doc["pods"] if p["name"] == "notebook-gpu")
    assert gpu["status"] == "Unschedulable"
    tainted = gpu["filter"]["gpu-c1"]
    assert tainted["TaintToleration"] == "node(s) had untolerated taint(s)"
    # Upstream stops at a node's first failing filter: later plugins did not run there.
    assert "NodeResourcesFit" not in tainted
    cordoned = gpu["filter"]["worker-b2"]
    assert cordoned == {"NodeUnschedulable": "node(s) were unschedulable"}
    plain = gpu["filter"]["worker-a1"]
    assert plain["TaintToleration"] == "passed"
    assert plain["NodeResourcesFit"] == "Insufficient nvidia.com/gpu"
    assert gpu["totalScore"] == {}


def test_explain_off_leaves_the_fields_out() -> None:
    sim = Simulation(seed=1)
    sim.load(load_manifests([str(QUICKSTART)]))
    doc = result_document(sim.run(), explain=False)
    assert all("filter" not in p for p in doc["pods"])


def test_render_explain_names_rejecting_plugins_and_top_nodes() -> None:
    sim = Simulation(seed=1, explain=True)
    sim.load(load_manifests([str(QUICKSTART)]))
    outcomes = {o.key: o for o in sim.run().outcomes}
    console = Console(record=True, width=200)
    render_explain(outcomes["ml/notebook-gpu"], console)
    render_explain(outcomes["shop/web-1"], console)
    text = console.export_text()
    assert "Insufficient nvidia.com/gpu (4)" in text
    assert "node(s) were unschedulable (1)" in text
    assert "Scores: top 4 of 4 feasible node(s)" in text


def test_explain_command_shows_one_pod(capsys) -> None:
    from kubesched.cli import main

    code = main(["explain", str(QUICKSTART), "--pod", "analytics/giant-simulation", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Pod analytics/giant-simulation: Unschedulable" in out
    assert "Insufficient cpu, Insufficient memory (4)" in out
    assert "node(s) were unschedulable (1)" in out


def test_explain_command_unknown_pod_is_bad_input(capsys) -> None:
    from kubesched.cli import main

    code = main(["explain", str(QUICKSTART), "--pod", "shop/missing"])
    assert code == 2
    assert "no pending pod shop/missing" in capsys.readouterr().err


def test_summary_counts_pods_for_schedulers_without_a_profile() -> None:
    sim = Simulation(seed=1)
    sim.load(load_manifests([str(QUICKSTART)]))
    doc = result_document(sim.run(), explain=False)
    # analytics/legacy-job asks for "legacy-scheduler", which no profile serves.
    assert doc["summary"]["noSchedulerProfile"] == 1
    legacy = next(p for p in doc["pods"] if p["name"] == "legacy-job")
    assert legacy["status"] == "Pending"
    assert legacy["message"] == "no scheduler profile named 'legacy-scheduler'"
