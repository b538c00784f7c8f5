"""``dryRun=All`` on every write verb: the request is decoded, defaulted, validated and admitted, the
answer is the object as it would be stored, and nothing is stored; any other value is a 422."""

from __future__ import annotations

import pytest
from tests.apiserver.conftest import pod

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str, replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_a_dry_run_create_is_admitted_and_filled_but_not_stored(cluster) -> None:
    status, obj, _ = cluster.request("POST", PODS + "?dryRun=All", pod("dry"))
    assert status == 201
    meta = obj["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and "resourceVersion" not in meta
    # Admission ran: the default scheduler, the priority, the Pending phase.
    assert obj["spec"]["schedulerName"] == "default-scheduler" and obj["spec"]["priority"] == 0
    assert obj["status"]["phase"] == "Pending"
    assert cluster.request("GET", PODS + "/dry")[0] == 404


def test_a_dry_run_create_of_a_taken_name_is_refused_as_the_create_would_be(cluster) -> None:
    assert cluster.request("POST", PODS, pod("taken"))[0] == 201
    status, body, _ = cluster.request("POST", PODS + "?dryRun=All", pod("taken"))
    assert (status, body["reason"], body["message"]) == (409, "AlreadyExists", 'pods "taken" already exists')


def test_a_dry_run_create_that_fails_validation_is_refused(cluster) -> None:
    bad = _deployment("bad")
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    status, body, _ = cluster.request("POST", DEPLOYMENTS + "?dryRun=All", bad)
    assert status == 422 and body["reason"] == "Invalid"


def test_dry_run_update_patch_and_scale_change_nothing(cluster) -> None:
    assert cluster.request("POST", DEPLOYMENTS, _deployment("web"))[0] == 201
    _, current, _ = cluster.request("GET", DEPLOYMENTS + "/web")
    wanted = {**current, "metadata": {"name": "web"}, "spec": {**current["spec"], "replicas": 5}}
    status, updated, _ = cluster.request("PUT", DEPLOYMENTS + "/web?dryRun=All", wanted)
    assert status == 200 and updated["spec"]["replicas"] == 5
    status, patched, _ = cluster.request(
        "PATCH",
        DEPLOYMENTS + "/web?dryRun=All",
        {"spec": {"replicas": 4}},
        content_type="application/merge-patch+json",
    )
    assert status == 200 and patched["spec"]["replicas"] == 4
    status, scaled, _ = cluster.request(
        "PATCH",
        DEPLOYMENTS + "/web/scale?dryRun=All",
        {"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )
    assert status == 200 and scaled["spec"]["replicas"] == 3
    _, stored, _ = cluster.request("GET", DEPLOYMENTS + "/web")
    assert stored["spec"]["replicas"] == 1
    assert stored["metadata"]["generation"] == current["metadata"]["generation"]


def test_dry_run_deletes_keep_the_objects(cluster) -> None:
    for name in ("a", "b"):
        assert cluster.request("POST", PODS, pod(name))[0] == 201
    status, gone, _ = cluster.request("DELETE", PODS + "/a?dryRun=All")
    assert status == 200 and gone["metadata"]["name"] == "a"
    status, _, _ = cluster.request(
        "DELETE", PODS + "/a", {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    )
    assert status == 200
    status, listed, _ = cluster.request("DELETE", PODS + "?dryRun=All")
    assert status == 200 and sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "b"]
    status, listed, _ = cluster.request("DELETE", PODS, {"kind": "DeleteOptions", "dryRun": ["All"]})
    assert status == 200 and sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "b"]
    _, pods, _ = cluster.request("GET", PODS)
    assert sorted(i["metadata"]["name"] for i in pods["items"]) == ["a", "b"]


def test_with_a_body_the_querys_dry_run_is_not_read(cluster) -> None:
    # As upstream: the query is decoded into DeleteOptions only when no body is sent.
    assert cluster.request("POST", PODS, pod("c"))[0] == 201
    status, _, _ = cluster.request(
        "DELETE", PODS + "/c?dryRun=Some", {"kind": "DeleteOptions", "dryRun": ["All"]}
    )
    assert status == 200
    assert cluster.request("GET", PODS + "/c")[0] == 200


def test_a_dry_run_eviction_keeps_the_pod(cluster) -> None:
    assert cluster.request("POST", PODS, pod("evictee"))[0] == 201
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "evictee"},
        "deleteOptions": {"dryRun": ["All"]},
    }
    status, _, _ = cluster.request("POST", PODS + "/evictee/eviction", eviction)
    assert status == 201
    assert cluster.request("GET", PODS + "/evictee")[0] == 200


@pytest.mark.parametrize(
    ("method", "path", "options"),
    [
        ("POST", PODS, "CreateOptions"),
        ("PUT", PODS + "/x", "UpdateOptions"),
        ("PATCH", PODS + "/x", "PatchOptions"),
        ("DELETE", PODS + "/x", "DeleteOptions"),
    ],
)
def test_a_dry_run_value_other_than_all_is_invalid(cluster, method, path, options) -> None:
    ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
    sent = None if method == "DELETE" else pod("x")
    status, body, _ = cluster.request(method, path + "?dryRun=Some", sent, content_type=ctype)
    assert status == 422
    assert body["message"] == (
        f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{"Some"}}: '
        'supported values: "All"'
    )
    assert body["details"]["causes"][0]["field"] == "dryRun"
