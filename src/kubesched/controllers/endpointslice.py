"""The EndpointSlice controller (upstream ``pkg/controller/endpointslice``): the pods a Service with
a selector has, as EndpointSlices of up to 100 endpoints each, one group of slices per set of
resolved ports, labelled with the Service's name and owned by it. Unlike Endpoints, terminating
pods stay listed (``ready`` false, ``terminating`` true)."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.controllers.controller_utils import generate_name, owner_ref
from kubesched.controllers.endpoints import (
    ServicePods,
    endpoint_ports,
    in_endpoints,
    object_labels,
    pod_ready,
    target_ref,
)
from kubesched.store.base import AlreadyExists, Conflict, NotFound, Obj
from kubesched.store.informers import InformerFactory
from kubesched.store.sqlite import SqliteStore

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
#: kube-controller-manager's ``--max-endpoints-per-slice``.
MAX_PER_SLICE = 100
ZONE = "topology.kubernetes.io/zone"


class EndpointSliceController:
    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self.services = ServicePods(informers)

    def sync(self) -> None:
        for namespace, name in self.services.take_due():
            with contextlib.suppress(Conflict, NotFound, AlreadyExists):
                self._reconcile(namespace, name)

    def _owned(self, namespace: str, name: str) -> list[Obj]:
        return sorted(
            (
                s
                for s in self.store.list("EndpointSlice")
                if (s.get("metadata") or {}).get("namespace") == namespace
                and ((s.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME) == name
                and ((s.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) == CONTROLLER
            ),
            key=lambda s: str(s["metadata"]["name"]),
        )

    def _reconcile(self, namespace: str, name: str) -> None:
        svc = self.store.get("Service", namespace, name)
        owned = self._owned(namespace, name)
        if svc is None or not (svc.get("spec") or {}).get("selector"):
            for stale in owned:
                self.store.delete("EndpointSlice", namespace, stale["metadata"]["name"])
            return
        wanted = self._slices(svc)
        labels = {**object_labels(svc), SERVICE_NAME: name, MANAGED_BY: CONTROLLER}
        for i, (ports, endpoints) in enumerate(wanted):
            body = {"addressType": "IPv4", "endpoints": endpoints, "ports": ports}
            if i < len(owned):
                old = owned[i]
                if {k: old.get(k) for k in body} == body and old["metadata"].get("labels") == labels:
                    continue
                self.store.update({**old, **body, "metadata": {**old["metadata"], "labels": labels}})
            else:
                self.store.create(
                    {
                        "apiVersion": "discovery.k8s.io/v1",
                        "kind": "EndpointSlice",
                        "metadata": {
                            "name": generate_name(name),
                            "generateName": f"{name}-",
                            "namespace": namespace,
                            "labels": labels,
                            "ownerReferences": [owner_ref(svc)],
                        },
                        **body,
                    }
                )
        for stale in owned[len(wanted) :]:
            self.store.delete("EndpointSlice", namespace, stale["metadata"]["name"])

    def _slices(self, svc: Obj) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """(ports, endpoints) of each slice; a Service with no pods has one empty slice."""
        groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for pod in self.services.pods_of(svc):
            if not in_endpoints(pod):
                continue
            # A slice's port always has a name, "" when the Service's has none (a pointer upstream,
            # which kubectl describe reads without a check).
            ports = [{"name": "", **p} for p in endpoint_ports(svc, pod)]
            if (svc.get("spec") or {}).get("ports") and not ports:
                continue
            groups.setdefault(repr(ports), (ports, []))[1].append(self._endpoint(pod))
        if not groups:
            return [([], [])]
        out = []
        for ports, endpoints in groups.values():
            endpoints.sort(key=lambda e: e["addresses"][0])
            for start in range(0, len(endpoints), MAX_PER_SLICE):
                out.append((ports, endpoints[start : start + MAX_PER_SLICE]))
        return out

    def _endpoint(self, pod: Obj) -> dict[str, Any]:
        terminating = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        ready = pod_ready(pod)
        endpoint: dict[str, Any] = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
            "targetRef": target_ref(pod),
        }
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            endpoint["nodeName"] = node_name
            node = self.store.get("Node", None, str(node_name))
            zone = (((node or {}).get("metadata") or {}).get("labels") or {}).get(ZONE)
            if zone:
                endpoint["zone"] = zone
        return endpoint
