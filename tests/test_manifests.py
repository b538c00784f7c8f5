"""Loading manifests: files, directories, stdin, multi-document YAML, JSON, lists, located errors."""

from __future__ import annotations

import io
import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.manifests import load_manifests
from kubesched.errors import InputError
from kubesched.sim.simulation import Simulation

DATA = Path(__file__).parent / "data"

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers:
    - name: web
      image: nginx
      resources: {requests: {cpu: 500m, memory: 1Gi}}
"""

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def refs(paths, stdin=None) -> list[str]:
    return [o.ref for o in load_manifests(paths, stdin).objects]


def load_error(tmp_path: Path, text: str, name: str = "bad.yaml") -> tuple[str, InputError]:
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as info:
        load_manifests([path])
    return path, info.value


# -- sources ------------------------------------------------------------------------------------------


def test_single_file(tmp_path):
    path = write(tmp_path, "pod.yaml", POD)
    result = load_manifests([path])
    [obj] = result.objects
    assert (obj.kind, obj.ref, obj.source, obj.document) == ("Pod", "Pod shop/web", path, 1)
    assert obj.obj["spec"]["containers"][0]["name"] == "web"
    assert result.warnings == []


def test_multi_document_yaml_keeps_document_numbers(tmp_path):
    path = write(tmp_path, "all.yaml", f"{NODE}---\n# just a comment\n---\n{POD}---\n")
    result = load_manifests([path])
    assert [(o.ref, o.document) for o in result.objects] == [("Node n1", 1), ("Pod shop/web", 3)]
    assert result.of_kind("Pod")[0].ref == "Pod shop/web"


def test_json_file(tmp_path):
    obj = yaml.safe_load(POD)
    path = write(tmp_path, "pod.json", json.dumps(obj))
    assert refs([path]) == ["Pod shop/web"]


def test_list_and_pod_list(tmp_path):
    pod = yaml.safe_load(POD)
    pods = {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [pod, {**pod, "metadata": {"name": "web-2", "namespace": "shop"}}],
    }
    mixed = {"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(NODE)]}
    path = write(tmp_path, "lists.yaml", yaml.safe_dump_all([pods, mixed]))
    result = load_manifests([path])
    assert [(o.ref, o.document) for o in result.objects] == [
        ("Pod shop/web", 1),
        ("Pod shop/web-2", 1),
        ("Node n1", 2),
    ]


def test_empty_list(tmp_path):
    path = write(tmp_path, "empty.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
    assert refs([path]) == []


def test_directory_is_recursive_and_sorted():
    result = load_manifests([str(DATA / "tree")])
    # a-nodes.json, b/10-node.yaml, sub/pods.yml; README.md and notes.txt are not manifests
    assert [o.ref for o in result.objects] == ["Node node-a", "Node node-b", "Pod team/p1"]
    assert [Path(o.source).name for o in result.objects] == ["a-nodes.json", "10-node.yaml", "pods.yml"]
    # the ConfigMap is skipped with a warning that says where it is
    [warning] = result.warnings
    assert "pods.yml: document 3" in warning
    assert "ConfigMap settings" in warning
    assert "kind ConfigMap is not used" in warning


def test_stdin(tmp_path):
    node_file = write(tmp_path, "nodes.yaml", NODE)
    result = load_manifests([node_file, "-"], io.StringIO(POD))
    assert [(o.ref, o.source) for o in result.objects] == [
        ("Node n1", node_file),
        ("Pod shop/web", "<stdin>"),
    ]


def test_unknown_kinds_are_skipped_with_a_warning(tmp_path):
    path = write(
        tmp_path,
        "deploy.yaml",
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d, namespace: x}
        spec: {replicas: "not validated"}
        """,
    )
    result = load_manifests([path])
    assert result.objects == []
    assert result.warnings == [f"{path}: document 1: skipping Deployment x/d: kind Deployment is not used"]


def test_namespace_and_priority_class_are_accepted(tmp_path):
    path = write(
        tmp_path,
        "misc.yaml",
        """\
        apiVersion: v1
        kind: Namespace
        metadata: {name: shop}
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000
        """,
    )
    assert refs([path]) == ["Namespace shop", "PriorityClass high"]


def test_same_name_in_other_namespace_or_kind_is_not_a_duplicate(tmp_path):
    other = POD.replace("namespace: shop", "namespace: other")
    path = write(tmp_path, "pods.yaml", f"{POD}---\n{other}---\n{NODE.replace('n1', 'web')}")
    assert refs([path]) == ["Pod shop/web", "Pod other/web", "Node web"]


