"""Server-side apply: field ownership in managedFields, conflicts between managers, force, and
fields an applier stops applying; through the API and through ``kubectl apply --server-side``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.apiserver import managed_fields as mf
from kubesched.registry.errors import ApiError

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"


def _deployment(replicas: int | None = 2, labels: dict[str, str] | None = None, image: str = "nginx") -> dict:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", **({"labels": labels} if labels else {})},
        "spec": spec,
    }


def _apply(cluster, body: dict, manager: str | None, force: bool = False) -> tuple[int, Any]:
    query = []
    if manager is not None:
        query.append(f"fieldManager={manager}")
    if force:
        query.append("force=true")
    path = f"{DEPLOYMENTS}/web" + ("?" + "&".join(query) if query else "")
    code, out, _ = cluster.request("PATCH", path, yaml.safe_dump(body), content_type=APPLY)
    return code, out


def _merge_patch(cluster, path: str, body: dict) -> tuple[int, Any]:
    code, out, _ = cluster.request("PATCH", path, body, content_type="application/merge-patch+json")
    return code, out


def _owners(obj: dict) -> dict[str, set[str]]:
    return {
        f"{e['manager']}/{e['operation']}": {mf.path_text(p) for p in mf.from_fields_v1(e["fieldsV1"])}
        for e in obj["metadata"].get("managedFields", [])
    }


@pytest.fixture
def cluster(make_cluster):
    return make_cluster(nodes=1, schedulers=False)


def test_apply_needs_a_field_manager_and_force_is_for_apply_only(cluster):
    code, out = _apply(cluster, _deployment(), None)
    assert code == 422 and out["reason"] == "Invalid"
    assert out["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    assert out["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager",
        }
    ]
    _apply(cluster, _deployment(), "alice")
    code, out = _merge_patch(cluster, f"{DEPLOYMENTS}/web?force=true", {"spec": {"replicas": 3}})
    assert code == 422
    assert out["message"].endswith("force: Forbidden: may not be specified for non-apply patch")


def test_an_apply_owns_its_fields_and_another_manager_conflicts_on_a_different_value(cluster):
    code, created = _apply(cluster, _deployment(replicas=2, labels={"team": "a"}), "alice")
    assert code == 201
    owned = _owners(created)["alice/Apply"]
    assert {
        ".spec.replicas",
        ".metadata.labels.team",
        '.spec.template.spec.containers[name="web"].image',
    } <= owned
    # Another manager setting a field alice owns to another value: a conflict, nothing written.
    code, out = _apply(cluster, {**_deployment(replicas=3), "spec": {"replicas": 3}}, "bob")
    assert code == 409 and out["reason"] == "Conflict"
    assert out["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert out["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".spec.replicas"}
    ]
    assert cluster.request("GET", f"{DEPLOYMENTS}/web")[1]["spec"]["replicas"] == 2
    # The same value is shared ownership, no conflict.
    code, out = _apply(cluster, {**_deployment(replicas=2), "spec": {"replicas": 2}}, "carol")
    assert code == 200
    assert ".spec.replicas" in _owners(out)["carol/Apply"] and ".spec.replicas" in _owners(out)["alice/Apply"]
    # Forced: bob takes the field over from both.
    code, out = _apply(cluster, {**_deployment(replicas=3), "spec": {"replicas": 3}}, "bob", force=True)
    assert code == 200 and out["spec"]["replicas"] == 3
    owners = _owners(out)
    assert ".spec.replicas" in owners["bob/Apply"]
    assert ".spec.replicas" not in owners["alice/Apply"]
    assert "carol/Apply" not in owners  # it owned nothing else


def test_fields_left_out_of_an_apply_go_unless_another_manager_owns_them(cluster):
    _apply(cluster, _deployment(labels={"team": "a", "tier": "web"}), "alice")
    code, out = _apply(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"tier": "web"}},
        },
        "bob",
    )
    assert code == 200
    code, out = _apply(cluster, _deployment(labels={}), "alice")
    assert code == 200
    # alice dropped both labels: "team" was hers alone and goes, "tier" bob applies too and stays.
    assert out["metadata"]["labels"] == {"tier": "web"}


def test_a_write_after_an_apply_takes_the_fields_it_changes(cluster):
    _apply(cluster, _deployment(replicas=2), "alice")
    code, out = _merge_patch(
        cluster, f"{DEPLOYMENTS}/web?fieldManager=kubectl-edit", {"spec": {"replicas": 5}}
    )
    assert code == 200
    entry = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    assert entry["operation"] == "Update" and entry["apiVersion"] == "apps/v1"
    assert ".spec.replicas" not in _owners(out)["alice/Apply"]
    code, out = _apply(cluster, _deployment(replicas=2), "alice")
    assert code == 409
    edited = f'"kubectl-edit" using apps/v1 at {entry["time"]}'
    assert out["message"] == f"Apply failed with 1 conflict: conflict with {edited}: .spec.replicas"
    # The scale subresource is named as such.
    code, _ = _merge_patch(
        cluster, f"{DEPLOYMENTS}/web/scale?fieldManager=autoscaler", {"spec": {"replicas": 4}}
    )
    assert code == 200
    code, out = _apply(cluster, _deployment(replicas=2), "alice")
    assert code == 409
    assert 'conflict with "autoscaler" with subresource "scale" using apps/v1 at ' in out["message"]
    # Leaving replicas out of the configuration gives the field up: no conflict.
    code, out = _apply(cluster, _deployment(replicas=None), "alice")
    assert code == 200 and out["spec"]["replicas"] == 4


def test_an_object_never_applied_carries_no_managed_fields(cluster):
    code, created, _ = cluster.request("POST", DEPLOYMENTS, _deployment())
    assert code == 201 and "managedFields" not in created["metadata"]
    code, out = _merge_patch(cluster, f"{DEPLOYMENTS}/web", {"spec": {"replicas": 5}})
    assert code == 200 and "managedFields" not in out["metadata"]


def test_field_paths_and_their_fields_v1_trees() -> None:
    obj = _deployment(labels={"a": "b"})
    paths = mf.field_set(obj)
    assert {mf.path_text(p) for p in paths} >= {
        ".metadata.labels.a",
        ".spec.replicas",
        '.spec.template.spec.containers[name="web"]',
        '.spec.template.spec.containers[name="web"].image',
        ".spec.selector.matchLabels.app",
    }
    assert not any(p[:2] == ("f:metadata", "f:name") for p in paths)
    tree = mf.to_fields_v1(paths)
    assert tree["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}'] == {
        ".": {},
        "f:image": {},
        "f:name": {},
    }
    assert mf.from_fields_v1(json.loads(json.dumps(tree))) == paths


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_server_side_apply_conflict_and_force(cluster, tmp_path: Path):
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(_deployment(replicas=2)))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL or "kubectl", *args], env=env, capture_output=True, text=True, timeout=30
        )

    first = kubectl("apply", "--server-side", "-f", str(manifest))
    assert first.returncode == 0, first.stderr
    assert "serverside-applied" in first.stdout
    edit = kubectl("patch", "deployment", "web", "--type=merge", "-p", '{"spec":{"replicas":5}}')
    assert edit.returncode == 0, edit.stderr
    again = kubectl("apply", "--server-side", "-f", str(manifest))
    assert again.returncode != 0
    assert "Apply failed with 1 conflict" in again.stderr and ".spec.replicas" in again.stderr
    forced = kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert forced.returncode == 0, forced.stderr
    assert kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}").stdout == "2"


def test_conflicts_with_several_managers_are_listed_by_manager() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "managedFields": []},
        "data": {"a": "1", "b": "1", "c": "1"},
    }
    live = mf.apply(
        live, {"data": {"a": "1", "b": "1"}}, manager="zed", force=False, api_version="v1", now="t"
    )
    live = mf.apply(live, {"data": {"c": "1"}}, manager="amy", force=False, api_version="v1", now="t")
    with pytest.raises(ApiError) as err:
        mf.apply(
            live,
            {"data": {"a": "2", "b": "2", "c": "2"}},
            manager="me",
            force=False,
            api_version="v1",
            now="t",
        )
    assert err.value.code == 409
    assert err.value.message == (
        'Apply failed with 3 conflicts: conflicts with "amy":\n- .data.c\n'
        'conflicts with "zed":\n- .data.a\n- .data.b'
    )


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["1", "2"]), max_size=4),
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["1", "2"]), max_size=4),
)
def test_a_forced_apply_leaves_the_object_holding_the_configuration(first, second) -> None:
    """Whatever another manager applied before, a forced apply's fields hold its values, and
    applying the same configuration again changes nothing."""
    obj = mf.apply(
        None, {"kind": "ConfigMap", "data": first}, manager="a", force=False, api_version="v1", now="t"
    )
    config = {"kind": "ConfigMap", "data": second}
    after = mf.apply(obj, config, manager="b", force=True, api_version="v1", now="t")
    assert all(after["data"][k] == v for k, v in second.items())
    assert set(after.get("data", {})) <= set(first) | set(second)
    assert mf.apply(after, config, manager="b", force=False, api_version="v1", now="t") == after


def test_managed_fields_written_by_someone_else_are_read_as_far_as_they_make_sense(cluster):
    """Entries as upstream writes them (multi-key items, set values, indices) and entries that are
    not entries at all: an apply over them answers, it never fails the server."""
    odd = [
        {
            "manager": "up",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:spec": {
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"web"}': {
                                    ".": {},
                                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}}},
                                },
                            }
                        }
                    },
                    "f:strategy": {"v:x": {}, "i:0": {}},
                }
            },
        },
        {"manager": "broken", "fieldsV1": {"k:not json": {}, "f:spec": "nope"}},
        "not an entry",
    ]
    body = _deployment()
    body["metadata"]["managedFields"] = odd
    code, _, _ = cluster.request("POST", DEPLOYMENTS, body)
    assert code == 201
    code, out = _apply(cluster, _deployment(replicas=3), "alice")
    assert code == 200 and out["spec"]["replicas"] == 3


def _pod(ports: list[dict[str, Any]], finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "x", "ports": ports}]},
    }


def test_lists_merge_as_the_kinds_schema_says() -> None:
    """Container ports are a map keyed by containerPort and protocol (its default filling in a
    port that names none), finalizers a set: two managers each own their own items and values."""
    from kubesched.apiserver.openapi.schemas import builtin_schema

    schema = builtin_schema("", "v1", "Pod")
    container = mf.field_schema(mf.field_schema(schema, "spec"), "containers") or {}
    ports = mf.field_schema(mf.resolve(container.get("items")), "ports")
    assert mf.list_semantics("ports", ports) == (mf.MAP, ("containerPort", "protocol"))
    assert mf.list_semantics(
        "tolerations", mf.field_schema(mf.field_schema(schema, "spec"), "tolerations")
    ) == (
        mf.ATOMIC,
        (),
    )
    first = mf.apply(
        None,
        _pod([{"containerPort": 80}], ["a.example/x"]),
        manager="one",
        force=False,
        api_version="v1",
        now="t",
        schema=schema,
    )
    both = mf.apply(
        first,
        _pod([{"containerPort": 80, "protocol": "UDP"}], ["a.example/y"]),
        manager="two",
        force=False,
        api_version="v1",
        now="t",
        schema=schema,
    )
    ports = both["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"}]
    assert both["metadata"]["finalizers"] == ["a.example/x", "a.example/y"]
    fields = {e["manager"]: e["fieldsV1"] for e in both["metadata"]["managedFields"]}
    container = fields["two"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert 'k:{"containerPort":80,"protocol":"UDP"}' in container["f:ports"]
    assert fields["two"]["f:metadata"]["f:finalizers"] == {'v:"a.example/y"': {}}
    # The second manager stops applying its port and finalizer: only those go.
    after = mf.apply(both, _pod([], []), manager="two", force=False, api_version="v1", now="t", schema=schema)
    assert after["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert after["metadata"]["finalizers"] == ["a.example/x"]


def test_an_atomic_list_is_owned_whole_and_conflicts_whole() -> None:
    from kubesched.apiserver.openapi.schemas import builtin_schema

    schema = builtin_schema("", "v1", "Pod")
    pod = _pod([])
    pod["spec"]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    first = mf.apply(None, pod, manager="one", force=False, api_version="v1", now="t", schema=schema)
    pod["spec"]["tolerations"] = [{"key": "b", "operator": "Exists"}]
    with pytest.raises(ApiError) as refused:
        mf.apply(first, pod, manager="two", force=False, api_version="v1", now="t", schema=schema)
    assert refused.value.details["causes"][0]["field"] == ".spec.tolerations"  # type: ignore[index]
