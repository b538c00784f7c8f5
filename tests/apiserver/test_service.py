"""Services as kube-apiserver defaults and allocates them: a type, ports with protocol and target
port, IP families, a cluster IP from the service CIDR and node ports from 30000-32767, the
allocations kept across updates, and kubectl's columns."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok

SVCS = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"


def _svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"app": name})
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_a_service_gets_upstreams_defaults_and_a_cluster_ip_from_the_service_cidr(cluster):
    code, svc, _ = cluster.request("POST", SVCS, _svc("web", ports=[{"port": 80}, {"name": "b", "port": 81}]))
    assert code == 422  # two ports need names
    assert _causes(svc) == [("spec.ports[0].name", "Required value")]
    code, svc, _ = cluster.request("POST", SVCS, _svc("web"))
    assert code == 201, svc
    spec = svc["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["sessionAffinity"] == "None"
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    # Dynamic addresses come from above the band kept for addresses asked for by value.
    assert ip in ipaddress.ip_network("10.0.0.0/24") and int(ip) - int(ipaddress.ip_address("10.0.0.0")) > 16
    assert svc["status"] == {"loadBalancer": {}}


def test_cluster_ips_asked_for_are_checked_against_the_range_and_what_is_taken(cluster):
    code, first, _ = cluster.request("POST", SVCS, _svc("a", clusterIP="10.0.0.5"))
    assert code == 201 and first["spec"]["clusterIPs"] == ["10.0.0.5"]
    code, body, _ = cluster.request("POST", SVCS, _svc("b", clusterIP="10.0.0.5"))
    assert code == 422
    assert _causes(body) == [
        (
            "spec.clusterIPs",
            'Invalid value: []string{"10.0.0.5"}: '
            "failed to allocate IP 10.0.0.5: provided IP is already allocated",
        )
    ]
    code, body, _ = cluster.request("POST", SVCS, _svc("c", clusterIP="10.9.0.5"))
    assert code == 422
    assert body["message"] == (
        'Service "c" is invalid: spec.clusterIPs: Invalid value: []string{"10.9.0.5"}: failed to allocate IP '
        "10.9.0.5: provided IP is not in the valid range. The range of valid IPs is 10.0.0.0/24"
    )
    code, body, _ = cluster.request("POST", SVCS, _svc("d", clusterIP="nope"))
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.clusterIPs[0]"
    # The address is free again once its Service is gone.
    assert cluster.request("DELETE", f"{SVCS}/a")[0] == 200
    assert cluster.request("POST", SVCS, _svc("b", clusterIP="10.0.0.5"))[0] == 201


def test_node_ports_are_allocated_kept_and_checked(cluster):
    code, svc, _ = cluster.request(
        "POST",
        SVCS,
        _svc(
            "np",
            type="NodePort",
            ports=[{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}],
        ),
    )
    assert code == 201, svc
    ports = svc["spec"]["ports"]
    assert all(30000 <= p["nodePort"] <= 32767 for p in ports)
    assert ports[0]["nodePort"] != ports[1]["nodePort"]
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    taken = ports[0]["nodePort"]
    code, body, _ = cluster.request(
        "POST", SVCS, _svc("other", type="NodePort", ports=[{"port": 80, "nodePort": taken}])
    )
    assert code == 422
    assert _causes(body) == [
        ("spec.ports[0].nodePort", f"Invalid value: {taken}: provided port is already allocated")
    ]
    code, body, _ = cluster.request(
        "POST", SVCS, _svc("other", type="NodePort", ports=[{"port": 80, "nodePort": 40000}])
    )
    assert code == 422 and "The range of valid ports is 30000-32767" in body["message"]
    # A PUT that leaves the allocations out keeps them; a new cluster IP is refused.
    put = {**svc, "spec": {**svc["spec"], "clusterIP": None, "clusterIPs": None}}
    put["spec"]["ports"] = [{k: v for k, v in p.items() if k != "nodePort"} for p in ports]
    code, kept, _ = cluster.request("PUT", f"{SVCS}/np", put)
    assert code == 200, kept
    assert kept["spec"]["clusterIP"] == svc["spec"]["clusterIP"] and kept["spec"]["ports"] == ports
    code, body, _ = cluster.request(
        "PATCH", f"{SVCS}/np", {"spec": {"clusterIP": "10.0.0.9", "clusterIPs": None}}, content_type=MERGE
    )
    assert code == 422 and "may not change once set" in body["message"]
    # Back to ClusterIP: the node ports and the external traffic policy go.
    code, back, _ = cluster.request(
        "PATCH", f"{SVCS}/np", {"spec": {"type": "ClusterIP"}}, content_type=MERGE
    )
    assert code == 200, back
    assert all("nodePort" not in p for p in back["spec"]["ports"])
    assert "externalTrafficPolicy" not in back["spec"]
    # ... and free for another Service.
    code, body, _ = cluster.request(
        "POST", SVCS, _svc("other", type="NodePort", ports=[{"port": 80, "nodePort": taken}])
    )
    assert code == 201, body


def test_invalid_ports_and_types_are_refused_naming_each_field(cluster):
    code, body, _ = cluster.request(
        "POST",
        SVCS,
        _svc(
            "bad",
            type="Nope",
            ports=[
                {"name": "a", "port": 80},
                {"name": "a", "port": 80},
                {"name": "c", "port": 0, "protocol": "XTP"},
            ],
        ),
    )
    assert code == 422
    fields = [f for f, _ in _causes(body)]
    assert fields == [
        "spec.ports[1].name",
        "spec.ports[1]",
        "spec.ports[2].port",
        "spec.ports[2].protocol",
        "spec.ports[2].targetPort",  # defaulted to the port
        "spec.type",
    ]
    code, body, _ = cluster.request("POST", SVCS, _svc("cip", ports=[{"port": 80, "nodePort": 30001}]))
    assert code == 422
    assert _causes(body) == [
        ("spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")
    ]


def test_headless_and_external_name_services_get_no_cluster_ip(cluster):
    code, svc, _ = cluster.request("POST", SVCS, _svc("hl", clusterIP="None"))
    assert code == 201
    assert svc["spec"]["clusterIPs"] == ["None"] and svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    code, svc, _ = cluster.request("POST", SVCS, _svc("hl2", clusterIP="None", selector=None, ports=None))
    assert code == 201
    assert svc["spec"]["ipFamilyPolicy"] == "RequireDualStack" and svc["spec"]["ipFamilies"] == [
        "IPv4",
        "IPv6",
    ]
    code, svc, _ = cluster.request(
        "POST", SVCS, _svc("ext", type="ExternalName", externalName="example.com", ports=None)
    )
    assert code == 201
    assert "clusterIP" not in svc["spec"] and "ipFamilies" not in svc["spec"]
    assert "internalTrafficPolicy" not in svc["spec"]


def test_service_cidr_option(make_cluster):
    cluster = make_cluster(service_cidr="192.168.10.0/28")
    code, svc, _ = cluster.request("POST", SVCS, _svc("web"))
    assert code == 201
    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network("192.168.10.0/28")
    code, cidr, _ = cluster.request("GET", "/apis/networking.k8s.io/v1/servicecidrs/kubernetes")
    assert code == 200 and cidr["spec"]["cidrs"] == ["192.168.10.0/28"]


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_creates_and_lists_services_with_their_columns(cluster, binary):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    ok(kubectl("create", "service", "nodeport", "web", "--tcp=80:8080"))
    ok(kubectl("create", "service", "clusterip", "db", "--tcp=5432"))
    out = ok(kubectl("get", "svc", "-o", "wide"))
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    cells = {r.split()[0]: r.split() for r in rows}
    web = cluster.request("GET", f"{SVCS}/web")[1]
    assert cells["web"][1:5] == [
        "NodePort",
        web["spec"]["clusterIP"],
        "<none>",
        f"80:{web['spec']['ports'][0]['nodePort']}/TCP",
    ]
    assert cells["web"][6] == "app=web"
    assert cells["db"][1] == "ClusterIP" and cells["db"][4] == "5432/TCP"


def test_the_kubernetes_service_names_the_api_server(cluster):
    code, svc, _ = cluster.request("GET", f"{SVCS}/kubernetes")
    assert code == 200
    assert svc["spec"]["clusterIP"] == "10.0.0.1"
    assert svc["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": cluster.port}
    ]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    code, ep, _ = cluster.request("GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    assert code == 200
    assert ep["subsets"] == [
        {
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": cluster.port, "protocol": "TCP"}],
        }
    ]
    code, eps, _ = cluster.request(
        "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
    )
    assert code == 200 and eps["endpoints"][0]["addresses"] == ["127.0.0.1"]
    # A Service may not take its address.
    code, body, _ = cluster.request("POST", SVCS, _svc("x", clusterIP="10.0.0.1"))
    assert code == 422 and "already allocated" in body["message"]


def test_a_restart_on_another_port_updates_the_kubernetes_service(make_cluster):
    first = make_cluster()
    ip = first.request("GET", f"{SVCS}/kubernetes")[1]["spec"]["clusterIP"]
    first.stop()
    second = make_cluster()
    svc = second.request("GET", f"{SVCS}/kubernetes")[1]
    assert svc["spec"]["clusterIP"] == ip
    assert svc["spec"]["ports"][0]["targetPort"] == second.port
    ep = second.request("GET", "/api/v1/namespaces/default/endpoints/kubernetes")[1]
    assert ep["subsets"][0]["ports"][0]["port"] == second.port
