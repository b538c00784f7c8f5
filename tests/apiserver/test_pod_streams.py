"""What reaches a pod's kubelet: logs are the simulated lifecycle, as kubelet serves a container's
output; exec, attach and port-forward (and so ``kubectl cp``) are refused with a Status saying the
pod is simulated. The API server's own checks before that are upstream's."""

from __future__ import annotations

import re
import time

import pytest
from tests.apiserver.conftest import pod
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

PODS = "/api/v1/namespaces/default/pods"
UPGRADE = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"


def _running(cluster, name):
    return until(lambda: cluster.request("GET", f"{PODS}/{name}")[1]["status"].get("phase") == "Running")


def _unschedulable(name):
    return pod(name, nodeSelector={"nowhere": "true"})


def test_a_running_pods_log_is_its_simulated_lifecycle(cluster):
    cluster.request("POST", PODS, pod("web-1"))
    assert _running(cluster, "web-1")
    node = cluster.request("GET", f"{PODS}/web-1")[1]["spec"]["nodeName"]

    code, text, headers = cluster.request("GET", f"{PODS}/web-1/log")
    assert code == 200 and headers["Content-Type"].startswith("text/plain")
    lines = text.splitlines()
    assert lines[0] == f"kubesched: pod default/web-1 scheduled to node {node} by default-scheduler"
    assert lines[1].startswith('kubesched: container "c" started (image nginx)') and "simulated" in lines[1]
    assert len(lines) == 2

    code, text, _ = cluster.request("GET", f"{PODS}/web-1/log?timestamps=true&container=c")
    assert all(re.match(STAMP + " kubesched: ", line) for line in text.splitlines()), text
    assert cluster.request("GET", f"{PODS}/web-1/log?tailLines=1")[1].splitlines() == lines[1:]
    assert cluster.request("GET", f"{PODS}/web-1/log?tailLines=0")[1] is None
    assert cluster.request("GET", f"{PODS}/web-1/log?limitBytes=9")[1] == "kubesched"
    assert cluster.request("GET", f"{PODS}/web-1/log?sinceTime=2999-01-01T00:00:00Z")[1] is None
    assert cluster.request("GET", f"{PODS}/web-1/log?sinceSeconds=3600")[1].splitlines() == lines


def test_a_finished_pods_log_ends_with_how_it_ended(make_cluster):
    cluster = make_cluster(nodes=1)
    body = pod("job-1")
    body["metadata"]["annotations"] = {"kubesched.io/duration": "1s"}
    cluster.request("POST", PODS, body)
    until(lambda: cluster.request("GET", f"{PODS}/job-1")[1]["status"].get("phase") == "Succeeded")
    lines = cluster.request("GET", f"{PODS}/job-1/log")[1].splitlines()
    assert [line.split(":")[0] for line in lines] == ["kubesched"] * 3
    assert lines[2] == 'kubesched: container "c" terminated: exit code 0 (Completed)'
    status = cluster.request("GET", f"{PODS}/job-1")[1]["status"]["containerStatuses"][0]
    # kubelet keeps when a terminated container started.
    assert status["state"]["terminated"]["startedAt"] <= status["state"]["terminated"]["finishedAt"]


def test_follow_streams_the_lifecycle_until_the_container_ends(make_cluster):
    cluster = make_cluster(nodes=1)
    body = pod("job-1")
    body["metadata"]["annotations"] = {"kubesched.io/duration": "2s"}
    cluster.request("POST", PODS, body)
    assert _running(cluster, "job-1")
    started = time.monotonic()
    resp = cluster.stream(f"{PODS}/job-1/log?follow=true")
    assert resp.status == 200
    text = resp.read().decode()
    assert time.monotonic() - started > 0.5  # it waited for the container to end
    assert text.splitlines()[-1] == 'kubesched: container "c" terminated: exit code 0 (Completed)'
    assert len(text.splitlines()) == 3


def test_log_requests_are_checked_as_upstream_checks_them(cluster):
    cluster.request("POST", PODS, _unschedulable("stuck"))
    two = pod("two")
    two["spec"]["containers"].append({"name": "side", "image": "busybox"})
    two["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    cluster.request("POST", PODS, two)
    assert _running(cluster, "two")

    # No node, no kubelet to ask: nothing at all.
    code, text, _ = cluster.request("GET", f"{PODS}/stuck/log")
    assert code == 204 and text is None
    code, status, _ = cluster.request("GET", f"{PODS}/missing/log")
    assert code == 404 and status["message"] == 'pods "missing" not found'
    code, status, _ = cluster.request("GET", f"{PODS}/two/log")
    assert code == 400
    assert status["message"] == "a container name must be specified for pod two, choose one of: [init c side]"
    code, status, _ = cluster.request("GET", f"{PODS}/two/log?container=nope")
    assert code == 400 and status["message"] == "container nope is not valid for pod two"
    code, status, _ = cluster.request("GET", f"{PODS}/two/log?container=side&previous=true")
    assert code == 400 and status["message"] == 'previous terminated container "side" in pod "two" not found'
    code, text, _ = cluster.request("GET", f"{PODS}/two/log?container=init")
    assert code == 200 and 'init container "init" started and completed' in text

    code, status, _ = cluster.request("GET", f"{PODS}/two/log?container=c&tailLines=-1")
    assert code == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        'PodLogOptions "two" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'
    )
    assert status["details"] == {
        "name": "two",
        "kind": "PodLogOptions",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: must be greater than or equal to 0",
                "field": "tailLines",
            }
        ],
    }
    code, status, _ = cluster.request(
        "GET", f"{PODS}/two/log?container=c&sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z"
    )
    assert (
        code == 422 and "at most one of `sinceTime` or `sinceSeconds` may be specified" in status["message"]
    )
    code, status, _ = cluster.request("GET", f"{PODS}/two/log?container=c&tailLines=abc")
    assert code == 400 and status["message"] == 'strconv.ParseInt: parsing "abc": invalid syntax'
    code, status, _ = cluster.request("GET", f"{PODS}/two/log?container=c&sinceTime=yesterday")
    assert code == 400 and status["message"].startswith('parsing time "yesterday"')
    assert cluster.request("POST", f"{PODS}/two/log")[0] == 405


