"""The neutral workload model: durations and manifests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.annotations import ANNOTATION_ARRIVAL, ANNOTATION_DURATION, ANNOTATION_GROUP
from kubesched.api.durations import format_duration, parse_duration
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError
from kubesched.sim.workload import GroupSpec, Workload, WorkloadNode, WorkloadPod, to_manifests


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("2h", 7200.0),
        ("1h30m", 5400.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("250ms", 0.25),
        ("1m0.5s", 60.5),
        (".5h", 1800.0),
        (" 12 ", 12.0),
        (3, 3.0),
        (2.5, 2.5),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "s", "-5s", "1d", "1h 30m", "abc", "nan", "inf", ".s", "1e3", -1.0, True]
)
def test_parse_duration_rejects(text):
    with pytest.raises(InputError):
        parse_duration(text)


@given(st.text(max_size=30))
def test_parse_duration_only_raises_input_error(text):
    try:
        value = parse_duration(text)
    except InputError:
        return
    assert value >= 0


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_format_duration_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def _workload() -> Workload:
    return Workload(
        pods=[
            WorkloadPod(
                "late",
                arrival=30.0,
                requests={"cpu": 500, "memory": 1 << 30},
                priority=5,
                scheduler_name="volcano",
                group="g",
                group_min_member=1,
                queue="q",
            ),
            WorkloadPod("early", arrival=1.5, duration=90.0, requests={"nvidia.com/gpu": 2}, queue="q"),
        ],
        nodes=[WorkloadNode("n1", {"cpu": 4000, "memory": 8 << 30, "pods": 110}, {"zone": "a"})],
        groups={"g": GroupSpec("g", 1, "q")},
        queues=["q"],
    )


def test_to_manifests_objects_load():
    objs = to_manifests(_workload())
    assert [o["kind"] for o in objs] == ["Queue", "Node", "PodGroup", "Pod", "Pod"]
    node = Node.from_dict(objs[1])
    assert node.name == "n1"
    early, late = (Pod.from_dict(o) for o in objs[3:])
    assert early.name == "early"
    assert early.annotations[ANNOTATION_ARRIVAL] == "1.5s"
    assert early.annotations[ANNOTATION_DURATION] == "90s"
    assert late.annotations[ANNOTATION_GROUP] == "g"
    assert ANNOTATION_DURATION not in late.annotations
    assert late.priority == 5
    assert late.scheduler_name == "volcano"
    assert objs[2]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert objs[2]["spec"] == {"minMember": 1, "queue": "q"}
    assert objs[4]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert objs[3]["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "q"


def test_merge_keeps_both():
    a = _workload()
    b = Workload(nodes=[WorkloadNode("n2")], queues=["q", "r"])
    merged = a.merge(b)
    assert [n.name for n in merged.nodes] == ["n1", "n2"]
    assert merged.queues == ["q", "r"]
    assert len(merged.pods) == 2
