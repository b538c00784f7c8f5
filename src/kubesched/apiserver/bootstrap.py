"""What kube-apiserver keeps in the cluster about itself (upstream
``pkg/controlplane/controller/kubernetesservice`` and the endpoint reconciler): the ``kubernetes``
Service in ``default`` with the first address of the service CIDR, and its Endpoints and
EndpointSlice naming the address and port the API listens on. Made at start, and brought up to
date when the port changed since the last start."""

from __future__ import annotations

import ipaddress
from typing import Any

from kubesched.registry.core import service
from kubesched.registry.core.servicealloc import first_address, service_cidrs
from kubesched.store.base import ClusterStore, Obj

NAME = "kubernetes"
NAMESPACE = "default"


def reconcile(store: ClusterStore, address: str, port: int) -> None:
    """The ``kubernetes`` Service, Endpoints and EndpointSlice for an API at ``address:port``."""
    _service(store, port)
    family = ipaddress.ip_address(address).version
    ports = [{"name": "https", "port": port, "protocol": "TCP"}]
    _put(
        store,
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [{"addresses": [{"ip": address}], "ports": ports}],
        },
    )
    _put(
        store,
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {"kubernetes.io/service-name": NAME},
            },
            "addressType": "IPv4" if family == 4 else "IPv6",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": ports,
        },
    )


def _service(store: ClusterStore, port: int) -> None:
    svc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    }
    old = store.get("Service", NAMESPACE, NAME)
    if old is None:
        svc["spec"]["clusterIP"] = first_address(service_cidrs(store)[0])
        service.STRATEGY.defaults(svc)
        service.STRATEGY.allocate(store, None, svc)
        store.create(svc)
        return
    if (old.get("spec") or {}).get("ports") == svc["spec"]["ports"]:
        return
    new = {**old, "spec": {**(old.get("spec") or {}), "ports": svc["spec"]["ports"]}}
    service.STRATEGY.allocate(store, old, new)
    store.update(new)


def _put(store: ClusterStore, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    old: Obj | None = store.get(obj["kind"], meta["namespace"], meta["name"])
    if old is None:
        store.create(obj)
        return
    new = {**old, **{k: v for k, v in obj.items() if k != "metadata"}}
    new["metadata"] = {**old["metadata"], "labels": meta["labels"]}
    if new != old:
        store.update(new)
