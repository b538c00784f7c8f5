"""The web UI's server side: its files, the one-time login, YAML decoding for the editor, the running
configuration (view and hot replace) and the scheduling results written on pods."""

from __future__ import annotations

import copy
import json
import re
import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tests.apiserver.conftest import pod

from kubesched.apiserver.cluster_summary import Summary, Tally, catch_up, summarize
from kubesched.apiserver.pod_list import ORDER_IDLE, PodRows, page
from kubesched.apiserver.ui import LoginCodes, decode_documents
from kubesched.scheduler.result_annotations import (
    FILTER_RESULT,
    FINALSCORE_RESULT,
    NORMALIZEDSCORE_RESULT,
    SCORE_RESULT,
    SELECTED_NODE,
)
from kubesched.store.base import EventType, WatchEvent


def wait_for(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_assets_are_served_without_the_token_with_a_same_origin_policy(cluster: Any) -> None:
    status, body, headers = cluster.request("GET", "/ui/", token=None)
    assert status == 200
    assert "<title>kubesched</title>" in body
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    status, body, headers = cluster.request("GET", "/ui/app.js", token=None)
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, _, headers = cluster.request("GET", "/ui", token=None)
    assert status == 302 and headers["Location"] == "/ui/"
    # Only the app's own files: no path leads out of them.
    for path in ("/ui/../token", "/ui/ui.py", "/ui/%2e%2e/app.py"):
        assert cluster.request("GET", path, token=None)[0] == 404


def test_every_api_path_the_ui_uses_needs_the_token(cluster: Any) -> None:
    paths = ("/api/v1/pods", "/kubesched/v1/config/scheduler", "/api/v1/nodes?watch=1")
    paths += ("/kubesched/v1/cluster", "/kubesched/v1/pods")
    for path in paths:
        assert cluster.request("GET", path, token=None)[0] == 401
    assert cluster.request("POST", "/kubesched/v1/decode", "a: 1", token=None)[0] == 401
    assert cluster.request("PUT", "/kubesched/v1/config/batch", "actions: enqueue", token=None)[0] == 401


def test_a_one_time_code_is_traded_for_the_token_once(cluster: Any) -> None:
    code = cluster.served.api.login_codes.issue()
    status, body, _ = cluster.request("POST", "/ui/login", {"code": code}, token=None)
    assert status == 200 and body == {"token": cluster.token}
    status, body, _ = cluster.request("POST", "/ui/login", {"code": code}, token=None)
    assert status == 401 and body["reason"] == "Unauthorized"
    assert cluster.request("POST", "/ui/login", {"code": "guess"}, token=None)[0] == 401
    other = cluster.served.api.login_codes.issue()
    headers = {"Origin": "https://evil.example"}
    assert cluster.request("POST", "/ui/login", {"code": other}, token=None, headers=headers)[0] == 403


def test_an_expired_code_is_refused() -> None:
    codes = LoginCodes("t", lifetime=-1.0)
    assert codes.redeem(codes.issue()) is None
    codes = LoginCodes("t")
    assert codes.redeem(codes.issue()) == "t"


def test_decode_gives_each_document_and_its_line() -> None:
    text = "a: 1\n---\n# nothing\n---\nkind: Pod\nmetadata:\n  name: x\n"
    docs = decode_documents(text)
    assert [d["line"] for d in docs] == [1, 5]
    assert docs[1]["object"] == {"kind": "Pod", "metadata": {"name": "x"}}


def test_decode_locates_a_syntax_error(cluster: Any) -> None:
    status, body, _ = cluster.request(
        "POST", "/kubesched/v1/decode", "a: 1\nb: [\n", content_type="application/yaml"
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert "line 3" in body["message"]


def test_config_is_shown_and_an_invalid_one_is_refused_with_its_field(cluster: Any) -> None:
    status, text, _ = cluster.request("GET", "/kubesched/v1/config/scheduler")
    assert status == 200 and "kind: KubeSchedulerConfiguration" in text
    status, text, _ = cluster.request("GET", "/kubesched/v1/config/batch")
    assert status == 200 and "actions:" in text
    running = cluster.served.schedulers
    bad = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 200\n"
    )
    status, body, _ = cluster.request(
        "PUT", "/kubesched/v1/config/scheduler", bad, content_type="application/yaml"
    )
    assert status == 422, body
    assert body["details"]["causes"][0]["field"] == "percentageOfNodesToScore"
    assert "the running configuration is kept" in body["message"]
    assert cluster.served.schedulers is running
    status, body, _ = cluster.request(
        "PUT", "/kubesched/v1/config/batch", "actions: [", content_type="application/yaml"
    )
    assert status == 422 and "not valid YAML" in body["message"]


def test_a_replaced_config_takes_over_the_running_schedulers(cluster: Any) -> None:
    running = cluster.served.schedulers
    conf = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: other-scheduler\n"
    )
    status, _, _ = cluster.request(
        "PUT", "/kubesched/v1/config/scheduler", conf, content_type="application/yaml"
    )
    assert status == 200
    assert cluster.served.schedulers is not running and not running.running
    assert cluster.request("GET", "/kubesched/v1/config/scheduler")[1] == conf
    # The new profile schedules; the old one's name no longer does.
    assert (
        cluster.request(
            "POST", "/api/v1/namespaces/default/pods", pod("p1", schedulerName="other-scheduler")
        )[0]
        == 201
    )
    wait_for(lambda: cluster.request("GET", "/api/v1/namespaces/default/pods/p1")[1]["spec"].get("nodeName"))
    assert cluster.request("GET", "/readyz")[0] == 200


