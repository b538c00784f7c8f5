"""An attempt's record as kube-scheduler-simulator's result annotations."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from kubesched.scheduler.result_annotations import (
    FILTER_RESULT,
    FINALSCORE_RESULT,
    KEYS,
    NORMALIZEDSCORE_RESULT,
    POSTFILTER_RESULT,
    PREFILTER_STATUS,
    SCORE_RESULT,
    SELECTED_NODE,
    TOTAL_ANNOTATION_SIZE_LIMIT,
    result_annotations,
)


def entry(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "filter": {},
        "score": {},
        "normalizedScore": {},
        "finalScore": {},
        "totalScore": {},
        "preFilter": None,
        "postFilter": None,
        "preemption": None,
    }
    return base | fields


def test_scores_are_strings_per_node_and_plugin_as_the_simulator_writes_them() -> None:
    out = result_annotations(
        entry(
            filter={"n1": {"NodeResourcesFit": "passed"}, "n2": {"NodeResourcesFit": "Insufficient cpu"}},
            score={"n1": {"TaintToleration": 0}},
            normalizedScore={"n1": {"TaintToleration": 100}},
            finalScore={"n1": {"TaintToleration": 300}},
        ),
        "n1",
    )
    assert set(out) == set(KEYS)
    assert json.loads(out[FILTER_RESULT])["n2"] == {"NodeResourcesFit": "Insufficient cpu"}
    assert json.loads(out[SCORE_RESULT]) == {"n1": {"TaintToleration": "0"}}
    assert json.loads(out[FINALSCORE_RESULT]) == {"n1": {"TaintToleration": "300"}}
    assert json.loads(out[NORMALIZEDSCORE_RESULT]) == {"n1": {"TaintToleration": "100"}}
    assert out[SELECTED_NODE] == "n1"
    assert json.loads(out[PREFILTER_STATUS]) == {}
    assert json.loads(out[POSTFILTER_RESULT]) == {}


def test_prefilter_rejection_and_the_preemption_victims_node() -> None:
    out = result_annotations(entry(preFilter={"plugin": "NodeAffinity", "reason": "no nodes"}))
    assert json.loads(out[PREFILTER_STATUS]) == {"NodeAffinity": "no nodes"}
    out = result_annotations(
        entry(
            filter={
                "n1": {"NodeResourcesFit": "Insufficient cpu"},
                "n2": {"NodeResourcesFit": "Insufficient cpu"},
            },
            postFilter={"plugin": "DefaultPreemption", "message": ""},
            preemption={"nominatedNode": "n2", "victims": ["default/low"]},
        )
    )
    assert json.loads(out[POSTFILTER_RESULT]) == {"n1": {}, "n2": {"DefaultPreemption": "preemption victim"}}
    assert out[SELECTED_NODE] == ""


def test_results_too_large_for_a_pod_leave_the_per_node_ones_out() -> None:
    nodes = {
        f"node-{i:05d}": {p: "passed" for p in ("NodeName", "NodeResourcesFit", "TaintToleration")}
        for i in range(5000)
    }
    out = result_annotations(entry(filter=nodes), "node-00001")
    assert FILTER_RESULT not in out and SCORE_RESULT not in out
    assert out[SELECTED_NODE] == "node-00001"
    assert sum(len(k) + len(v) for k, v in out.items()) < TOTAL_ANNOTATION_SIZE_LIMIT


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@given(st.dictionaries(names, st.dictionaries(names, st.integers(-(2**40), 2**40), max_size=4), max_size=6))
def test_every_score_reads_back_as_recorded(scores: dict[str, dict[str, int]]) -> None:
    out = result_annotations(entry(score=scores, finalScore=scores, normalizedScore=scores))
    for key in (SCORE_RESULT, FINALSCORE_RESULT, NORMALIZEDSCORE_RESULT):
        back = json.loads(out[key])
        assert {n: {p: int(v) for p, v in ps.items()} for n, ps in back.items()} == scores
