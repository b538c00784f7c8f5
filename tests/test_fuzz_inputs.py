"""Fuzzing what a careless or hostile user hands kubesched: manifests, trace rows and flags.

Every input must end in exit 0/1 with a result, or exit 2 with one located ``error:`` line; never a
traceback, and quickly. A second group checks random clusters with extreme (but valid) quantities
against invariants computed from the input alone.
"""

from __future__ import annotations

import json
import os
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.quantity import parse_quantity
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNSCHEDULABLE, main

#: Examples per fuzz test; raise KUBESCHED_FUZZ_EXAMPLES for a deeper run than the suite's.
EXAMPLES = int(os.environ.get("KUBESCHED_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: Wall time any one fuzzed input may take.
SECONDS = 5.0


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI; argparse usage errors count as exit 2. Anything else escaping fails the test."""
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert time.monotonic() - start < SECONDS, f"took too long: {argv}"
    assert code in (EXIT_OK, EXIT_UNSCHEDULABLE, EXIT_BAD_INPUT), (code, err)
    assert "Traceback" not in err
    if code == EXIT_BAD_INPUT:
        assert err.strip(), "exit 2 without a message"
    return code, out, err


# --------------------------------------------------------------------------- manifests

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["1", "100m", "4Ei", "8Ei", "9e18", "1e999", "-1", "0.5", "Ki", "1.5Gi", "", "In", "Exists"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["key", "operator", "values", "weight", "name", "a"]), inner, max_size=3
        ),
    ),
    max_leaves=8,
)
#: Field paths of a pod or node a mutation may overwrite, with the base value left elsewhere.
POD_PATHS: list[tuple[str, ...]] = [
    ("spec", "priority"),
    ("spec", "nodeName"),
    ("spec", "schedulerName"),
    ("spec", "containers", 0, "resources", "requests", "cpu"),
    ("spec", "containers", 0, "resources", "requests", "memory"),
    ("spec", "containers", 0, "resources", "requests", "pods"),
    ("spec", "containers", 0, "resources", "requests", "example.com/foo"),
    ("spec", "containers", 0, "resources", "limits", "memory"),
    ("spec", "containers", 0, "ports"),
    ("spec", "initContainers"),
    ("spec", "overhead"),
    ("spec", "tolerations"),
    ("spec", "nodeSelector"),
    ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    ("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
    ("spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    ("spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
    ("spec", "topologySpreadConstraints"),
    ("spec", "priorityClassName"),
    ("spec", "preemptionPolicy"),
    ("metadata", "annotations", "scheduling.k8s.io/group-name"),
    ("metadata", "annotations", "kubesched.io/arrival"),
    ("metadata", "annotations", "kubesched.io/duration"),
    ("metadata", "labels"),
    ("metadata", "namespace"),
    ("spec", "containers", 0, "name"),
    ("spec", "schedulingGates"),
    ("spec", "resources"),
]
NODE_PATHS: list[tuple[str, ...]] = [
    ("status", "allocatable", "cpu"),
    ("status", "allocatable", "memory"),
    ("status", "allocatable", "pods"),
    ("status", "allocatable", "example.com/foo"),
    ("status", "capacity"),
    ("status", "images"),
    ("spec", "taints"),
    ("spec", "unschedulable"),
    ("metadata", "labels"),
]


def base_node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def base_pod(name: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        if isinstance(key, int):
            obj = obj[key]
        else:
            nxt = obj.get(key)
            if not isinstance(nxt, dict | list):
                nxt = {}
                obj[key] = nxt
            obj = nxt
    obj[path[-1]] = value


@st.composite
def manifests(draw: st.DrawFn) -> list[dict[str, Any]]:
    node = base_node()
    for path in draw(st.lists(st.sampled_from(NODE_PATHS), max_size=2, unique=True)):
        set_path(node, path, draw(values))
    pods = []
    for i in range(draw(st.integers(1, 3))):
        pod = base_pod(f"p{i}", draw(st.sampled_from(["default-scheduler", "volcano"])))
        for path in draw(st.lists(st.sampled_from(POD_PATHS), max_size=2, unique=True)):
            set_path(pod, path, draw(values))
        pods.append(pod)
    return [node, base_node() | {"metadata": {"name": "n2"}}, *pods]


@FUZZ
@given(docs=manifests())
def test_fuzzed_manifests_end_in_a_result_or_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]]
) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, err = run_cli(["simulate", str(path), "-o", "json"], capsys)
    if code == EXIT_BAD_INPUT:
        assert err.startswith(f"error: {path}"), err
    else:
        assert json.loads(out)["pods"]


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{},&*!|>'\"#%@`\n ?0.")), max_size=200))
def test_fuzzed_yaml_text_is_read_or_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text)
    code, _, err = run_cli(["simulate", str(path), "-o", "json"], capsys)
    if code == EXIT_BAD_INPUT:
        assert str(path) in err or "give manifest files" in err


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.integers(4, 12), width=st.integers(2, 12))
def test_alias_bombs_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int, width: int
) -> None:
    lines = ["apiVersion: v1", "kind: Pod", "metadata: {name: x}", "l0: &l0 [lol]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    lines.append(f"spec: {{schedulerName: volcano, containers: [{{name: a}}], x: *l{levels - 1}}}")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    run_cli(["simulate", str(path), "-o", "json"], capsys)


# --------------------------------------------------------------------------- trace rows

cells = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=',\n\r"\x00'), max_size=10
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(
        ["1e400", "nan", "inf", "-1", "2562048h", "1ns", "8Ei", "9999-12-31 23:59:59", "0001-01-01 00:00:00"]
    ),
)
GENERIC = [
    "name",
    "namespace",
    "arrival",
    "duration",
    "cpu",
    "memory",
    "gpu",
    "priority",
    "group",
    "group_size",
    "queue",
]


@FUZZ
@given(rows=st.lists(st.lists(cells, min_size=len(GENERIC), max_size=len(GENERIC)), min_size=1, max_size=4))
def test_fuzzed_generic_trace_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[list[str]]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(",".join(GENERIC) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(base_node()))
    for mode in ("skip", "fail"):
        run_cli(
            ["simulate", "--trace", str(trace), "--nodes", str(nodes), "--on-bad-row", mode, "-q"], capsys
        )


@FUZZ
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S")), cells),
            cells,
            st.one_of(st.integers(-2, 40).map(str), cells),
            st.sampled_from(["vc1", "vc2", ""]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_fuzzed_philly_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[tuple[str, str, str, str]]
) -> None:
    trace = tmp_path / "philly.csv"
    body = "".join(f"{ts},{dur},{gpus},0,{vc}\n" for ts, dur, gpus, vc in rows)
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + body)
    nodes = tmp_path / "nodes.yaml"
    node = base_node()
    node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "vc1"}}
    nodes.write_text(yaml.safe_dump_all([node, queue]))
    run_cli(["simulate", "--trace", str(trace), "--nodes", str(nodes), "-q", "-o", "json"], capsys)


# --------------------------------------------------------------------------- flags

flag_values = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["1ns", "1s", "0", "-1s", "1e400s", "2562048h", "nan", "", "1h30m", "0.000001s"]),
    st.text(max_size=6),
)
FLAGS = ["--seed", "--sample-every", "--schedule-period", "--limit"]


@FUZZ
@given(flag=st.sampled_from(FLAGS), value=flag_values)
def test_fuzzed_simulate_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("name,arrival,duration,cpu\na,0,1,1\nb,8760h,1h,1\n")
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(base_node()))
    argv = ["simulate", "--trace", str(trace), "--nodes", str(nodes), "-q", "-o", "json"]
    code, _, err = run_cli([*argv, "--export", str(tmp_path / "out"), f"{flag}={value}"], capsys)
    if code == EXIT_BAD_INPUT:
        assert flag in err


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flag=st.sampled_from(["--nodes", "--pods", "--existing-pods", "--seed"]), value=st.integers(-(2**65), 0)
)
def test_bench_refuses_negative_sizes(capsys: pytest.CaptureFixture[str], flag: str, value: int) -> None:
    if flag == "--seed" and value == 0:
        return  # a valid seed; the default workload is a benchmark, too slow for a fuzz example
    if flag in ("--pods", "--existing-pods") and value == 0:
        return
    code, _, err = run_cli(["bench", flag, str(value)], capsys)
    assert code == EXIT_BAD_INPUT
    assert f"argument {flag}:" in err


# --------------------------------------------------------------------------- invariants

#: Amounts from tiny to the int64 edge, as quantities: bytes spelled with binary suffixes.
big_memory = st.sampled_from(["1Ki", "1Gi", "1Pi", "1Ei", "4Ei", "7Ei", "8Ei", "9223372036854775807"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    nodes=st.lists(big_memory, min_size=1, max_size=3),
    pods=st.lists(
        st.tuples(
            st.lists(big_memory, min_size=1, max_size=3), st.sampled_from(["default-scheduler", "volcano"])
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_placements_never_exceed_allocatable_computed_exactly(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    nodes: list[str],
    pods: list[tuple[list[str], str]],
) -> None:
    docs: list[dict[str, Any]] = []
    allocatable: dict[str, Fraction] = {}
    for i, memory in enumerate(nodes):
        name = f"n{i}"
        allocatable[name] = parse_quantity(memory)
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "64", "memory": memory, "pods": "110"}},
            }
        )
    requested: dict[str, Fraction] = {}
    for j, (containers, scheduler) in enumerate(pods):
        requested[f"p{j}"] = sum((parse_quantity(m) for m in containers), Fraction(0))
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{j}"},
                "spec": {
                    "schedulerName": scheduler,
                    "containers": [
                        {"name": f"c{k}", "resources": {"requests": {"memory": m}}}
                        for k, m in enumerate(containers)
                    ],
                },
            }
        )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, err = run_cli(["simulate", str(path), "-o", "json"], capsys)
    assert code == EXIT_OK, err
    used: dict[str, Fraction] = {}
    for pod in json.loads(out)["pods"]:
        if pod["node"] is not None:
            used[pod["node"]] = used.get(pod["node"], Fraction(0)) + requested[pod["name"]]
    for node, total in used.items():
        assert total <= allocatable[node], (node, total, allocatable[node])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exponent=st.integers(10, 62))
def test_a_node_with_more_free_memory_scores_at_least_as_high(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], exponent: int
) -> None:
    big = str(2**exponent + 2**40)  # always above the small node's 1Ti
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": memory, "pods": "110"}},
        }
        for name, memory in (("big", big), ("small", "1Ti"))
    ]
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
        }
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, err = run_cli(["simulate", str(path), "-o", "json", "--explain"], capsys)
    assert code == EXIT_OK, err
    scores = json.loads(out)["pods"][0]["finalScore"]
    assert scores["big"]["NodeResourcesFit"] >= scores["small"]["NodeResourcesFit"]
