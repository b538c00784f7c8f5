"""The REST API as kube-apiserver serves it: auth, discovery, CRUD, selectors, paging, conflicts,
subresources, patches, watches and Status errors."""

from __future__ import annotations

import json
import sqlite3
import time

from tests.apiserver.conftest import pod

PODS = "/api/v1/namespaces/default/pods"


def _wait(predicate, timeout: float = 10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_token_required_but_health_and_version_are_public(cluster):
    code, body, _ = cluster.request("GET", PODS, token=None)
    assert code == 401
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["code"] == 401
    assert cluster.request("GET", PODS, token="wrong")[0] == 401
    assert cluster.request("GET", "/healthz", token=None)[0] == 200
    assert cluster.request("GET", "/readyz", token=None)[0] == 200
    code, version, _ = cluster.request("GET", "/version", token=None)
    assert code == 200 and version["major"] == "1" and version["gitVersion"].startswith("v1.")


def test_discovery(cluster):
    assert cluster.request("GET", "/api")[1]["versions"] == ["v1"]
    groups = {g["name"]: g for g in cluster.request("GET", "/apis")[1]["groups"]}
    assert {
        "apps",
        "batch",
        "policy",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "scheduling.volcano.sh",
    } <= set(groups)
    core = {r["name"]: r for r in cluster.request("GET", "/api/v1")[1]["resources"]}
    assert core["pods"]["shortNames"] == ["po"] and core["pods"]["namespaced"]
    assert "watch" in core["pods"]["verbs"]
    assert {"pods/status", "pods/binding", "pods/eviction", "nodes/status"} <= set(core)
    volcano = cluster.request("GET", "/apis/scheduling.volcano.sh/v1beta1")[1]["resources"]
    queues = next(r for r in volcano if r["name"] == "queues")
    assert queues["namespaced"] is False and "q" in queues["shortNames"]
    assert cluster.request("GET", "/apis/nope.example.com/v1")[0] == 404


def test_create_get_list_delete(cluster):
    code, created, _ = cluster.request("POST", PODS, pod("web-1"))
    assert code == 201
    meta = created["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    assert created["spec"]["schedulerName"] == "default-scheduler"
    code, got, _ = cluster.request("GET", f"{PODS}/web-1")
    assert code == 200 and got["metadata"]["uid"] == meta["uid"]
    code, dup, _ = cluster.request("POST", PODS, pod("web-1"))
    assert code == 409 and dup["reason"] == "AlreadyExists"
    assert dup["message"] == 'pods "web-1" already exists'
    code, listed, _ = cluster.request("GET", PODS)
    assert listed["kind"] == "PodList" and [p["metadata"]["name"] for p in listed["items"]] == ["web-1"]
    assert int(listed["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])
    code, gone, _ = cluster.request("DELETE", f"{PODS}/web-1", {"gracePeriodSeconds": 0})
    assert code == 200 and gone["metadata"]["name"] == "web-1"
    code, missing, _ = cluster.request("GET", f"{PODS}/web-1")
    assert code == 404 and missing["reason"] == "NotFound" and missing["details"]["kind"] == "pods"
    assert missing["message"] == 'pods "web-1" not found'


def test_generate_name_and_cluster_scoped(cluster):
    body = pod("x")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "gen-"
    code, created, _ = cluster.request("POST", PODS, body)
    assert (
        code == 201
        and created["metadata"]["name"].startswith("gen-")
        and len(created["metadata"]["name"]) == 9
    )
    code, nodes, _ = cluster.request("GET", "/api/v1/nodes")
    assert code == 200 and {n["metadata"]["name"] for n in nodes["items"]} == {"node-0", "node-1"}
    node = nodes["items"][0]
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def test_label_and_field_selectors_limit_and_continue(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    for i in range(7):
        body = pod(f"p-{i}")
        body["metadata"]["labels"] = {"tier": "a" if i % 2 else "b", "i": str(i)}
        if i < 2:
            body["spec"]["nodeName"] = "node-x"
        assert cluster.request("POST", PODS, body)[0] == 201
    names = lambda r: [p["metadata"]["name"] for p in r[1]["items"]]  # noqa: E731
    assert names(cluster.request("GET", f"{PODS}?labelSelector=tier%3Da")) == ["p-1", "p-3", "p-5"]
    assert names(cluster.request("GET", f"{PODS}?labelSelector=tier!%3Da,i+notin+(0,2)")) == ["p-4", "p-6"]
    assert names(cluster.request("GET", f"{PODS}?labelSelector=i+in+(1,2)")) == ["p-1", "p-2"]
    assert names(cluster.request("GET", f"{PODS}?fieldSelector=spec.nodeName%3Dnode-x")) == ["p-0", "p-1"]
    assert names(cluster.request("GET", f"{PODS}?fieldSelector=spec.nodeName%3D")) == [
        f"p-{i}" for i in range(2, 7)
    ]
    assert names(cluster.request("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp-3")) == ["p-3"]
    assert cluster.request("GET", f"{PODS}?fieldSelector=spec.bogus%3D1")[0] == 400
    seen: list[str] = []
    path = f"{PODS}?limit=3"
    pages = 0
    while True:
        code, page, _ = cluster.request("GET", path)
        assert code == 200
        pages += 1
        seen += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] == 7 - len(seen)
        path = f"{PODS}?limit=3&continue={token}"
    assert pages == 3 and seen == [f"p-{i}" for i in range(7)]
    assert cluster.request("GET", f"{PODS}?limit=3&continue=garbage!")[0] == 400


def test_optimistic_concurrency(cluster):
    code, created, _ = cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert code == 201
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
    code, created, _ = cluster.request("POST", "/api/v1/namespaces/team/configmaps", cm)
    assert code == 201
    first = {**created, "data": {"a": "2"}}
    code, updated, _ = cluster.request("PUT", "/api/v1/namespaces/team/configmaps/cfg", first)
    assert code == 200 and updated["data"] == {"a": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = {**created, "data": {"a": "3"}}
    code, status, _ = cluster.request("PUT", "/api/v1/namespaces/team/configmaps/cfg", stale)
    assert code == 409 and status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    assert cluster.request("GET", "/api/v1/namespaces/team/configmaps/cfg")[1]["data"] == {"a": "2"}
    wrong_name = {**updated, "metadata": {**updated["metadata"], "name": "other"}}
    assert cluster.request("PUT", "/api/v1/namespaces/team/configmaps/cfg", wrong_name)[0] == 400


def test_pods_differing_from_an_accepted_one_only_by_name_are_accepted_others_still_checked(cluster):
    first = pod("same-shape-1")
    assert cluster.request("POST", PODS, first)[0] == 201
    assert cluster.request("POST", PODS, pod("same-shape-2"))[0] == 201
    changed = pod("same-shape-3")
    changed["spec"]["tolerations"] = [{"key": "a", "operator": "Sideways"}]
    code, status, _ = cluster.request("POST", PODS, changed)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.tolerations[0].operator"
    nameless = pod("same-shape-4")
    nameless["metadata"]["name"] = ""
    code, status, _ = cluster.request("POST", PODS, nameless)
    assert code == 422 and status["details"]["causes"][0]["field"] == "metadata.name"


def test_invalid_requests_get_status_with_causes(cluster):
    nameless = pod("x")
    del nameless["metadata"]["name"]
    code, status, _ = cluster.request("POST", PODS, nameless)
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    bad_cpu = pod("badcpu", cpu="lots")
    code, status, _ = cluster.request("POST", PODS, bad_cpu)
    # As upstream: a quantity that does not parse is refused by the decoder (400), not validation.
    assert code == 400 and status["kind"] == "Status" and "quantities must match" in status["message"]
    bad_selector = pod("badsel")
    bad_selector["spec"]["tolerations"] = [{"key": "a", "operator": "Sideways"}]
    code, status, _ = cluster.request("POST", PODS, bad_selector)
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec.tolerations[0].operator"
    code, status, _ = cluster.request("POST", PODS, b"{not json")
    assert code == 400 and status["reason"] == "BadRequest"
    code, status, _ = cluster.request("POST", PODS, {**pod("k"), "kind": "Node"})
    assert code == 400
    code, status, _ = cluster.request("POST", PODS, [1, 2])
    assert code == 400
    code, status, _ = cluster.request("POST", PODS, pod("Upper_Case"))
    assert code == 422 and status["details"]["causes"][0]["field"] == "metadata.name"
    code, status, _ = cluster.request("POST", PODS, pod("elsewhere", namespace="other"))
    assert code == 400 and "namespace" in status["message"]
    big = pod("big")
    big["metadata"]["annotations"] = {"blob": "x" * (4 * 1024 * 1024)}
    code, status, _ = cluster.request("POST", PODS, big)
    assert code == 413 and status["reason"] == "RequestEntityTooLarge"
    code, status, headers = cluster.request("POST", PODS, {**pod("extra"), "bogus": 1})
    assert code == 201 and "bogus" in headers.get("Warning", "")
    code, status, _ = cluster.request("POST", f"{PODS}?fieldValidation=Strict", {**pod("extra2"), "bogus": 1})
    assert code == 400 and 'unknown field "bogus"' in status["message"]
    assert cluster.request("DELETE", f"{PODS}/nothing")[0] == 404
    assert cluster.request("PATCH", f"{PODS}/extra", {"a": 1}, content_type="text/plain")[0] == 415
    # Nothing that was stored before is lost.
    assert cluster.request("GET", f"{PODS}/extra")[0] == 200


def test_patches(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    body = pod("web")
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    cluster.request("POST", PODS, body)
    code, patched, _ = cluster.request(
        "PATCH",
        f"{PODS}/web",
        {"metadata": {"labels": {"extra": "yes", "app": None}}},
        content_type="application/merge-patch+json",
    )
    assert code == 200 and patched["metadata"]["labels"] == {"extra": "yes"}
    code, patched, _ = cluster.request(
        "PATCH",
        f"{PODS}/web",
        [
            {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
            {"op": "replace", "path": "/spec/containers/1/image", "value": "alpine"},
        ],
        content_type="application/json-patch+json",
    )
    assert code == 200 and patched["metadata"]["annotations"] == {"a": "b"}
    assert patched["spec"]["containers"][1]["image"] == "alpine"
    code, patched, _ = cluster.request(
        "PATCH",
        f"{PODS}/web",
        {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 200
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("c", "nginx"),
        ("side", "busybox:2"),
    ]
    code, patched, _ = cluster.request(
        "PATCH",
        f"{PODS}/web",
        {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["c"]
    stale = {"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}}
    code, _status, _ = cluster.request(
        "PATCH", f"{PODS}/web", stale, content_type="application/merge-patch+json"
    )
    assert code == 409
    code, _status, _ = cluster.request(
        "PATCH",
        f"{PODS}/web",
        [{"op": "remove", "path": "/nothing/here"}],
        content_type="application/json-patch+json",
    )
    assert code == 422
    assert (
        cluster.request("PATCH", f"{PODS}/none", {"a": 1}, content_type="application/merge-patch+json")[0]
        == 404
    )


def test_binding_status_and_eviction(make_cluster):
    cluster = make_cluster(nodes=2, schedulers=False)
    code, _created, _ = cluster.request("POST", PODS, pod("job-1"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "job-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    code, status, _ = cluster.request("POST", f"{PODS}/job-1/binding", binding)
    assert code == 201 and status["status"] == "Success"
    bound = cluster.request("GET", f"{PODS}/job-1")[1]
    assert bound["spec"]["nodeName"] == "node-1"
    code, status, _ = cluster.request("POST", f"{PODS}/job-1/binding", binding)
    assert code == 409 and status["reason"] == "Conflict"
    # The simulated kubelet starts a bound pod.
    _wait(lambda: cluster.request("GET", f"{PODS}/job-1")[1]["status"]["phase"] == "Running")
    # The status subresource changes status only; the main resource leaves status alone.
    current = cluster.request("GET", f"{PODS}/job-1")[1]
    changed = {
        **current,
        "status": {**current["status"], "message": "hello"},
        "metadata": {**current["metadata"], "labels": {"changed": "no"}},
    }
    code, updated, _ = cluster.request("PUT", f"{PODS}/job-1/status", changed)
    assert code == 200 and updated["status"]["message"] == "hello"
    assert updated["metadata"]["labels"] == current["metadata"]["labels"]
    code, status, _ = cluster.request(
        "POST",
        f"{PODS}/job-1/eviction",
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "job-1", "namespace": "default"},
        },
    )
    assert code == 201
    assert cluster.request("GET", f"{PODS}/job-1")[0] == 404


def test_eviction_respects_disruption_budget(make_cluster):
    cluster = make_cluster(nodes=1, schedulers=False)
    cluster.request("POST", PODS, pod("db-0", nodeName="node-0"))
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    }
    assert cluster.request("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)[0] == 201
    _wait(lambda: cluster.request("GET", f"{PODS}/db-0")[1]["status"]["phase"] == "Running")
    code, status, _ = cluster.request("POST", f"{PODS}/db-0/eviction", {"kind": "Eviction"})
    assert code == 429 and status["reason"] == "TooManyRequests"
    assert cluster.request("GET", f"{PODS}/db-0")[0] == 200


def _events(resp, count: int) -> list[dict]:
    out = []
    while len(out) < count:
        line = resp.readline()
        if not line:
            break
        out.append(json.loads(line))
    return out


def test_watch_from_version_in_order_with_selector_transitions(make_cluster):
    cluster = make_cluster(nodes=1, schedulers=False)
    rv = cluster.request("GET", PODS)[1]["metadata"]["resourceVersion"]
    resp = cluster.stream(f"{PODS}?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb")
    assert resp.status == 200
    cluster.request("POST", PODS, pod("web-1"))
    cluster.request("POST", PODS, pod("other-1"))
    cluster.request(
        "PATCH",
        f"{PODS}/web-1",
        {"metadata": {"labels": {"app": "gone"}}},
        content_type="application/merge-patch+json",
    )
    cluster.request(
        "PATCH",
        f"{PODS}/other-1",
        {"metadata": {"labels": {"app": "web"}}},
        content_type="application/merge-patch+json",
    )
    cluster.request("DELETE", f"{PODS}/other-1")
    events = _events(resp, 4)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "web-1"),
        ("DELETED", "web-1"),
        ("ADDED", "other-1"),
        ("DELETED", "other-1"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    resp.close()


def test_watch_without_version_lists_first_then_times_out(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    cluster.request("POST", PODS, pod("a-1"))
    started = time.time()
    resp = cluster.stream(f"{PODS}?watch=true&timeoutSeconds=1")
    events = [json.loads(line) for line in resp.read().splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a-1")]
    assert time.time() - started < 5


def test_watch_bookmarks_and_gone(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False, bookmark_interval=0.2, history=5)
    rv = int(cluster.request("GET", PODS)[1]["metadata"]["resourceVersion"])
    resp = cluster.stream(f"{PODS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1")
    events = [json.loads(line) for line in resp.read().splitlines()]
    assert events and all(e["type"] == "BOOKMARK" for e in events)
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(rv)
    for i in range(12):
        cluster.request("POST", PODS, pod(f"p-{i}"))
    resp = cluster.stream(f"{PODS}?watch=1&resourceVersion={rv}")
    events = _events(resp, 1)
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    resp.close()


def test_table_output(cluster):
    cluster.request("POST", PODS, pod("web-1"))
    _wait(lambda: cluster.request("GET", f"{PODS}/web-1")[1]["spec"].get("nodeName"))
    code, tbl, _ = cluster.request(
        "GET", PODS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert code == 200 and tbl["kind"] == "Table"
    columns = [c["name"] for c in tbl["columnDefinitions"]]
    assert columns[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert "Node" in columns and "Nominated Node" in columns
    row = tbl["rows"][0]["cells"]
    node = cluster.request("GET", f"{PODS}/web-1")[1]["spec"]["nodeName"]
    assert row[0] == "web-1" and row[columns.index("Node")] == node


def test_scheduled_end_to_end_and_unschedulable_event(cluster):
    cluster.request("POST", PODS, pod("small"))
    cluster.request("POST", PODS, pod("huge", cpu="1000"))
    placed = _wait(lambda: cluster.request("GET", f"{PODS}/small")[1]["spec"].get("nodeName"))
    assert placed in ("node-0", "node-1")
    _wait(lambda: cluster.request("GET", f"{PODS}/small")[1]["status"]["phase"] == "Running")

    def failed():
        events = cluster.request(
            "GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dhuge"
        )[1]["items"]
        return [e for e in events if e["reason"] == "FailedScheduling"]

    event = _wait(failed)[0]
    assert "Insufficient cpu" in event["message"] and event["involvedObject"]["kind"] == "Pod"
    same = cluster.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events")[1]["items"]
    assert any(e["reason"] == "FailedScheduling" and e["regarding"]["name"] == "huge" for e in same)


def test_restart_keeps_objects_and_versions(make_cluster, tmp_path):
    first = make_cluster(nodes=1, data_dir=tmp_path / "d")
    first.request("POST", PODS, pod("keep"))
    _wait(lambda: first.request("GET", f"{PODS}/keep")[1]["spec"].get("nodeName"))
    rv = int(first.request("GET", PODS)[1]["metadata"]["resourceVersion"])
    token = first.token
    first.stop()
    second = make_cluster(nodes=1, data_dir=tmp_path / "d")
    assert second.token == token
    kept = second.request("GET", f"{PODS}/keep")[1]
    assert kept["spec"]["nodeName"] == "node-0"
    _code, created, _ = second.request("POST", PODS, pod("new"))
    assert int(created["metadata"]["resourceVersion"]) > rv
    _wait(lambda: second.request("GET", f"{PODS}/new")[1]["spec"].get("nodeName"))


def test_graceful_pod_deletion(cluster):
    cluster.request("POST", PODS, pod("slow"))
    _wait(lambda: cluster.request("GET", f"{PODS}/slow")[1]["status"]["phase"] == "Running")
    code, marked, _ = cluster.request("DELETE", f"{PODS}/slow")
    assert code == 200 and marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    # The simulated kubelet stops it at once, and the pod goes.
    _wait(lambda: cluster.request("GET", f"{PODS}/slow")[0] == 404)
    # A pod not on a node goes at once.
    cluster.request("POST", PODS, pod("huge", cpu="1000"))
    code, gone, _ = cluster.request("DELETE", f"{PODS}/huge?gracePeriodSeconds=10")
    assert code == 200 and "deletionTimestamp" not in gone["metadata"]
    assert cluster.request("GET", f"{PODS}/huge")[0] == 404
    assert cluster.request("DELETE", f"{PODS}/x?gracePeriodSeconds=soon")[0] in (400, 404)


def test_a_write_the_database_cannot_commit_is_a_500_naming_it_and_the_server_says_it_is_not_ready(
    make_cluster,
):
    cluster = make_cluster(nodes=1, schedulers=False)
    code, _, _ = cluster.request("POST", "/api/v1/namespaces/default/pods", pod("kept"))
    assert code == 201

    def full(rows):
        raise sqlite3.OperationalError("database or disk is full")

    cluster.store._write_rows = full
    code, body, _ = cluster.request("POST", "/api/v1/namespaces/default/pods", pod("lost"))
    assert code == 500 and body["kind"] == "Status" and body["reason"] == "InternalError"
    assert "could not be committed (database or disk is full)" in body["message"]
    assert "restart" in body["message"]
    # Memory is ahead of the database now: reads say so too rather than show what may be lost, and
    # readiness fails until a restart.
    code, body, _ = cluster.request("GET", "/api/v1/namespaces/default/pods/kept")
    assert code == 500 and "could not be committed" in body["message"]
    code, text, _ = cluster.request("GET", "/readyz?verbose")
    assert code == 500 and "[-]sqlite failed" in text
    assert cluster.request("GET", "/livez")[0] == 200


def test_a_yaml_body_json_cannot_carry_is_a_400_and_harms_nothing(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    surrogate = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {a: "\\udb18"}\n'
    for method, path, ctype in (
        ("POST", "/api/v1/namespaces/default/configmaps", "application/yaml"),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/bad?fieldManager=me",
            "application/apply-patch+yaml",
        ),
    ):
        code, body, _ = cluster.request(method, path, surrogate, content_type=ctype)
        assert code == 400 and body["reason"] == "BadRequest"
        assert body["message"].startswith("the body of the request could not be decoded")
    code, _, _ = cluster.request(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "good"}, "data": {"a": "1"}}
    )
    assert code == 201
