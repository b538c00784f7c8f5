"""Hypothesis throws Services, Endpoints, EndpointSlices, DaemonSets and CronJobs with one part
replaced by anything at the API: never a 5xx, and the controllers keep running."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.apiserver.conftest import Cluster
from tests.apiserver.test_fuzz import FUZZ, _check, json_values

from kubesched.apiserver.server import ServeOptions

_TEMPLATE = {
    "metadata": {"labels": {"app": "f"}},
    "spec": {"containers": [{"name": "c", "image": "x"}]},
}
_JOB_TEMPLATE = copy.deepcopy(_TEMPLATE)
_JOB_TEMPLATE["spec"]["restartPolicy"] = "Never"

#: (collection path, a valid body, the parts replaced).
KINDS: list[tuple[str, dict[str, Any], list[tuple[Any, ...]]]] = [
    (
        "/api/v1/namespaces/default/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "spec": {"type": "NodePort", "selector": {"app": "f"}, "ports": [{"name": "a", "port": 80}]},
        },
        [
            ("spec",),
            ("spec", "type"),
            ("spec", "ports"),
            ("spec", "ports", 0),
            ("spec", "ports", 0, "port"),
            ("spec", "ports", 0, "targetPort"),
            ("spec", "ports", 0, "nodePort"),
            ("spec", "ports", 0, "protocol"),
            ("spec", "clusterIP"),
            ("spec", "clusterIPs"),
            ("spec", "ipFamilies"),
            ("spec", "ipFamilyPolicy"),
            ("spec", "selector"),
            ("spec", "sessionAffinity"),
        ],
    ),
    (
        "/api/v1/namespaces/default/endpoints",
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "subsets": [{"addresses": [{"ip": "1.2.3.4"}], "ports": [{"port": 80}]}],
        },
        [("subsets",), ("subsets", 0), ("subsets", 0, "addresses"), ("subsets", 0, "ports")],
    ),
    (
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["1.2.3.4"]}],
            "ports": [{"port": 80}],
        },
        [("addressType",), ("endpoints",), ("endpoints", 0), ("ports",), ("ports", 0)],
    ),
    (
        "/apis/apps/v1/namespaces/default/daemonsets",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "spec": {"selector": {"matchLabels": {"app": "f"}}, "template": _TEMPLATE},
        },
        [
            ("spec",),
            ("spec", "selector"),
            ("spec", "template"),
            ("spec", "updateStrategy"),
            ("spec", "template", "spec", "nodeSelector"),
            ("spec", "template", "spec", "tolerations"),
            ("spec", "template", "spec", "affinity"),
            ("spec", "revisionHistoryLimit"),
        ],
    ),
    (
        "/apis/batch/v1/namespaces/default/cronjobs",
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "spec": {"schedule": "@every 1s", "jobTemplate": {"spec": {"template": _JOB_TEMPLATE}}},
        },
        [
            ("spec",),
            ("spec", "schedule"),
            ("spec", "timeZone"),
            ("spec", "jobTemplate"),
            ("spec", "jobTemplate", "spec"),
            ("spec", "concurrencyPolicy"),
            ("spec", "startingDeadlineSeconds"),
            ("spec", "successfulJobsHistoryLimit"),
        ],
    ),
]
CASES = [(path, body, part) for path, body, parts in KINDS for part in parts]


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory) -> Iterator[Cluster]:
    cluster = Cluster(ServeOptions(data_dir=tmp_path_factory.mktemp("fuzz"), port=0, nodes=2)).start()
    yield cluster
    cluster.stop()


def _replace(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    cur: Any = obj
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return obj


@FUZZ
@given(case=st.sampled_from(CASES), value=json_values, n=st.integers(0, 10**6))
def test_one_bad_part(fuzz_cluster, case, value, n):
    collection, valid, part = case
    body = _replace({**copy.deepcopy(valid), "metadata": {"name": f"f-{n}"}}, part, value)
    code, resp, _ = fuzz_cluster.request("POST", collection, json.dumps(body))
    _check(fuzz_cluster, code, resp)
    if code == 201:
        patch = {part[0]: value} if len(part) == 1 else {part[0]: {part[1]: value}}
        code, resp, _ = fuzz_cluster.request(
            "PATCH", f"{collection}/f-{n}", json.dumps(patch), content_type="application/merge-patch+json"
        )
        _check(fuzz_cluster, code, resp)
        code, resp, _ = fuzz_cluster.request(
            "GET", collection, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        )
        _check(fuzz_cluster, code, resp)
        fuzz_cluster.request("DELETE", f"{collection}/f-{n}")
