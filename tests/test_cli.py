"""The ``kubesched simulate`` command line (DESIGN §5): output shapes, exit codes, error lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.manifests import load_manifests
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNSCHEDULABLE, main
from kubesched.sim.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"

TAINTED_CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: tainted}
spec:
  taints: [{key: dedicated, value: infra, effect: NoSchedule}]
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
"""

UNTOLERATED_1 = (
    "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    " no new claims to deallocate,"
    " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)

NO_TAINT_TOLERATION = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      multiPoint:
        disabled: [{name: TaintToleration}]
"""


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    # rich wraps tables at the terminal width; keep rows on one line so tests can read them
    monkeypatch.setenv("COLUMNS", "250")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == EXIT_OK, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def by_key(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{p['namespace']}/{p['name']}": p for p in doc["pods"]}


# -- the quickstart -----------------------------------------------------------------------------------


def test_quickstart_json_shape_and_statuses(capsys):
    doc = run_json(capsys, str(QUICKSTART))
    assert set(doc) == {"pods", "evicted", "summary"}
    assert doc["evicted"] == []
    for pod in doc["pods"]:
        assert set(pod) == {"namespace", "name", "node", "status", "message"}
        assert pod["status"] in ("Scheduled", "Unschedulable", "Pending", "Bound")
        assert (pod["node"] is None) == (pod["status"] not in ("Scheduled", "Bound"))
    pods = by_key(doc)
    # the already-bound postgres is not a decision of this run: its kubelet admitted it
    assert pods.pop("shop/postgres-0")["status"] == "Bound"
    assert set(pods) == {
        "analytics/giant-simulation",
        "analytics/legacy-job",
        "analytics/nightly-etl",
        "analytics/report-builder",
        "ml/llm-finetune",
        "ml/notebook-gpu",
        "shop/web-1",
        "shop/web-2",
        "shop/web-3",
    }
    # sorted by namespace, then name
    assert [f"{p['namespace']}/{p['name']}" for p in doc["pods"]] == sorted(by_key(doc))

    # tolerates the GPU taint, and only gpu-c1 has GPUs
    assert pods["ml/llm-finetune"]["node"] == "gpu-c1"
    assert pods["ml/llm-finetune"]["status"] == "Scheduled"
    # 12 cpu: only worker-c1 (16) and the tainted gpu-c1 (32) are big enough
    assert pods["analytics/report-builder"]["node"] == "worker-c1"

    nb = pods["ml/notebook-gpu"]
    assert nb["status"] == "Unschedulable"
    assert nb["message"].startswith("0/7 nodes are available:")
    # Since kubernetes/kubernetes#134740 (v1.35, cherry-picked to v1.34) the TaintToleration reason
    # names no taint ("node(s) had untolerated taint {key: value}" before): control-plane-1 and gpu-c1.
    assert nb["message"] == (
        "0/7 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s), "
        "4 Insufficient nvidia.com/gpu."
        # No node can ever hold the GPU (nor tolerate/uncordon): preemption cannot help anywhere.
        " no new claims to deallocate,"
        " preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
    )

    giant = pods["analytics/giant-simulation"]
    assert giant["status"] == "Unschedulable"
    # worker-c1 would fit the memory, but report-builder (higher priority) went there first
    assert giant["message"] == (
        "0/7 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s), "
        "4 Insufficient cpu, 4 Insufficient memory."
        # 48 CPUs is more than any node has: no eviction can make room.
        " no new claims to deallocate,"
        " preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
    )

    legacy = pods["analytics/legacy-job"]
    assert legacy["status"] == "Pending"
    assert legacy["node"] is None
    assert "legacy-scheduler" in legacy["message"]

    etl = pods["analytics/nightly-etl"]
    assert etl["status"] == "Pending"
    assert "example.com/quota-approval" in etl["message"]

    for name in ("shop/web-1", "shop/web-2", "shop/web-3"):
        assert pods[name]["status"] == "Scheduled"
        assert pods[name]["node"] not in ("control-plane-1", "worker-b2", "gpu-c1")

    assert doc["summary"] == {"scheduled": 5, "unschedulable": 2, "pending": 2, "noSchedulerProfile": 1}


def test_quickstart_table(capsys):
    code, out, err = run(capsys, str(QUICKSTART))
    assert code == EXIT_OK
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("│")}
    assert "gpu-c1" in rows["ml/llm-finetune"]
    assert "Scheduled" in rows["ml/llm-finetune"]
    assert "Unschedulable" in rows["ml/notebook-gpu"]
    assert "Pending" in rows["analytics/nightly-etl"]
    assert "5 scheduled, 2 unschedulable, 2 pending" in out
    # the Deployment is skipped with a one-line warning
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "skipping Deployment not-simulated-yet: kind Deployment is not used" in warnings[0]


def test_quiet_suppresses_warnings(capsys):
    code, _, err = run(capsys, str(QUICKSTART), "-q")
    assert code == EXIT_OK
    assert err == ""


def test_yaml_output_matches_json(capsys):
    doc = run_json(capsys, str(QUICKSTART))
    code, out, _ = run(capsys, str(QUICKSTART), "-o", "yaml")
    assert code == EXIT_OK
    assert yaml.safe_load(out) == doc


def test_same_seed_same_output(capsys):
    first = run(capsys, str(QUICKSTART), "--seed", "42", "-o", "json")
    second = run(capsys, str(QUICKSTART), "--seed", "42", "-o", "json")
    assert first == second
    assert first[0] == EXIT_OK


def test_files_given_one_by_one_and_stdin(capsys, monkeypatch):
    whole = run_json(capsys, str(QUICKSTART))
    workloads = (QUICKSTART / "workloads.yaml").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(workloads))
    code, out, _ = run(
        capsys, str(QUICKSTART / "nodes.yaml"), str(QUICKSTART / "priorities.yaml"), "-", "-o", "json"
    )
    assert code == EXIT_OK
    assert json.loads(out) == whole


# -- exit codes ---------------------------------------------------------------------------------------


def test_fail_on_unschedulable(capsys, tmp_path):
    code, _, _ = run(capsys, str(QUICKSTART), "--fail-on-unschedulable", "-q")
    assert code == EXIT_UNSCHEDULABLE == 1
    # nothing left behind: exit 0 even when asked to fail
    untainted = TAINTED_CLUSTER.replace(
        "  taints: [{key: dedicated, value: infra, effect: NoSchedule}]\n", ""
    )
    ok = write(tmp_path, "ok.yaml", untainted)
    code, out, _ = run(capsys, ok, "--fail-on-unschedulable", "-o", "json")
    assert code == EXIT_OK
    assert json.loads(out)["summary"]["scheduled"] == 1


def test_unschedulable_without_flag_exits_zero(capsys, tmp_path):
    code, out, _ = run(capsys, write(tmp_path, "c.yaml", TAINTED_CLUSTER), "-o", "json")
    assert code == EXIT_OK
    [pod] = json.loads(out)["pods"]
    assert pod["status"] == "Unschedulable"
    assert pod["message"] == UNTOLERATED_1


def test_config_disabling_taint_toleration_changes_the_outcome(capsys, tmp_path):
    cluster = write(tmp_path, "c.yaml", TAINTED_CLUSTER)
    config = write(tmp_path, "ksc.yaml", NO_TAINT_TOLERATION)
    [before] = run_json(capsys, cluster)["pods"]
    [after] = run_json(capsys, cluster, "--config", config)["pods"]
    assert before["status"] == "Unschedulable"
    assert (after["status"], after["node"]) == ("Scheduled", "tainted")


# -- bad input: exit 2, one line naming the file and field, no traceback ------------------------------

GOOD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]
"""

BAD_MANIFESTS = {
    "bad quantity": (GOOD_POD.replace("500m", "abc"), "field spec.containers[0].resources.requests.cpu"),
    "missing name": (GOOD_POD.replace("name: web, ", ""), "field metadata.name"),
    "wrong type": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: 5}\n",
        "field spec.containers",
    ),
    "bad toleration": (
        GOOD_POD + "  tolerations: [{key: a, operator: Sometimes}]\n",
        "field spec.tolerations[0].operator",
    ),
}