def test_each_attempt_is_written_as_the_simulators_annotations(make_cluster: Any) -> None:
    cluster = make_cluster(nodes=2, scheduling_results=True)
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("fits"))[0] == 201
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("too-big", cpu="500"))[0] == 201

    def annotated(name: str) -> dict[str, str] | None:
        obj = cluster.request("GET", f"/api/v1/namespaces/default/pods/{name}")[1]
        annotations = obj["metadata"].get("annotations") or {}
        return annotations if FILTER_RESULT in annotations else None

    fits = wait_for(lambda: annotated("fits"))
    node = wait_for(
        lambda: cluster.request("GET", "/api/v1/namespaces/default/pods/fits")[1]["spec"].get("nodeName")
    )
    fits = wait_for(lambda: (a := annotated("fits")) and a.get(SELECTED_NODE) and a)
    assert fits[SELECTED_NODE] == node
    filters = json.loads(fits[FILTER_RESULT])
    assert set(filters) == {"node-0", "node-1"}
    assert filters[node]["NodeResourcesFit"] == "passed"
    raw = json.loads(fits[SCORE_RESULT])
    final = json.loads(fits[FINALSCORE_RESULT])
    normalized = json.loads(fits[NORMALIZEDSCORE_RESULT])
    assert all(isinstance(v, str) for v in raw[node].values())
    # The default profile weighs TaintToleration 3: its final score is three times the normalized one.
    assert int(final[node]["TaintToleration"]) == 3 * int(normalized[node]["TaintToleration"])

    too_big = wait_for(lambda: annotated("too-big"))
    filters = json.loads(too_big[FILTER_RESULT])
    assert filters["node-0"]["NodeResourcesFit"] == "Insufficient cpu"
    assert too_big[SELECTED_NODE] == ""
    # Writing the results is no new event for the pod: it is not tried again (and rewritten) for it.
    path = "/api/v1/namespaces/default/pods/too-big"
    version = cluster.request("GET", path)[1]["metadata"]["resourceVersion"]
    time.sleep(1.0)
    assert cluster.request("GET", path)[1]["metadata"]["resourceVersion"] == version
    outcome = next(o for o in cluster.served.schedulers.scheduler.outcomes.values() if o.name == "too-big")
    assert outcome.attempts == 1


