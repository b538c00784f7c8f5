"""Fields the API server validates are validated at load: exit 2 with file, document, object and field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {a: x}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""


def simulate(tmp_path: Path, pod_spec: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n" + textwrap.indent(
        textwrap.dedent(pod_spec), "  "
    )
    path.write_text(NODES + "---\n" + pod)
    code = main(["simulate", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


BAD_SPECS = {
    "preferred node-affinity operator": (
        """\
        affinity:
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              preference:
                matchExpressions: [{key: a, operator: Bogus, values: [x]}]
        containers: [{name: a}]
        """,
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
        ".matchExpressions[0].operator",
    ),
    "preferred node-affinity weight": (
        """\
        affinity:
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 0
              preference: {matchExpressions: [{key: a, operator: Exists}]}
        containers: [{name: a}]
        """,
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    "required node-affinity In without values": (
        """\
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In}]}]
        containers: [{name: a}]
        """,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values",
    ),
    "required node-affinity without terms": (
        """\
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}
        containers: [{name: a}]
        """,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    ),
    "pod affinity without topologyKey": (
        """\
        affinity:
          podAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: x}}
        containers: [{name: a}]
        """,
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
    ),
    "pod anti-affinity selector operator": (
        """\
        affinity:
          podAntiAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 10
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: {matchExpressions: [{key: app, operator: Gt, values: ["1"]}]}
        containers: [{name: a}]
        """,
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
        ".labelSelector.matchExpressions[0].operator",
    ),
    "pod affinity weight above 100": (
        """\
        affinity:
          podAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 101
              podAffinityTerm: {topologyKey: zone, labelSelector: {}}
        containers: [{name: a}]
        """,
        "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    "container requests pods": (
        "containers: [{name: a, resources: {requests: {pods: '5'}}}]\n",
        "spec.containers[0].resources.requests.pods",
    ),
    "init container limits an unqualified unknown resource": (
        "initContainers: [{name: i, resources: {limits: {gpu: '1'}}}]\ncontainers: [{name: a}]\n",
        "spec.initContainers[0].resources.limits.gpu",
    ),
    "fractional extended resource": (
        "containers: [{name: a, resources: {requests: {nvidia.com/gpu: 500m}}}]\n",
        "spec.containers[0].resources.requests.nvidia.com/gpu",
    ),
    "container without a name": ("containers: [{image: x}]\n", "spec.containers[0].name"),
    "duplicate container name": (
        "initContainers: [{name: a}]\ncontainers: [{name: a}]\n",
        "spec.containers[0].name",
    ),
    "priority class name": (
        "priorityClassName: High_Priority\ncontainers: [{name: a}]\n",
        "spec.priorityClassName",
    ),
    "scheduling gate name": (
        "schedulingGates: [{name: 'a/b/c'}]\ncontainers: [{name: a}]\n",
        "spec.schedulingGates[0].name",
    ),
    "request above limit": (
        "containers: [{name: a, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]\n",
        "spec.containers[0].resources.requests.cpu",
    ),
}


@pytest.mark.parametrize("scheduler", ["default-scheduler", "volcano"])
@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_field_is_a_located_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, scheduler: str
) -> None:
    spec, field = BAD_SPECS[case]
    code, _, err = simulate(tmp_path, f"schedulerName: {scheduler}\n" + textwrap.dedent(spec), capsys)
    assert code == EXIT_BAD_INPUT, err
    assert f"in.yaml: document 3: Pod ns/p: field {field}: " in err


def test_valid_affinity_and_resources_still_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = simulate(
        tmp_path,
        """\
        affinity:
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 5
              preference: {matchExpressions: [{key: a, operator: In, values: [x]}]}
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: web}}
              namespaces: [ns, other]
        containers:
        - name: a
          resources:
            requests: {cpu: 500m, memory: 1Gi, hugepages-2Mi: "0", example.com/dongle: "0"}
            limits: {cpu: "1", example.com/dongle: "0"}
        """,
        capsys,
    )
    assert code == EXIT_OK, err
    assert json.loads(out)["pods"][0]["node"] == "n1"


def test_group_member_of_the_default_scheduler_with_an_unknown_resource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(
        NODES
        + textwrap.dedent(
            """\
            ---
            apiVersion: scheduling.volcano.sh/v1beta1
            kind: PodGroup
            metadata: {name: g}
            spec: {minMember: 1}
            ---
            apiVersion: v1
            kind: Pod
            metadata: {name: p, annotations: {scheduling.k8s.io/group-name: g}}
            spec:
              containers: [{name: a, resources: {requests: {example.com/foo: "1"}}}]
            ---
            apiVersion: v1
            kind: Pod
            metadata: {name: q, annotations: {scheduling.k8s.io/group-name: g}}
            spec:
              schedulerName: volcano
              containers: [{name: a, resources: {requests: {cpu: "1"}}}]
            """
        )
    )
    code = main(["simulate", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    assert pods["p"]["status"] == "Unschedulable"
    assert "Insufficient example.com/foo" in pods["p"]["message"]
    assert pods["q"]["status"] == "Scheduled"


OBJECT_ERRORS = {
    "pod name": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{name: a}]}\n",
        "Pod Web_1: field metadata.name: 'Web_1' is not a valid name",
    ),
    "namespace": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: a.b}\nspec: {containers: [{name: a}]}\n",
        "Pod a.b/w: field metadata.namespace: 'a.b' is not a valid name",
    ),
    "node label key": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {'a/b/c': x}}\n",
        "Node n: field metadata.labels: 'a/b/c' is not a qualified name",
    ),
    "label value": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {zone: '-x'}}\n",
        "Node n: field metadata.labels.zone: '-x' is not a valid label value",
    ),
    "annotation key": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: w, annotations: {'bad key': x}}\n"
        "spec: {containers: [{name: a}]}\n",
        "Pod w: field metadata.annotations: 'bad key' is not a qualified name",
    ),
    "node selector": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\n"
        "spec: {nodeSelector: {zone: 'a b'}, containers: [{name: a}]}\n",
        "Pod w: field spec.nodeSelector.zone: 'a b' is not a valid label value",
    ),
    "queue name": (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: Research}\n",
        "Queue Research: field metadata.name: 'Research' is not a valid name",
    ),
}


@pytest.mark.parametrize("case", sorted(OBJECT_ERRORS))
def test_metadata_is_validated_for_every_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, message = OBJECT_ERRORS[case]
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert main(["simulate", str(path)]) == EXIT_BAD_INPUT
    assert f"in.yaml: document 1: {message}" in capsys.readouterr().err


def test_trace_rows_with_names_the_api_refuses_are_bad_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "name,namespace,queue,label.zone\nBad_Name,,,\nok,NS,,\nok2,,Q,\nok3,,,'x y'\nfine,,,a\n"
    )
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    code = main(["simulate", "--trace", str(trace), "--nodes", str(nodes), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    for line, field in ((2, "name"), (3, "namespace"), (4, "queue"), (5, "labels.zone")):
        assert f"line {line}: skipped: {field}: " in err
    assert [p["name"] for p in json.loads(out)["pods"]] == ["fine"]