# -- errors -------------------------------------------------------------------------------------------


def assert_located(err: InputError, path: str, document: int, obj: str, field: str) -> str:
    text = str(err)
    assert (err.file, err.document, err.obj, err.field) == (path, document, obj, field)
    assert text.startswith(f"{path}: document {document}: {obj}: field {field}: "), text
    return text


def test_bad_quantity(tmp_path):
    path, err = load_error(tmp_path, f"{NODE}---\n{POD.replace('500m', 'abc')}")
    text = assert_located(err, path, 2, "Pod shop/web", "spec.containers[0].resources.requests.cpu")
    assert "invalid quantity 'abc'" in text
    assert text.count("invalid quantity") == 1


def test_bad_quantity_inside_a_list(tmp_path):
    pod = yaml.safe_load(POD)
    bad = yaml.safe_load(POD.replace("web,", "web-2,").replace("1Gi", "lots"))
    path = write(
        tmp_path, "list.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod, bad]})
    )
    with pytest.raises(InputError) as info:
        load_manifests([path])
    assert_located(
        info.value, path, 1, "Pod shop/web-2", "items[1].spec.containers[0].resources.requests.memory"
    )


def test_missing_name(tmp_path):
    path, err = load_error(tmp_path, POD.replace("name: web, ", ""))
    text = assert_located(err, path, 1, "Pod shop/<no name>", "metadata.name")
    assert "metadata.name" in text


def test_wrong_type(tmp_path):
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: 5}\n"
    path, err = load_error(tmp_path, text)
    assert "expected a list, got int" in assert_located(err, path, 1, "Pod ns/p", "spec.containers")


def test_bad_toleration_operator(tmp_path):
    text = POD + "  tolerations:\n    - {key: dedicated, operator: Equals, value: gpu}\n"
    path, err = load_error(tmp_path, text)
    msg = assert_located(err, path, 1, "Pod shop/web", "spec.tolerations[0].operator")
    assert "'Equals'" in msg


def test_bad_api_version(tmp_path):
    path, err = load_error(tmp_path, POD.replace("apiVersion: v1", "apiVersion: apps/v1"))
    msg = assert_located(err, path, 1, "Pod shop/web", "apiVersion")
    assert "'apps/v1'" in msg
    assert "use v1" in msg


def test_missing_kind(tmp_path):
    path, err = load_error(tmp_path, f"{NODE}---\napiVersion: v1\nmetadata: {{name: x}}\n")
    assert_located(err, path, 2, "? x", "kind")


def test_non_string_namespace(tmp_path):
    path, err = load_error(tmp_path, POD.replace("namespace: shop", "namespace: [shop]"))
    assert err.field == "metadata.namespace"
    assert err.file == path


def test_document_that_is_not_a_mapping(tmp_path):
    path, err = load_error(tmp_path, f"{NODE}---\n- just\n- a list\n")
    assert (err.file, err.document) == (path, 2)
    assert "mapping" in str(err)


def test_items_must_be_a_list(tmp_path):
    path, err = load_error(tmp_path, "apiVersion: v1\nkind: List\nitems: {a: b}\n")
    assert (err.file, err.document, err.field) == (path, 1, "items")


def test_invalid_yaml_gives_line_and_column(tmp_path):
    path, err = load_error(tmp_path, f"{NODE}---\nkind: Pod\nmetadata: {{name: [oops}}\n")
    text = str(err)
    assert text.startswith(f"{path}: not valid YAML/JSON (line 7, column ")
    assert err.file == path


def test_invalid_json(tmp_path):
    path, err = load_error(tmp_path, '{"kind": "Pod", "metadata": {"name": "p"', name="pod.json")
    # libyaml places an unclosed object at the end of the input: the last line, or the one after it.
    assert re.match(rf"{re.escape(str(path))}: not valid YAML/JSON \(line [12], column \d+\): ", str(err))


def test_non_printable_input_is_one_line(tmp_path):
    with pytest.raises(InputError) as info:
        load_manifests(["-"], io.StringIO("kind: Pod\x00"))
    assert str(info.value).startswith("<stdin>: not valid YAML/JSON")
    assert "\n" not in str(info.value)


def test_deep_nesting_is_input_error():
    with pytest.raises(InputError, match=r"nested too deeply|exceeded maximum nesting depth"):
        load_manifests(["-"], io.StringIO("[" * 20000))