def test_no_results_are_written_unless_asked(cluster: Any) -> None:
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("plain"))[0] == 201
    path = "/api/v1/namespaces/default/pods/plain"
    wait_for(lambda: cluster.request("GET", path)[1]["spec"].get("nodeName"))
    assert FILTER_RESULT not in (cluster.request("GET", path)[1]["metadata"].get("annotations") or {})


def test_replay_answers_a_timeline_and_locates_bad_input(make_cluster: Any) -> None:
    from kubesched.sim.replay import replay_timeline

    cluster = make_cluster(nodes=1, replayer=replay_timeline)
    manifests = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '2', pods: '5'}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {kubesched.io/arrival: 1m}}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]}\n"
    )
    status, body, _ = cluster.request(
        "POST", "/kubesched/v1/replay", manifests, content_type="application/yaml"
    )
    assert status == 200, body
    assert body["nodes"] == [{"name": "n", "labels": {}, "allocatable": {"cpu": 2.0, "memory": 0, "pods": 5}}]
    (p,) = body["pods"]
    assert (p["key"], p["arrival"], p["bound"], p["node"], p["requests"]) == (
        "default/p",
        60.0,
        60.0,
        "n",
        {"cpu": 0.5},
    )
    assert body["series"]["time"] and "alloc.cpu" in body["series"]
    bad = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n"
    )
    status, body, _ = cluster.request("POST", "/kubesched/v1/replay", bad, content_type="application/yaml")
    assert status == 422
    assert body["message"].startswith("replay: document 1: Pod q: field spec.containers[0]")
    assert body["details"]["causes"][0]["field"] == "spec.containers[0].resources.requests.cpu"


def test_the_cluster_summary_sums_each_nodes_pods_and_counts_the_waiting(cluster: Any) -> None:
    for name, cpu in (("a", "250m"), ("b", "500m"), ("huge", "900")):
        assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod(name, cpu=cpu))[0] == 201
    done = pod("done", nodeName="node-1")
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", done)[0] == 201

    def finished() -> bool:
        # The kubelet may update the pod between the read and the write (409): read it again.
        done = cluster.request("GET", "/api/v1/namespaces/default/pods/done")[1]
        done["status"] = {"phase": "Succeeded"}
        return cluster.request("PUT", "/api/v1/namespaces/default/pods/done/status", done)[0] == 200

    wait_for(finished)

    def settled() -> Any:
        cluster.served.api.cluster_summary = None  # not the reused one: the store as it is now
        body = cluster.request("GET", "/kubesched/v1/cluster")[1]
        placed = sum(n["pods"] for n in body["nodes"].values())
        return body if placed == 2 and body["pending"] == 1 else None

    body = wait_for(settled)
    assert body["pods"] == 4
    cpu = sum(n["requested"]["cpu"] for n in body["nodes"].values())
    assert cpu == 0.75  # cores; the finished pod counts for nothing
    names = sorted(name for n in body["nodes"].values() for name in n["names"])
    assert names == ["default/a", "default/b"]
    # Unchanged since the client's copy: no body.
    again = cluster.request("GET", "/kubesched/v1/cluster?resourceVersion=" + body["resourceVersion"])
    assert again[0] == 304


def test_a_change_that_alters_no_sum_leaves_the_summary_unchanged(cluster: Any) -> None:
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("waits", cpu="900"))[0] == 201
    api = cluster.served.api

    def fresh() -> dict[str, Any]:
        known = api.cluster_summary
        if known is not None:  # as if a second had passed: the store's changes are read again
            api.cluster_summary = Summary(known.resource_version, known.body, time.monotonic() - 5, 0.0)
        body: dict[str, Any] = cluster.request("GET", "/kubesched/v1/cluster")[1]
        return body

    def pending(count: int) -> dict[str, Any] | None:
        body = fresh()
        return body if body["pending"] == count else None

    first = wait_for(lambda: pending(1))
    # Other objects, and a pod's status that moves none of its requests, change the store only.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}, "data": {"a": "b"}}
    assert cluster.request("POST", "/api/v1/namespaces/default/configmaps", cm)[0] == 201
    waiting = cluster.request("GET", "/api/v1/namespaces/default/pods/waits")[1]
    waiting["metadata"].setdefault("labels", {})["seen"] = "yes"
    assert cluster.request("PUT", "/api/v1/namespaces/default/pods/waits", waiting)[0] == 200
    assert api.store.resource_version > int(first["resourceVersion"])
    api.cluster_summary = Summary(int(first["resourceVersion"]), first, time.monotonic() - 5, 0.0)
    answer = cluster.request("GET", "/kubesched/v1/cluster?resourceVersion=" + first["resourceVersion"])
    assert answer[0] == 304
    # A pod that counts does change it.
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("another", cpu="900"))[0] == 201
    later = wait_for(lambda: pending(2))
    assert int(later["resourceVersion"]) > int(first["resourceVersion"])