def assert_bad_input(code: int, out: str, err: str, path: str, *needles: str) -> None:
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert err.startswith(f"error: {path}: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
def test_bad_manifest_exits_2(capsys, tmp_path, case):
    text, field = BAD_MANIFESTS[case]
    path = write(tmp_path, "bad.yaml", text)
    code, out, err = run(capsys, path, "-o", "json")
    assert_bad_input(code, out, err, path, "document 1", field)


def test_unknown_plugin_in_config_exits_2(capsys, tmp_path):
    cluster = write(tmp_path, "c.yaml", TAINTED_CLUSTER)
    config = write(
        tmp_path,
        "ksc.yaml",
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
          - plugins:
              filter:
                enabled: [{name: NoSuchPlugin}]
        """,
    )
    code, out, err = run(capsys, cluster, "--config", config)
    assert_bad_input(
        code, out, err, config, "field profiles[0].plugins.filter.enabled[0].name", "NoSuchPlugin"
    )


def test_bad_config_field_exits_2(capsys, tmp_path):
    cluster = write(tmp_path, "c.yaml", TAINTED_CLUSTER)
    config = write(
        tmp_path,
        "ksc.yaml",
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        percentageOfNodesToScore: 250
        """,
    )
    code, out, err = run(capsys, cluster, "--config", config)
    assert_bad_input(code, out, err, config, "field percentageOfNodesToScore")


def test_missing_manifest_exits_2(capsys, tmp_path):
    missing = str(tmp_path / "nope.yaml")
    code, out, err = run(capsys, missing)
    assert_bad_input(code, out, err, missing, "no such file or directory")


def test_missing_config_exits_2(capsys, tmp_path):
    cluster = write(tmp_path, "c.yaml", TAINTED_CLUSTER)
    missing = str(tmp_path / "ksc.yaml")
    code, out, err = run(capsys, cluster, "--config", missing)
    assert_bad_input(code, out, err, missing)


def test_unknown_priority_class_exits_2(capsys, tmp_path):
    path = write(tmp_path, "p.yaml", GOOD_POD + "  priorityClassName: nope\n")
    code, out, err = run(capsys, path)
    assert_bad_input(code, out, err, path, "Pod shop/web", "field spec.priorityClassName")


# -- the installed program, in a real process ---------------------------------------------------------


def _command() -> list[str]:
    script = Path(sys.executable).parent / "kubesched"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "kubesched.cli"]