def test_duplicate_object(tmp_path):
    first = write(tmp_path, "a.yaml", POD)
    second = write(tmp_path, "b.yaml", f"{NODE}---\n{POD}")
    with pytest.raises(InputError) as info:
        load_manifests([first, second])
    err = info.value
    assert (err.file, err.document, err.obj) == (second, 2, "Pod shop/web")
    assert f"duplicate object, first defined in {first} document 1" in str(err)


def test_duplicate_with_default_namespace(tmp_path):
    explicit = POD.replace("namespace: shop", "namespace: default")
    implicit = POD.replace(", namespace: shop", "")
    _, err = load_error(tmp_path, f"{explicit}---\n{implicit}")
    assert err.document == 2
    assert "duplicate object" in str(err)


def test_missing_file(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(InputError) as info:
        load_manifests([missing])
    assert str(info.value) == f"{missing}: no such file or directory"


def test_unreadable_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"kind: Pod\nmetadata: {name: caf\xe9}\n")
    with pytest.raises(InputError) as info:
        load_manifests([str(path)])
    assert info.value.file == str(path)
    assert "cannot read" in str(info.value)


# -- priority (admission through Simulation.load) -----------------------------------------------------

PRIORITY_CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: fallback}
value: 7
globalDefault: true
"""


def pod_doc(name: str, extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\n"
        f"spec:\n  containers: [{{name: c, image: x}}]\n{extra}"
    )


def simulate_load(tmp_path: Path, text: str) -> Simulation:
    path = write(tmp_path, "cluster.yaml", text)
    sim = Simulation()
    sim.load(load_manifests([path]))
    return sim


def priorities(sim: Simulation) -> dict[str, tuple[int, str | None]]:
    return {
        p["metadata"]["name"]: (p["spec"]["priority"], p["spec"].get("preemptionPolicy"))
        for p in sim.store.list("Pod")
    }


def test_priority_from_class_global_default_or_explicit(tmp_path):
    # pods come first in the file: load order still creates PriorityClasses before them
    text = "---\n".join(
        [
            pod_doc("named", "  priorityClassName: high\n"),
            pod_doc("defaulted"),
            pod_doc("system", "  priorityClassName: system-node-critical\n"),
            PRIORITY_CLASSES,
        ]
    )
    sim = simulate_load(tmp_path, text)
    got = priorities(sim)
    assert got["named"] == (1000, "Never")
    assert got["defaulted"][0] == 7
    assert got["system"][0] == 2000001000


def test_priority_zero_without_classes(tmp_path):
    sim = simulate_load(tmp_path, pod_doc("plain"))
    assert priorities(sim)["plain"][0] == 0


def test_unknown_priority_class(tmp_path):
    text = "---\n".join([PRIORITY_CLASSES, pod_doc("p", "  priorityClassName: missing\n")])
    path = write(tmp_path, "cluster.yaml", text)
    sim = Simulation()
    with pytest.raises(InputError) as info:
        sim.load(load_manifests([path]))
    err = info.value
    assert (err.file, err.document, err.obj, err.field) == (
        path,
        3,
        "Pod default/p",
        "spec.priorityClassName",
    )
    assert str(err) == (
        f"{path}: document 3: Pod default/p: field spec.priorityClassName: "
        "no PriorityClass with name 'missing' was found"
    )


# -- robustness ---------------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["v1", "Pod", "Node", "List", "abc", "100m", "1Gi", "Exists", "NoSchedule", "Always"]),
)
_keys = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "namespace",
        "spec",
        "status",
        "containers",
        "initContainers",
        "resources",
        "requests",
        "limits",
        "cpu",
        "memory",
        "tolerations",
        "taints",
        "items",
        "priorityClassName",
        "schedulingGates",
        "allocatable",
        "labels",
        "overhead",
        "restartPolicy",
        "value",
    ]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)
_manifests = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["v1", "scheduling.k8s.io/v1", "apps/v1"]),
        "kind": st.sampled_from(["Pod", "Node", "PriorityClass", "Namespace", "List", "PodList"]),
    },
    optional={
        "metadata": _values
        | st.fixed_dictionaries({"name": _scalars}, optional={"namespace": _scalars | st.lists(_scalars)}),
        "spec": _values,
        "status": _values,
        "items": _values,
        "value": _values,
    },
)


def _load_text(text: str) -> None:
    try:
        load_manifests(["-"], io.StringIO(text))
    except InputError as exc:
        assert str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_only_raises_input_error(text):
    _load_text(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_manifests, min_size=1, max_size=3))
def test_arbitrary_manifests_only_raise_input_error(docs):
    _load_text(yaml.safe_dump_all(docs))
    _load_text(json.dumps(docs[0], default=str))
