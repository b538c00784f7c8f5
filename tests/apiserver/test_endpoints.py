"""Pods' IPs from their node's pod CIDR and host IPs from its address, and the Endpoints and
EndpointSlices of Services from the pods they select, through the served API and kubectl."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from tests.apiserver.conftest import pod
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

PODS = "/api/v1/namespaces/default/pods"
SVCS = "/api/v1/namespaces/default/services"
EPS = "/api/v1/namespaces/default/endpoints"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


def _web_pod(name: str) -> dict[str, Any]:
    p = pod(name)
    p["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return p


def _running(cluster, name: str) -> dict[str, Any]:
    def get() -> Any:
        code, body, _ = cluster.request("GET", f"{PODS}/{name}")
        return body if code == 200 and body["status"].get("phase") == "Running" else None

    found = until(get)
    assert found, f"pod {name} did not start"
    return found


def test_pods_get_ips_from_their_nodes_pod_cidr_and_the_nodes_address(cluster):
    for name in ("web-1", "web-2", "web-3"):
        assert cluster.request("POST", PODS, pod(name))[0] == 201
    ips = set()
    for name in ("web-1", "web-2", "web-3"):
        p = _running(cluster, name)
        node = cluster.request("GET", f"/api/v1/nodes/{p['spec']['nodeName']}")[1]
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert p["status"]["hostIP"] == internal and p["status"]["hostIPs"] == [{"ip": internal}]
        ip = p["status"]["podIP"]
        assert p["status"]["podIPs"] == [{"ip": ip}]
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(node["spec"]["podCIDR"])
        ips.add(ip)
    assert len(ips) == 3
    _code, node, _ = cluster.request("GET", "/api/v1/nodes/node-1")
    assert node["spec"]["podCIDR"] == "10.128.1.0/24"
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "172.18.0.3"}


def test_a_node_without_a_pod_cidr_gets_one(cluster):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"}}
    assert cluster.request("POST", "/api/v1/nodes", node)[0] == 201
    got = until(lambda: (cluster.request("GET", "/api/v1/nodes/extra")[1].get("spec") or {}).get("podCIDR"))
    assert got == "10.128.2.0/24"  # the first /24 the simulated nodes left free


def test_endpoints_and_slices_follow_the_ready_pods_a_service_selects(cluster):
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    assert cluster.request("POST", SVCS, svc)[0] == 201
    empty = until(
        lambda: (
            cluster.request("GET", f"{EPS}/web")[1]
            if cluster.request("GET", f"{EPS}/web")[0] == 200
            else None
        )
    )
    assert empty["metadata"]["labels"] == {"tier": "front"} and "subsets" not in empty
    for name in ("web-1", "web-2"):
        cluster.request("POST", PODS, _web_pod(name))
    cluster.request("POST", PODS, pod("other-1"))
    pods = {name: _running(cluster, name) for name in ("web-1", "web-2")}

    def listed() -> Any:
        ep = cluster.request("GET", f"{EPS}/web")[1]
        return ep if len((ep.get("subsets") or [{}])[0].get("addresses") or []) == 2 else None

    ep = until(listed)
    assert ep, cluster.request("GET", f"{EPS}/web")[1]
    (subset,) = ep["subsets"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    by_name = {a["targetRef"]["name"]: a for a in subset["addresses"]}
    for name, p in pods.items():
        assert by_name[name]["ip"] == p["status"]["podIP"]
        assert by_name[name]["nodeName"] == p["spec"]["nodeName"]
        assert by_name[name]["targetRef"]["uid"] == p["metadata"]["uid"]
    _code, slices, _ = cluster.request("GET", f"{SLICES}?labelSelector=kubernetes.io/service-name%3Dweb")
    (eps,) = slices["items"]
    assert eps["addressType"] == "IPv4"
    assert eps["metadata"]["name"].startswith("web-")
    assert (
        eps["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
        == "endpointslice-controller.k8s.io"
    )
    assert eps["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert eps["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert sorted(e["addresses"][0] for e in eps["endpoints"]) == sorted(
        p["status"]["podIP"] for p in pods.values()
    )
    assert all(
        e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in eps["endpoints"]
    )
    assert {e["zone"] for e in eps["endpoints"]} <= {"zone-0", "zone-1"}
    # A pod that goes leaves both.
    assert cluster.request("DELETE", f"{PODS}/web-1?gracePeriodSeconds=0")[0] == 200

    def one_left() -> Any:
        ep = cluster.request("GET", f"{EPS}/web")[1]
        sl = cluster.request("GET", f"{SLICES}/{eps['metadata']['name']}")[1]
        return len(ep["subsets"][0]["addresses"]) == 1 and len(sl["endpoints"]) == 1

    assert until(one_left)
    # The Service's deletion takes its Endpoints and slices.
    assert cluster.request("DELETE", f"{SVCS}/web")[0] == 200
    assert until(lambda: cluster.request("GET", f"{EPS}/web")[0] == 404)
    assert cluster.request("GET", f"{SLICES}/{eps['metadata']['name']}")[0] == 404


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_lists_endpoints_and_slices(cluster, binary):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    for i in range(5):
        cluster.request("POST", PODS, _web_pod(f"web-{i}"))
    ok(kubectl("create", "service", "clusterip", "web", "--tcp=80:8080"))
    assert until(
        lambda: (
            len((cluster.request("GET", f"{EPS}/web")[1].get("subsets") or [{}])[0].get("addresses") or [])
            == 5
        )
    )
    ep = cluster.request("GET", f"{EPS}/web")[1]
    ips = [a["ip"] for a in ep["subsets"][0]["addresses"]]
    out = ok(kubectl("get", "endpoints", "web"))
    header, row = out.splitlines()
    assert header.split() == ["NAME", "ENDPOINTS", "AGE"]
    assert row.split()[:5] == ["web", ",".join(f"{ip}:8080" for ip in ips[:3]), "+", "2", "more..."]
    out = ok(kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=web"))
    header, row = out.splitlines()
    assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    cells = row.split()
    assert cells[1:3] == ["IPv4", "8080"]
    assert cells[3].count(",") == 2 and cells[4:7] == ["+", "2", "more..."]