def _subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run(
        [*_command(), *args], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env, check=False
    )


def test_installed_command_runs_the_quickstart(capsys):
    proc = _subprocess("simulate", "examples/quickstart", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == run_json(capsys, str(QUICKSTART))
    assert "warning:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_installed_command_bad_input_exits_2(tmp_path):
    path = write(tmp_path, "bad.yaml", GOOD_POD.replace("500m", "abc"))
    proc = _subprocess("simulate", path, "--fail-on-unschedulable")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"error: {path}: document 1: Pod shop/web: field ")
    assert "Traceback" not in proc.stderr


# -- events and conditions (through the Simulation API) -----------------------------------------------


def test_events_and_conditions(tmp_path):
    text = TAINTED_CLUSTER + textwrap.dedent(
        """\
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: tolerant, namespace: ops}
        spec:
          tolerations: [{key: dedicated, operator: Exists}]
          containers: [{name: c, image: x}]
        """
    )
    sim = Simulation()
    sim.load(load_manifests([write(tmp_path, "c.yaml", text)]))
    result = sim.run()
    assert {o.key: o.status for o in result.outcomes} == {
        "default/app": "Unschedulable",
        "ops/tolerant": "Scheduled",
    }
    events = sim.store.list("Event")
    assert events
    assert all(e["apiVersion"] == "events.k8s.io/v1" for e in events)

    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert [e["note"] for e in scheduled] == ["Successfully assigned ops/tolerant to tainted"]
    assert scheduled[0]["type"] == "Normal"
    assert scheduled[0]["regarding"]["kind"] == "Pod"
    assert scheduled[0]["regarding"]["name"] == "tolerant"
    assert scheduled[0]["metadata"]["namespace"] == "ops"

    failed = [e for e in events if e["reason"] == "FailedScheduling"]
    assert failed
    assert {e["note"] for e in failed} == {UNTOLERATED_1}
    assert all(e["type"] == "Warning" and e["regarding"]["name"] == "app" for e in failed)

    app = sim.store.get("Pod", "default", "app")
    assert app is not None
    [cond] = [c for c in app["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "False"
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == failed[0]["note"]
    assert not app["spec"].get("nodeName")

    tolerant = sim.store.get("Pod", "ops", "tolerant")
    assert tolerant is not None
    assert tolerant["spec"]["nodeName"] == "tainted"
    [cond] = [c for c in tolerant["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "True"


def test_bench_offers_every_workload() -> None:
    from kubesched.bench.workloads import WORKLOADS
    from kubesched.cli import build_parser

    parser = build_parser()
    for name in WORKLOADS:
        assert parser.parse_args(["bench", name]).workload == name


def test_bench_json_and_feature_gates(capsys) -> None:
    code, out, _ = run_main(
        capsys, "bench", "basic", "--nodes", "20", "--existing-pods", "0", "--pods", "30", "--json",
        "--feature-gates", "OpportunisticBatching=false",
    )  # fmt: skip
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["scheduled"] == 30 and doc["peak_rss_bytes"] > 0 and doc["cpu_seconds"] > 0
    code, _, err = run_main(capsys, "bench", "basic", "--feature-gates", "NoSuchGate=true")
    assert code == EXIT_BAD_INPUT and "unknown feature gate" in err


@pytest.mark.parametrize("workload", ["per-node-plugin", "extender"])
def test_bench_extension_workloads_run_from_the_command_line(capsys, workload: str) -> None:
    code, out, err = run_main(capsys, "bench", workload, "--nodes", "4", "--pods", "5")
    assert code == EXIT_OK, err
    assert "scheduled=5" in out


def test_bench_writes_its_decisions(capsys, tmp_path) -> None:
    path = tmp_path / "decisions.tsv"
    args = (
        "bench",
        "basic",
        "--nodes",
        "20",
        "--existing-pods",
        "2",
        "--pods",
        "6",
        "--decisions",
        str(path),
    )
    code, _, _ = run_main(capsys, *args)
    assert code == EXIT_OK
    lines = [line.split("\t") for line in path.read_text().splitlines()]
    # The measured pods only, in the order tried, each on a node of the cluster.
    assert [pod for pod, *_ in lines] == [f"default/pod-{i}" for i in range(6)]
    assert all(status == "Scheduled" and node.startswith("node-") for _, node, status, _ in lines)
    # The same seed decides the same way.
    first = path.read_text()
    assert run_main(capsys, *args)[0] == EXIT_OK
    assert path.read_text() == first
    code, _, err = run_main(capsys, "bench", "basic", "--decisions", str(tmp_path / "no" / "such" / "dir"))
    assert code == EXIT_BAD_INPUT and "--decisions" in err


def test_simulate_takes_feature_gates(capsys, tmp_path) -> None:
    path = write(tmp_path, "c.yaml", _TINY)
    code, out, _ = run(capsys, path, "-q", "-o", "json", "--feature-gates", "OpportunisticBatching=false")
    assert code == EXIT_OK and json.loads(out)


_TINY = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Node
    metadata: {name: n1}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: p1, namespace: default}
    spec: {containers: [{name: c, image: pause}]}
    """
)


@pytest.mark.parametrize(
    "name,sizes",
    [
        ("daemonset", {"nodes": 30, "pods": 20}),
        ("unschedulable", {"nodes": 20, "existing_pods": 10, "pods": 300}),
        ("mixed-churn", {"nodes": 20, "pods": 800}),
        ("while-gated", {"existing_pods": 30, "pods": 40}),
        ("extended-resource", {"nodes": 20, "pods": 20}),
        ("preemption-async", {"nodes": 100, "existing_pods": 400, "pods": 250}),
        ("in-tree-pvs", {"nodes": 20, "existing_pods": 20, "pods": 40}),
        ("migrated-in-tree-pvs", {"nodes": 20, "existing_pods": 20, "pods": 40}),
        ("csi-pvs", {"nodes": 20, "existing_pods": 20, "pods": 40}),
        ("preemption-pvs", {"nodes": 10, "existing_pods": 40, "pods": 10}),
    ],
)
def test_bench_suite_workloads_schedule_every_measured_pod(name: str, sizes: dict[str, int]) -> None:
    from kubesched.bench.workloads import WORKLOADS

    res = WORKLOADS[name](**sizes)
    assert res.scheduled == res.measured_pods


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_shows_every_status_without_markup_residue(capsys) -> None:
    """Pods bound in the input are listed as Bound: the status cell holds the word alone."""
    from kubesched.cli import main

    rc = main(["simulate", "examples/quickstart", "--seed", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Bound" in out
    assert "[]" not in out


@pytest.mark.parametrize("name", ["csi-pvs", "migrated-in-tree-pvs"])
def test_bench_volume_workloads_stop_each_node_at_its_csi_limit(name: str) -> None:
    """scheduler_perf's nodes attach 39 EBS volumes each (CSINode): the 40th pod with a volume on a
    node is refused by NodeVolumeLimits, whether its volume is CSI or migrated in-tree."""
    from kubesched.bench.volumes import EBS_ATTACHABLE
    from kubesched.bench.workloads import WORKLOADS

    res = WORKLOADS[name](nodes=2, existing_pods=0, pods=100)
    assert res.scheduled == 2 * EBS_ATTACHABLE


def test_bench_dra_claim_template_gives_each_pod_its_own_device() -> None:
    """SchedulingWithResourceClaimTemplate: every pod's claim is made from the template and
    allocated; with more pods than devices the rest stay pending (no device handed out twice)."""
    from kubesched.bench.dra import run_claim_template

    res = run_claim_template(nodes=3, existing_pods=10, pods=30, devices_per_node=10)
    assert res.scheduled == 20


@pytest.mark.parametrize(
    "name", ["dra-steady-empty", "dra-steady-half", "dra-steady-full", "dra-steady-first-available"]
)
def test_bench_dra_steady_state_frees_each_steps_devices(name: str) -> None:
    """SteadyStateClusterResourceClaimTemplate: each step's pods are deleted before the next, so
    their claims are released and removed; even the full cluster (room for ten) schedules every
    pod, through the prioritized list's second choice too."""
    from kubesched.bench.workloads import WORKLOADS

    res = WORKLOADS[name](nodes=4, pods=40, devices_per_node=5)
    assert res.scheduled == 40


@pytest.mark.parametrize(
    "name",
    [
        "dra-extended-resource-25classes",
        "dra-extended-resource-50classes",
        "dra-implicit-extended-resource-25classes",
    ],
)
def test_bench_dra_extended_resources_are_served_by_devices_until_none_is_left(name: str) -> None:
    """ExtendedResource workloads: no node advertises the extended resource, so each pod gets one
    device through the DeviceClass that backs its resource name (explicit or implicit); once every
    device is taken the rest wait, and without DRAExtendedResource no pod fits at all."""
    from kubesched.bench.workloads import UPSTREAM_THRESHOLDS, WORKLOADS

    res = WORKLOADS[name](nodes=3, existing_pods=10, pods=30, devices_per_node=10)
    assert res.scheduled == 3 * 10 - 10
    off = WORKLOADS[name](nodes=3, existing_pods=0, pods=5, feature_gates={"DRAExtendedResource": False})
    assert off.scheduled == 0
    assert name in UPSTREAM_THRESHOLDS


def test_bench_dra_allocated_claims_take_distinct_devices() -> None:
    """upstream's allocResourceClaims: claims allocated up front each take a device no other has,
    and asking for more claims than devices is refused."""
    from kubesched.bench.dra import allocated_claims

    claims = allocated_claims(16, nodes=4, devices=4, seed=1)
    results = [c["status"]["allocation"]["devices"]["results"][0] for c in claims]
    assert len({(r["pool"], r["device"]) for r in results}) == 16
    with pytest.raises(ValueError, match="every device is taken"):
        allocated_claims(17, nodes=4, devices=4, seed=1)
