"""Workload objects (Service, ReplicaSet, StatefulSet, ReplicationController) and pod ownerReferences:
parsed views, validation errors naming the field, and loading them from manifests."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.manifests import LOAD_ORDER, load_manifests
from kubesched.api.workloads import (
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    controller_of,
    owner_references,
)
from kubesched.errors import InputError


def meta(name: str = "w", namespace: str | None = "shop") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    return out


def test_service_selector_selects_pods_with_every_label() -> None:
    svc = Service.from_dict({"kind": "Service", "metadata": meta(), "spec": {"selector": {"app": "web"}}})
    assert (svc.namespace, svc.name, svc.selector) == ("shop", "w", {"app": "web"})
    assert svc.selects({"app": "web", "tier": "fe"})
    assert not svc.selects({"app": "db"})
    assert not svc.selects({})


def test_service_without_selector_selects_nothing() -> None:
    svc = Service.from_dict({"kind": "Service", "metadata": meta(namespace=None), "spec": {"ports": []}})
    assert svc.selector is None and svc.namespace == "default"
    assert not svc.selects({"app": "web"})


def test_replica_set_and_stateful_set_selectors() -> None:
    spec = {
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "Exists"}],
        }
    }
    for cls in (ReplicaSet, StatefulSet):
        w = cls.from_dict({"metadata": meta(), "spec": spec})
        assert w.selector.matches({"app": "web", "tier": "x"})
        assert not w.selector.matches({"app": "web"})


def test_replication_controller_selector_defaults_to_template_labels() -> None:
    rc = ReplicationController.from_dict(
        {"metadata": meta(), "spec": {"template": {"metadata": {"labels": {"app": "legacy"}}}}}
    )
    assert rc.selector == {"app": "legacy"}
    explicit = ReplicationController.from_dict({"metadata": meta(), "spec": {"selector": {"app": "x"}}})
    assert explicit.selector == {"app": "x"}


@pytest.mark.parametrize(
    ("cls", "obj", "field"),
    [
        (Service, {"metadata": meta(), "spec": {"selector": {"app": 3}}}, "spec.selector.app"),
        (Service, {"metadata": meta(), "spec": {"selector": {"app": "bad value!"}}}, "spec.selector.app"),
        (Service, {"metadata": meta(), "spec": {"selector": ["app"]}}, "spec.selector"),
        (Service, {"metadata": {}, "spec": {}}, "metadata.name"),
        (ReplicaSet, {"metadata": meta(), "spec": {}}, "spec.selector"),
        (
            ReplicaSet,
            {
                "metadata": meta(),
                "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
            },
            "spec.selector.matchExpressions[0].operator",
        ),
        (
            StatefulSet,
            {"metadata": meta(), "spec": {"selector": {"matchLabel": {}}}},
            "spec.selector.matchLabel",
        ),
        (
            ReplicationController,
            {"metadata": meta(), "spec": {"selector": {"bad key!": "x"}}},
            "spec.selector",
        ),
    ],
)
def test_invalid_workloads_name_the_field(cls: Any, obj: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        cls.from_dict(obj)
    assert err.value.field == field


def test_owner_references_and_the_controller() -> None:
    refs = owner_references(
        {
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "2", "controller": True},
            ]
        }
    )
    assert [r.kind for r in refs] == ["ConfigMap", "ReplicaSet"]
    owner = controller_of(refs)
    assert owner is not None and (owner.api_version, owner.kind, owner.name) == (
        "apps/v1",
        "ReplicaSet",
        "rs",
    )
    assert controller_of(refs[:1]) is None
    assert owner_references({}) == ()


@pytest.mark.parametrize(
    ("refs", "field"),
    [
        ([{"apiVersion": "v1", "kind": "X", "name": "n"}], "metadata.ownerReferences[0].uid"),
        ([{"kind": "X", "name": "n", "uid": "u"}], "metadata.ownerReferences[0].apiVersion"),
        (
            [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u", "controller": "yes"}],
            "metadata.ownerReferences[0].controller",
        ),
        (
            [
                {"apiVersion": "v1", "kind": "X", "name": "a", "uid": "1", "controller": True},
                {"apiVersion": "v1", "kind": "X", "name": "b", "uid": "2", "controller": True},
            ],
            "metadata.ownerReferences[1]",
        ),
        ("not a list", "metadata.ownerReferences"),
    ],
)
def test_invalid_owner_references_name_the_field(refs: Any, field: str) -> None:
    with pytest.raises(InputError) as err:
        owner_references({"ownerReferences": refs})
    assert err.value.field == field


# -- manifests ----------------------------------------------------------------------------------------

WORKLOADS = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs, namespace: shop}
spec: {selector: {matchLabels: {app: web}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec: {selector: {matchLabels: {app: db}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: shop}
spec: {selector: {app: legacy}}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_workload_kinds_load_from_manifests(tmp_path: Path) -> None:
    result = load_manifests([write(tmp_path, WORKLOADS)])
    assert [o.ref for o in result.objects] == [
        "Service shop/web",
        "ReplicaSet shop/web-rs",
        "StatefulSet shop/db",
        "ReplicationController shop/legacy",
    ]
    assert result.warnings == []


def test_workloads_are_created_before_pods() -> None:
    pod = LOAD_ORDER.index("Pod")
    for kind in ("Service", "ReplicaSet", "StatefulSet", "ReplicationController"):
        assert LOAD_ORDER.index(kind) < pod


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec: {}\n",
            "field spec.selector",
        ),
        (
            "apiVersion: extensions/v1beta1\nkind: ReplicaSet\nmetadata: {name: r}\nspec: {}\n",
            "field apiVersion",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n"
            "  topologySpreadConstraints:\n"
            "    [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n",
            "field spec.topologySpreadConstraints[0].maxSkew",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
            "  ownerReferences: [{kind: ReplicaSet, name: r}]\n"
            "spec:\n  containers: [{name: c}]\n",
            "field metadata.ownerReferences[0].apiVersion",
        ),
    ],
)
def test_bad_workload_manifests_name_file_object_and_field(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_manifests([path])
    message = str(err.value)
    assert message.startswith(f"{path}: document 1: ") and where in message