def test_a_bound_pod_not_started_yet_is_waiting(make_cluster):
    cluster = make_cluster(nodes=1, schedulers=False)
    cluster.served.controllers.tick = lambda: None  # the kubelet never gets to start it
    cluster.request("POST", PODS, pod("early", nodeName="node-0"))
    code, status, _ = cluster.request("GET", f"{PODS}/early/log")
    assert (
        code == 400
        and status["message"] == 'container "c" in pod "early" is waiting to start: ContainerCreating'
    )


def test_exec_attach_and_port_forward_say_the_pod_is_simulated(cluster):
    cluster.request("POST", PODS, pod("web-1"))
    cluster.request("POST", PODS, _unschedulable("stuck"))
    assert _running(cluster, "web-1")
    for sub, query, why in (
        (
            "exec",
            "?command=ls&stdout=true",
            'container "c" runs no process, so there is nothing to exec into',
        ),
        ("attach", "?stdout=true", 'container "c" runs no process, so there is nothing to attach to'),
        ("portforward", "?ports=80", "no process listens on its ports, so there is nothing to forward to"),
    ):
        for method in ("GET", "POST"):
            code, status, _ = cluster.request(method, f"{PODS}/web-1/{sub}{query}", headers=UPGRADE)
            assert code == 400 and status["kind"] == "Status" and status["reason"] == "BadRequest"
            assert status["message"] == f'pod "web-1" is simulated by kubesched: {why}'
        code, status, _ = cluster.request("POST", f"{PODS}/web-1/{sub}{query}")
        assert code == 400 and status["message"] == "Upgrade request required"
        code, status, _ = cluster.request("POST", f"{PODS}/stuck/{sub}{query}", headers=UPGRADE)
        assert code == 400 and status["message"] == "pod stuck does not have a host assigned"
        code, status, _ = cluster.request("POST", f"{PODS}/missing/{sub}{query}", headers=UPGRADE)
        assert code == 404
        assert cluster.request("DELETE", f"{PODS}/web-1/{sub}")[0] == 405
    code, status, _ = cluster.request("POST", f"{PODS}/web-1/exec?container=nope", headers=UPGRADE)
    assert code == 400 and status["message"] == "container nope is not valid for pod web-1"
    code, status, _ = cluster.request("POST", f"{PODS}/web-1/portforward?ports=http", headers=UPGRADE)
    assert code == 400
    assert status["message"] == 'cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax'


def test_discovery_lists_the_kubelet_subresources(cluster):
    resources = {r["name"]: r for r in cluster.request("GET", "/api/v1")[1]["resources"]}
    assert resources["pods/log"]["verbs"] == ["get"] and resources["pods/log"]["kind"] == "Pod"
    for sub, kind in (("exec", "PodExecOptions"), ("attach", "PodAttachOptions")):
        assert resources[f"pods/{sub}"] == {
            "name": f"pods/{sub}",
            "singularName": "",
            "namespaced": True,
            "kind": kind,
            "verbs": ["create", "get"],
        }
    assert resources["pods/portforward"]["kind"] == "PodPortForwardOptions"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_logs_exec_cp_attach_and_port_forward(make_cluster, binary, tmp_path):
    cluster = make_cluster(nodes=1)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    ok(kubectl("run", "web", "--image=nginx"))
    assert _running(cluster, "web")

    out = ok(kubectl("logs", "web"))
    assert out.startswith("kubesched: pod default/web scheduled to node node-0 by default-scheduler\n")
    assert 'container "web" started (image nginx)' in out
    out = ok(kubectl("logs", "web", "--timestamps", "--tail=1"))
    assert re.fullmatch(STAMP + ' kubesched: container "web" started .*\n', out), out

    simulated = 'Error from server (BadRequest): pod "web" is simulated by kubesched'
    proc = kubectl("exec", "web", "--", "ls")
    assert proc.returncode == 1 and proc.stderr.startswith(simulated), proc.stderr
    assert "nothing to exec into" in proc.stderr and "Traceback" not in proc.stderr
    proc = kubectl("cp", "web:/etc/hosts", str(tmp_path / "hosts"))
    assert proc.returncode == 1 and "is simulated by kubesched" in proc.stderr, proc.stderr
    proc = kubectl("attach", "web", timeout=60)
    assert proc.returncode == 1 and "nothing to attach to" in proc.stderr, proc.stderr
    proc = kubectl("port-forward", "pod/web", "0:80", timeout=60)
    assert proc.returncode == 1 and "nothing to forward to" in proc.stderr, proc.stderr
