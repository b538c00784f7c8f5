"""``simulate`` on the workload API: manifests of Workloads and scheduling.k8s.io PodGroups load
beside Volcano's PodGroups of the same names, each into its own store kind, with located errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.api.manifests import load_manifests
from kubesched.errors import InputError
from kubesched.sim.simulation import Simulation

MANIFESTS = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    },
    {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    },
    {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "workers", "namespace": "ml"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    },
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "workers", "namespace": "ml"},
        "spec": {"minMember": 1},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w-0", "namespace": "ml"},
        "spec": {
            "schedulingGroup": {"podGroupName": "workers"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    },
]


def write(tmp_path: Path, docs: list[dict]) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return str(path)


def test_both_pod_group_kinds_load_side_by_side(tmp_path: Path) -> None:
    loaded = load_manifests([write(tmp_path, MANIFESTS)])
    assert loaded.warnings == []
    assert [o.kind for o in loaded.objects] == [
        "Node",
        "Workload",
        "PodGroup.scheduling.k8s.io",
        "PodGroup",
        "Pod",
    ]
    sim = Simulation()
    sim.load(loaded)
    sim.run()
    [k8s] = sim.store.list("PodGroup.scheduling.k8s.io")
    [volcano] = sim.store.list("PodGroup")
    assert k8s["apiVersion"] == "scheduling.k8s.io/v1alpha2" and volcano["spec"]["minMember"] == 1
    assert (
        sim.informers.informer("PodGroup.scheduling.k8s.io").get("ml", "workers").policy.gang_min_count == 2
    )
    assert sim.store.get("Workload", "ml", "train") is not None


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"schedulingPolicy": {}}, "spec.schedulingPolicy", "must specify one of: `basic`, `gang`"),
        (
            {"schedulingPolicy": {"gang": {"minCount": -1}}},
            "spec.schedulingPolicy.gang.minCount",
            "must be greater than zero",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": "two"}}},
            "spec.schedulingPolicy.gang.minCount",
            "must be an integer",
        ),
    ],
)
def test_a_bad_pod_group_is_a_located_error(tmp_path: Path, spec: dict, field: str, message: str) -> None:
    bad = {**MANIFESTS[2], "spec": spec}
    with pytest.raises(InputError) as err:
        load_manifests([write(tmp_path, [bad])])
    assert err.value.field == field and message in err.value.message
    assert err.value.obj == "PodGroup ml/workers"


def test_a_pod_group_of_an_unknown_version_names_the_one_to_use(tmp_path: Path) -> None:
    bad = {**MANIFESTS[2], "apiVersion": "scheduling.k8s.io/v1beta1"}
    with pytest.raises(InputError) as err:
        load_manifests([write(tmp_path, [bad])])
    assert (
        "apiVersion 'scheduling.k8s.io/v1beta1' is not supported for PodGroup; use scheduling.k8s.io/v1alpha2"
        in str(err.value)
    )
