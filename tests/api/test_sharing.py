"""Equal parts of many manifests become one object, and nothing they read changes."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.sharing import share_equal_parts


def pod(name: str, app: str, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }


def test_pods_of_one_shape_share_their_containers_labels_and_tolerations() -> None:
    a, b, c = pod("a", "web"), pod("b", "web"), pod("c", "db", cpu="2")
    share_equal_parts([a, b, c])
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"] is c["spec"]["tolerations"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["metadata"]["labels"] is not c["metadata"]["labels"]
    assert a["spec"]["containers"] is not c["spec"]["containers"]
    # The parts below a differing container still meet those of the same value.
    assert a["spec"]["containers"][0]["name"] is c["spec"]["containers"][0]["name"]


def test_each_object_keeps_its_own_sections() -> None:
    # Sections are what code copies and fills in (admission's defaults, a bind's nodeName).
    a, b = pod("a", "web"), pod("b", "web")
    a["status"] = {"phase": "Pending"}
    b["status"] = {"phase": "Pending"}
    share_equal_parts([a, b])
    assert a["spec"] is not b["spec"]
    assert a["status"] is not b["status"]
    assert a["metadata"] is not b["metadata"]


def test_values_equal_in_python_but_not_in_the_manifest_stay_apart() -> None:
    a = {"kind": "X", "spec": {"v": {"n": 1}, "f": [0.0], "b": [True]}}
    b = {"kind": "X", "spec": {"v": {"n": True}, "f": [-0.0], "b": [1]}}
    share_equal_parts([a, b])
    assert json.dumps(a) == '{"kind": "X", "spec": {"v": {"n": 1}, "f": [0.0], "b": [true]}}'
    assert json.dumps(b) == '{"kind": "X", "spec": {"v": {"n": true}, "f": [-0.0], "b": [1]}}'


def test_key_order_is_kept() -> None:
    a = {"kind": "X", "spec": {"m": {"x": "1", "y": "2"}}}
    b = {"kind": "X", "spec": {"m": {"y": "2", "x": "1"}}}
    share_equal_parts([a, b])
    assert list(a["spec"]["m"]) == ["x", "y"]
    assert list(b["spec"]["m"]) == ["y", "x"]


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.5, float("inf")]),
    st.sampled_from(["a", "b", "100m"]),
)
_parts = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
    ),
    max_leaves=12,
)
_objects = st.lists(
    st.fixed_dictionaries(
        {"kind": st.just("X"), "spec": st.dictionaries(st.sampled_from(["p", "q"]), _parts, max_size=2)}
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(_objects)
def test_sharing_changes_no_value(objects: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(objects)
    share_equal_parts(objects)
    # repr tells 1 from True and 0.0 from -0.0, which == does not.
    assert repr(objects) == repr(before)
    seen: dict[str, Any] = {}
    for obj in objects:
        for part in obj["spec"].values():
            if isinstance(part, (dict, list)):
                # Equal parts are one object.
                assert seen.setdefault(repr(part), part) is part