def test_a_costly_summary_is_reused_until_its_share_of_time_allows_another(cluster: Any) -> None:
    first = cluster.request("GET", "/kubesched/v1/cluster")[1]
    api = cluster.served.api
    known = api.cluster_summary
    # As if summing had taken a minute: the next may wait for 50 minutes at a 2 % share.
    api.cluster_summary = Summary(known.resource_version, known.body, time.monotonic(), 60.0)
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("new"))[0] == 201
    assert cluster.request("GET", "/kubesched/v1/cluster")[1] == first
    api.cluster_summary = Summary(known.resource_version, known.body, time.monotonic() - 3600, 60.0)
    wait_for(lambda: cluster.request("GET", "/kubesched/v1/cluster")[1]["pods"] == first["pods"] + 1)


_pods = st.lists(
    st.builds(
        lambda node, phase, milli: {
            "metadata": {"namespace": "ns", "name": "p"},
            "spec": {
                **({"nodeName": node} if node else {}),
                "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{milli}m"}}}],
            },
            "status": {"phase": phase},
        },
        st.sampled_from(["", "n1", "n2", "n3"]),
        st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        st.integers(0, 4000),
    ),
    max_size=40,
).map(lambda pods: [{**p, "metadata": {"namespace": "ns", "name": f"p-{i}"}} for i, p in enumerate(pods)])


