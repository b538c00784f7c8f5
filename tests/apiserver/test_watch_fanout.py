"""Several watches following the same changes: each gets them in its own group version and through
its own selector, although the server builds a change's line once for all watches that share it."""

from __future__ import annotations

import json
from typing import Any

from .conftest import pod

PODS = "/api/v1/namespaces/default/pods"


def _lines(resp: Any, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < count:
        line = resp.readline()
        assert line, f"the stream ended after {len(out)} events"
        if line.strip():
            out.append(json.loads(line))
    return out


def test_events_watched_in_both_group_versions_at_once(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    rv = cluster.request("GET", "/api/v1/namespaces/default/events")[1]["metadata"]["resourceVersion"]
    core = cluster.stream(f"/api/v1/namespaces/default/events?watch=1&resourceVersion={rv}")
    new = cluster.stream(f"/apis/events.k8s.io/v1/namespaces/default/events?watch=1&resourceVersion={rv}")
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "eventTime": "2026-11-25T10:00:00.000000Z",
        "reportingController": "test",
        "reportingInstance": "test-1",
        "action": "Binding",
        "reason": "Scheduled",
        "note": "placed",
        "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
    }
    status = cluster.request("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event)[0]
    assert status == 201
    (as_core,) = _lines(core, 1)
    (as_new,) = _lines(new, 1)
    assert as_core["type"] == as_new["type"] == "ADDED"
    assert as_core["object"]["apiVersion"] == "v1"
    assert as_core["object"]["message"] == "placed" and as_core["object"]["involvedObject"]["name"] == "p"
    assert as_new["object"]["apiVersion"] == "events.k8s.io/v1"
    assert as_new["object"]["note"] == "placed" and as_new["object"]["regarding"]["name"] == "p"
    core.close()
    new.close()


def test_watches_with_different_selectors_see_their_own_transitions(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    rv = cluster.request("GET", PODS)[1]["metadata"]["resourceVersion"]
    everything = cluster.stream(f"{PODS}?watch=1&resourceVersion={rv}")
    web = cluster.stream(f"{PODS}?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb")
    cluster.request("POST", PODS, pod("web-1"))
    cluster.request(
        "PATCH",
        f"{PODS}/web-1",
        {"metadata": {"labels": {"app": "db"}}},
        content_type="application/merge-patch+json",
    )
    all_events = _lines(everything, 2)
    web_events = _lines(web, 2)
    assert [e["type"] for e in all_events] == ["ADDED", "MODIFIED"]
    assert [e["type"] for e in web_events] == ["ADDED", "DELETED"]
    # The DELETED a selector turns a change into carries the same object as the MODIFIED.
    assert web_events[1]["object"] == all_events[1]["object"]
    assert all_events[1]["object"]["metadata"]["labels"] == {"app": "db"}
    everything.close()
    web.close()
