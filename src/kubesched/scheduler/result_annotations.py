"""A pod's latest scheduling attempt as kube-scheduler-simulator's result annotations.

kube-scheduler-simulator writes what each plugin decided onto the pod, one JSON annotation per
extension point under ``kube-scheduler-simulator.sigs.k8s.io/``: ``filter-result`` (node → plugin →
``"passed"`` or the reason), ``score-result`` (node → plugin → raw score), ``finalscore-result``
(node → plugin → normalized score times the plugin's weight), ``postfilter-result`` (node → plugin
→ ``"preemption victim"`` on the nominated node), ``prefilter-result-status`` (plugin → reason),
``prefilter-result`` (plugin → the nodes it allowed) and ``selected-node``. Scores are strings, as
the simulator writes them. Tools made for the simulator read the same keys from our pods; the
normalized scores, which the simulator does not keep, go in ``kubesched.io/normalizedscore-result``.
"""

from __future__ import annotations

from typing import Any

import orjson

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = PREFIX + "prefilter-result-status"
PREFILTER_RESULT = PREFIX + "prefilter-result"
FILTER_RESULT = PREFIX + "filter-result"
POSTFILTER_RESULT = PREFIX + "postfilter-result"
SCORE_RESULT = PREFIX + "score-result"
FINALSCORE_RESULT = PREFIX + "finalscore-result"
SELECTED_NODE = PREFIX + "selected-node"
NORMALIZEDSCORE_RESULT = "kubesched.io/normalizedscore-result"

#: The simulator's message on the node a preemption nominated.
PREEMPTION_VICTIM = "preemption victim"

#: kube-apiserver's limit on all of an object's annotations together (``TotalAnnotationSizeLimitB``).
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

#: Every key written, so that a later attempt's annotations replace all of an earlier one's.
KEYS = (
    PREFILTER_STATUS,
    PREFILTER_RESULT,
    FILTER_RESULT,
    POSTFILTER_RESULT,
    SCORE_RESULT,
    FINALSCORE_RESULT,
    SELECTED_NODE,
    NORMALIZEDSCORE_RESULT,
)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _as_strings(scores: dict[str, dict[str, int]]) -> dict[str, dict[str, str]]:
    return {node: {plugin: str(v) for plugin, v in plugins.items()} for node, plugins in scores.items()}


def result_annotations(entry: dict[str, Any], selected_node: str = "") -> dict[str, str]:
    """The annotations of one attempt's record (:class:`~kubesched.scheduler.explain.ExplainRecorder`).

    When the per-node results would take the pod past the annotation size limit (a large cluster),
    they are left out and only what fits is written: the PreFilter and PostFilter results and the
    selected node."""
    pre = entry.get("preFilter")
    filters: dict[str, dict[str, str]] = entry.get("filter") or {}
    post = entry.get("postFilter")
    preemption = entry.get("preemption")
    postfilter: dict[str, dict[str, str]] = {}
    if post is not None:
        postfilter = {node: {} for node in filters}
        nominated = (preemption or {}).get("nominatedNode")
        if nominated and post.get("plugin"):
            postfilter[nominated] = {post["plugin"]: PREEMPTION_VICTIM}
    out = {
        PREFILTER_STATUS: _json({pre["plugin"]: pre["reason"]} if pre else {}),
        PREFILTER_RESULT: "{}",
        POSTFILTER_RESULT: _json(postfilter),
        SELECTED_NODE: selected_node,
    }
    detailed = {
        FILTER_RESULT: _json(filters),
        SCORE_RESULT: _json(_as_strings(entry.get("score") or {})),
        FINALSCORE_RESULT: _json(_as_strings(entry.get("finalScore") or {})),
        NORMALIZEDSCORE_RESULT: _json(_as_strings(entry.get("normalizedScore") or {})),
    }
    size = sum(len(k) + len(v) for k, v in (out | detailed).items())
    if size <= TOTAL_ANNOTATION_SIZE_LIMIT // 2:
        out |= detailed
    else:
        out[POSTFILTER_RESULT] = "{}"
    return out