@given(_pods)
def test_every_pod_is_counted_once_in_the_summary(pods: list[dict[str, Any]]) -> None:
    body = summarize(pods, 7)
    live = [p for p in pods if p["status"]["phase"] not in ("Succeeded", "Failed")]
    assert body["pods"] == len(pods)
    assert body["pending"] + sum(n["pods"] for n in body["nodes"].values()) == len(live)
    for node, entry in body["nodes"].items():
        on = [p for p in live if p["spec"].get("nodeName") == node]
        milli = sum(int(p["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1]) for p in on)
        assert entry["requested"]["cpu"] == milli / 1000
        assert entry["requested"]["pods"] == len(on) == entry["pods"]


@given(_pods, _pods, st.lists(st.integers(0, 39), max_size=20))
def test_a_tally_kept_up_from_changes_equals_one_made_afresh(
    before: list[dict[str, Any]], after: list[dict[str, Any]], deleted: list[int]
) -> None:
    # Pods created, changed (moved, finished) and deleted one by one sum up as a fresh listing does.
    tally = Tally(before, 1)
    tally.body()  # the entries are kept from here on, rebuilt for the nodes that change
    for changed in after:
        tally.put(changed)
    gone = {f"p-{i}" for i in deleted}
    for name in gone:
        tally.remove(("ns", name))
    now = {p["metadata"]["name"]: p for p in [*before, *after]}
    fresh = Tally([p for name, p in now.items() if name not in gone], 1)
    mine, theirs = tally.body(), fresh.body()
    assert (mine["pods"], mine["pending"]) == (theirs["pods"], theirs["pending"])
    assert mine["nodes"].keys() == theirs["nodes"].keys()
    for node, entry in theirs["nodes"].items():
        assert mine["nodes"][node]["requested"] == entry["requested"]
        assert sorted(mine["nodes"][node]["names"]) == sorted(entry["names"]) or entry["pods"] > 8


def test_the_pods_page_shows_waiting_pods_first_with_their_reason(cluster: Any) -> None:
    for made in (
        pod("a-web"),
        pod("b-web"),
        pod("z-huge", cpu="900"),
        pod("y-gated", schedulingGates=[{"name": "example.com/quota"}]),
    ):
        assert cluster.request("POST", "/api/v1/namespaces/default/pods", made)[0] == 201

    def settled() -> Any:
        cluster.served.api.pod_rows_freshness = None  # not the reused rows: the store as it is now
        body = cluster.request("GET", "/kubesched/v1/pods")[1]
        running = [row for row in body["items"] if row["status"] == "Running"]
        return body if body["items"][0]["status"] == "Unschedulable" and len(running) == 2 else None

    body = wait_for(settled)
    assert [row["name"] for row in body["items"]] == ["z-huge", "y-gated", "a-web", "b-web"]
    huge, gated, web = body["items"][:3]
    assert huge["reason"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert gated == {
        "namespace": "default",
        "name": "y-gated",
        "status": "SchedulingGated",
        "node": "",
        "reason": "waiting for scheduling gates: [example.com/quota]",
    }
    assert web["node"] and web["reason"] == ""
    assert (body["total"], body["matched"], body["waiting"]) == (4, 4, 2)
    # One page at a time, in the same order; filtered on the name, status or node.
    rest = cluster.request("GET", "/kubesched/v1/pods?offset=1&limit=2")[1]
    assert [row["name"] for row in rest["items"]] == ["y-gated", "a-web"]
    gated_only = cluster.request("GET", "/kubesched/v1/pods?filter=Gated")[1]
    assert [row["name"] for row in gated_only["items"]] == ["y-gated"]
    assert (gated_only["total"], gated_only["matched"], gated_only["waiting"]) == (4, 1, 1)
    on_node = cluster.request("GET", "/kubesched/v1/pods?filter=" + web["node"])[1]
    assert web["name"] in [row["name"] for row in on_node["items"]]
    assert all(row["node"] == web["node"] for row in on_node["items"])
    # Unchanged since the client's copy: no body; a new pod changes the page.
    rv = body["resourceVersion"]
    assert cluster.request("GET", "/kubesched/v1/pods?resourceVersion=" + rv)[0] == 304
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("c-web"))[0] == 201
    cluster.served.api.pod_rows_freshness = None
    status, later, _ = cluster.request("GET", "/kubesched/v1/pods?resourceVersion=" + rv)
    assert status == 200 and later["total"] == 5


def test_a_bad_pods_page_query_is_refused(cluster: Any) -> None:
    for query in ("limit=100000", "offset=-1", "limit=ten", "sort=size"):
        status, body, _ = cluster.request("GET", "/kubesched/v1/pods?" + query)
        assert status == 400, query
        assert body["reason"] == "BadRequest"


_rows_pods = st.lists(
    st.builds(
        lambda node, phase, gated, refused, stamp: {
            "metadata": {
                "namespace": "ns",
                "name": "p",
                "creationTimestamp": f"2026-01-01T00:00:{stamp:02d}Z",
            },
            "spec": {
                **({"nodeName": node} if node else {}),
                **({"schedulingGates": [{"name": "g"}]} if gated else {}),
            },
            "status": {
                "phase": phase,
                **(
                    {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
                    if refused
                    else {}
                ),
            },
        },
        st.sampled_from(["", "n1", "n2"]),
        st.sampled_from(["Pending", "Running", "Succeeded"]),
        st.booleans(),
        st.booleans(),
        st.integers(0, 59),
    ),
    max_size=30,
).map(lambda pods: [{**p, "metadata": {**p["metadata"], "name": f"p-{i}"}} for i, p in enumerate(pods)])


@given(
    _rows_pods,
    _rows_pods,
    st.lists(st.integers(0, 29), max_size=10),
    st.sampled_from(["name", "node", "status", "created"]),
)
def test_pods_pages_kept_up_from_changes_list_every_pod_once_waiting_first(
    before: list[dict[str, Any]], after: list[dict[str, Any]], deleted: list[int], sort: str
) -> None:
    rows = PodRows(before, 1)
    page(rows, 0, 1, "", sort)  # the order is kept from here on, change by change
    for changed in after:
        rows.put(changed)
    gone = {f"p-{i}" for i in deleted}
    for name in gone:
        rows.remove(("ns", name))
    now = {p["metadata"]["name"]: p for p in [*before, *after] if p["metadata"]["name"] not in gone}
    fresh = PodRows(list(now.values()), 1)
    whole = page(fresh, 0, 1000, "", sort)
    # Pages of three, one after the other, hold every pod once, as a listing made afresh does.
    paged = [row for offset in range(0, len(now) + 3, 3) for row in page(rows, offset, 3, "", sort)["items"]]
    assert paged == whole["items"]
    assert sorted(row["name"] for row in paged) == sorted(now)
    # Pods refused by the scheduler, then gated ones, then untried ones come before all others.
    order = {"Unschedulable": 0, "SchedulingGated": 1, "Pending": 2}
    ranks = [order.get(row["status"], 9) for row in paged]
    assert ranks == sorted(ranks)
    assert whole["waiting"] == sum(1 for row in paged if row["status"] in order and not row["node"])
    # Filtered: the same order, only the pods on a node.
    on_n1 = page(rows, 0, 1000, "n1", sort)
    assert on_n1["items"] == [row for row in whole["items"] if "n1" in row["node"]]


def test_the_first_walk_over_every_pod_does_not_hold_back_the_next_summary(cluster: Any) -> None:
    first = cluster.request("GET", "/kubesched/v1/cluster")[1]
    known = cluster.served.api.cluster_summary
    assert known is not None and known.cost == 0.0
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("late"))[0] == 201
    wait_for(lambda: cluster.request("GET", "/kubesched/v1/cluster")[1]["pods"] == first["pods"] + 1)


def test_the_first_walk_over_every_pod_does_not_hold_back_the_next_pods_page(cluster: Any) -> None:
    first = cluster.request("GET", "/kubesched/v1/pods")[1]
    freshness = cluster.served.api.pod_rows_freshness
    assert freshness is not None and freshness.cost == 0.0
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("late"))[0] == 201
    wait_for(lambda: cluster.request("GET", "/kubesched/v1/pods")[1]["total"] == first["total"] + 1)


def ui_cpu_seconds(cluster: Any) -> dict[str, float]:
    code, text, _ = cluster.request("GET", "/metrics")
    assert code == 200, text
    found = re.findall(r'^kubesched_ui_cpu_seconds_total\{view="(\w+)"\} (\S+)$', text, re.M)
    return {view: float(seconds) for view, seconds in found}


def test_the_time_spent_on_each_view_is_exported_in_the_metrics(cluster: Any) -> None:
    assert ui_cpu_seconds(cluster) == {"cluster": 0.0, "pods": 0.0}
    assert cluster.request("GET", "/kubesched/v1/cluster")[0] == 200
    after_summary = ui_cpu_seconds(cluster)
    assert after_summary["cluster"] > 0.0
    assert after_summary["pods"] == 0.0
    assert cluster.request("GET", "/kubesched/v1/pods")[0] == 200
    after_page = ui_cpu_seconds(cluster)
    assert after_page["pods"] > 0.0
    assert after_page["cluster"] == after_summary["cluster"]
    # Other clients' requests are not the UI's.
    assert cluster.request("GET", "/api/v1/pods")[0] == 200
    assert ui_cpu_seconds(cluster) == after_page


def test_an_order_no_page_asks_for_is_no_longer_kept_and_is_made_again_when_asked() -> None:
    def placed(i: int, node: str = "") -> dict[str, Any]:
        spec = {"nodeName": node} if node else {}
        return {"metadata": {"namespace": "ns", "name": f"p-{i}"}, "spec": spec, "status": {}}

    now = [0.0]
    rows = PodRows([placed(i, f"n{i % 3}") for i in range(6)], 1)
    rows.clock = lambda: now[0]
    page(rows, 0, 10, "", "node")
    page(rows, 0, 10, "", "name")
    now[0] = ORDER_IDLE / 2
    page(rows, 0, 10, "", "name")
    now[0] = ORDER_IDLE + 1
    page(rows, 0, 10, "", "name")
    # The node order was last asked for longer ago than ORDER_IDLE: changes no longer go to it.
    assert set(rows._orders) == {"name"}
    for i in range(6, 9):
        rows.put(placed(i, "n0"))
    rows.remove(("ns", "p-1"))
    fresh = PodRows([placed(i, "n0" if i >= 6 else f"n{i % 3}") for i in range(9) if i != 1], 1)
    for sort in ("node", "name"):
        assert page(rows, 0, 20, "", sort) == page(fresh, 0, 20, "", sort)


class _Changes:
    """What ``catch_up`` reads of the store: its changes after a resourceVersion, and a listing."""

    def __init__(self) -> None:
        self.history: list[WatchEvent] = []
        self.live: dict[str, dict[str, Any]] = {}

    @property
    def resource_version(self) -> int:
        return len(self.history)

    def changes_since(self, rv: int, limit: int = 10_000) -> list[WatchEvent]:
        return self.history[rv : rv + limit]

    def list_with_version(self, kind: str) -> tuple[list[dict[str, Any]], int]:
        return list(self.live.values()), self.resource_version

    def write(self, pod: dict[str, Any] | None, name: str) -> None:
        known = self.live.get(name)
        if pod is None and known is None:
            return
        obj = copy.deepcopy(pod if pod is not None else known)
        assert obj is not None
        obj["metadata"] = {**obj["metadata"], "name": name, "resourceVersion": str(len(self.history) + 1)}
        if pod is None:
            del self.live[name]
            kind_of = EventType.DELETED
        else:
            kind_of = EventType.MODIFIED if known is not None else EventType.ADDED
            self.live[name] = obj
        self.history.append(WatchEvent(kind_of, "Pod", obj))
        if len(self.history) % 3 == 0:  # other kinds' changes come between, and are passed over
            lease = {"metadata": {"name": "l", "resourceVersion": "0"}}
            self.history.append(WatchEvent(EventType.MODIFIED, "Lease", lease))


@given(
    _pods,
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 39), st.booleans()), max_size=40),
    st.sampled_from(["name", "node", "status", "created"]),
)
def test_views_caught_up_from_the_stores_changes_equal_ones_made_afresh(
    shapes: list[dict[str, Any]], writes: list[tuple[int, int, bool]], sort: str
) -> None:
    # Pods created, changed, deleted and created again, read in catch-ups of a few changes each
    # (a pod's several changes within one read once, in any order), sum and list as a fresh
    # listing of what is left does.
    store: Any = _Changes()
    tally = catch_up(store, None, Tally)
    rows = catch_up(store, None, PodRows)
    page(rows, 0, 1, "", sort)
    for name_of, shape_of, delete in writes:
        name = f"p-{name_of}"
        store.write(None if delete or not shapes else shapes[shape_of % len(shapes)], name)
        if shape_of % 3 == 0:
            tally = catch_up(store, tally, Tally)
            rows = catch_up(store, rows, PodRows)
    tally = catch_up(store, tally, Tally)
    rows = catch_up(store, rows, PodRows)
    left = list(store.live.values())
    mine, theirs = tally.body(), Tally(left, 1).body()
    assert (mine["pods"], mine["pending"]) == (theirs["pods"], theirs["pending"])
    assert {n: e["requested"] for n, e in mine["nodes"].items()} == {
        n: e["requested"] for n, e in theirs["nodes"].items()
    }
    assert page(rows, 0, 100, "", sort)["items"] == page(PodRows(left, 1), 0, 100, "", sort)["items"]
