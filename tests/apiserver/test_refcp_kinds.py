"""Side by side with kube-apiserver and kube-controller-manager v1.20.2 (``../shared/refcp``): the
Service defaults, allocations and refusals get the same answers. Skipped unless refcp is built."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
from tests.apiserver.kubectls import until
from tests.apiserver.test_refcp_kubectl import _Client, _status
from tests.remote.refcp import RefCluster, needs_refcp

pytestmark = needs_refcp

SVCS = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Client]:
    ref = RefCluster(tmp_path_factory.mktemp("refcp"), ("--controller-manager",))
    try:
        yield _Client(int(urlparse(ref.url).port or 443), ref.token, ref.ca)
    finally:
        ref.stop()


def _svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"app": name})
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


#: What v1.20 has of a Service's spec (IP families and traffic policies came later).
_COMPARED = ("type", "sessionAffinity", "ports", "selector", "externalTrafficPolicy", "externalName")


def _service_scenario(server: Any) -> list[Any]:
    out: list[Any] = []

    def created(result: tuple[int, Any, dict[str, str]]) -> dict[str, Any]:
        code, body, _ = result
        spec = dict(body.get("spec") or {}) if code == 201 else {}
        ports = [
            {k: v for k, v in p.items() if k != "nodePort" or v == 30080} for p in spec.get("ports") or []
        ]
        node_ports = [30000 <= p.get("nodePort", 0) <= 32767 for p in spec.get("ports") or []]
        ip = spec.get("clusterIP")
        in_range = ip not in (None, "None") and ipaddress.ip_address(ip) in ipaddress.ip_network(
            "10.0.0.0/24"
        )
        out.append((code, {k: spec.get(k) for k in _COMPARED} | {"ports": ports}, node_ports, in_range or ip))
        return body

    created(server.request("POST", SVCS, _svc("plain")))
    np = created(
        server.request(
            "POST",
            SVCS,
            _svc(
                "np",
                type="NodePort",
                ports=[
                    {"name": "http", "port": 80, "targetPort": "web", "nodePort": 30080},
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                ],
            ),
        )
    )
    created(server.request("POST", SVCS, _svc("fixed", clusterIP="10.0.0.200")))
    created(server.request("POST", SVCS, _svc("headless", clusterIP="None")))
    created(
        server.request("POST", SVCS, _svc("ext", type="ExternalName", externalName="example.com", ports=None))
    )
    created(server.request("POST", SVCS, _svc("aff", sessionAffinity="ClientIP")))
    taken = np["spec"]["ports"][0]["nodePort"]
    refusals = [
        _svc("two", ports=[{"port": 80}, {"name": "b", "port": 81}]),
        _svc("dup", ports=[{"name": "a", "port": 80}, {"name": "a", "port": 80}]),
        _svc("bad", type="Nope", ports=[{"name": "c", "port": 0, "protocol": "XTP"}]),
        _svc("cip", ports=[{"port": 80, "nodePort": 30001}]),
        _svc("notip", clusterIP="nope"),
        _svc("npt", type="NodePort", ports=[{"port": 80, "nodePort": taken}]),
        _svc("npr", type="NodePort", ports=[{"port": 80, "nodePort": 40000}]),
        _svc(
            "nodup",
            type="NodePort",
            ports=[
                {"name": "a", "port": 80, "nodePort": 30500},
                {"name": "b", "port": 81, "nodePort": 30500},
            ],
        ),
        _svc("extnone", type="ExternalName", ports=None),
        _svc("noports", ports=None),
    ]
    for body in refusals:
        out.append(_status(server.request("POST", SVCS, body)))
    # v1.23 reworded the allocator's refusals ("failed to allocate IP 10.0.0.200: provided IP is
    # already allocated"); the codes and fields compare.
    for body in (_svc("taken", clusterIP="10.0.0.200"), _svc("far", clusterIP="10.9.0.5")):
        code, status, _ = server.request("POST", SVCS, body)
        out.append((code, status["reason"], [c["field"] for c in status["details"]["causes"]]))
    out.append(
        _status(
            server.request(
                "PATCH", f"{SVCS}/fixed", {"spec": {"clusterIP": "10.0.0.201"}}, content_type=MERGE
            ),
            message=False,
        )
    )
    # (A PUT that leaves the allocations out keeps them since v1.23; v1.20 refuses it.)
    code, back, _ = server.request("PATCH", f"{SVCS}/np", {"spec": {"type": "ClusterIP"}}, content_type=MERGE)
    out.append(
        (code, [p.get("nodePort") for p in back["spec"]["ports"]], back["spec"].get("externalTrafficPolicy"))
    )
    return out


def test_services_as_kube_apiserver(reference, make_cluster):
    ours = make_cluster(nodes=1)
    theirs, mine = _service_scenario(reference), _service_scenario(ours)
    for i, (want, got) in enumerate(zip(theirs, mine, strict=True)):
        assert got == want, f"answer {i}: kube-apiserver {want!r}, kubesched {got!r}"


DSS = "/apis/apps/v1/namespaces/default/daemonsets"


def _ds(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "agent:1"}]},
            },
            **spec,
        },
    }


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _daemonset_scenario(server: Any) -> list[Any]:
    out: list[Any] = []
    for name in ("ds-a", "ds-b"):
        server.request("POST", "/api/v1/nodes", _node(name))
    code, ds, _ = server.request("POST", DSS, _ds("agent"))
    rolling = ds["spec"]["updateStrategy"]["rollingUpdate"]
    # maxSurge came with v1.21.
    out.append(
        (
            code,
            ds["spec"]["updateStrategy"]["type"],
            rolling["maxUnavailable"],
            ds["spec"]["revisionHistoryLimit"],
        )
    )
    bad = _ds("bad", updateStrategy={"type": "Sometimes"})
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    out.append(_status(server.request("POST", DSS, bad), message=False))
    out.append(
        _status(
            server.request("POST", DSS, {**_ds("nosel"), "spec": {**_ds("nosel")["spec"], "selector": {}}})
        )
    )

    def pods() -> list[Any]:
        items = server.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dagent")[1]["items"]
        return items if len(items) == 2 else []

    def revisions() -> list[Any]:
        items = server.request("GET", "/apis/apps/v1/namespaces/default/controllerrevisions")[1]["items"]
        return [r for r in items if r["metadata"]["name"].startswith("agent-")]

    (revision,) = until(revisions, timeout=30)
    template = revision["data"]["spec"]["template"]
    out.append(
        (
            revision["revision"],
            template["$patch"],
            template["spec"]["containers"][0]["image"],
            sorted(revision["metadata"]["labels"]),
            revision["metadata"]["name"]
            == f"agent-{revision['metadata']['labels']['controller-revision-hash']}",
            [(r["kind"], r["controller"]) for r in revision["metadata"]["ownerReferences"]],
        )
    )
    found = until(pods, timeout=30)
    assert found, "no daemon pods"
    for pod in sorted(
        found,
        key=lambda p: p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchFields"][0]["values"][0],
    ):
        spec = pod["spec"]
        out.append(
            (
                spec["affinity"],
                sorted((t["key"], t.get("operator"), t["effect"]) for t in spec["tolerations"]),
                sorted(pod["metadata"]["labels"]),
                pod["metadata"]["labels"]["pod-template-generation"],
                pod["metadata"]["generateName"],
                [
                    (r["kind"], r["controller"], r["blockOwnerDeletion"])
                    for r in pod["metadata"]["ownerReferences"]
                ],
            )
        )
    return out


def test_daemonsets_as_kube_apiserver_and_controller_manager(reference, make_cluster):
    ours = make_cluster()
    theirs, mine = _daemonset_scenario(reference), _daemonset_scenario(ours)
    for i, (want, got) in enumerate(zip(theirs, mine, strict=True)):
        assert got == want, f"answer {i}: kube-apiserver {want!r}, kubesched {got!r}"
