"""The endpoints controller (upstream ``pkg/controller/endpoint``): the Endpoints of each Service
with a selector list the IPs of the pods it selects, ready ones in ``addresses`` and the others
in ``notReadyAddresses``, with the Service's ports resolved against each pod's container ports.
A Service without a selector keeps the Endpoints its owner writes. Also what the EndpointSlice
controller shares with it: which pods a Service has, and their ports."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.controllers.controller_utils import Key, is_terminal, namespaced_key
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

#: The label of a headless Service's Endpoints and EndpointSlices.
HEADLESS = "service.kubernetes.io/headless"


def selects(service: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    selector = (service.get("spec") or {}).get("selector")
    if not isinstance(selector, dict) or not selector:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def in_endpoints(pod: Mapping[str, Any]) -> bool:
    """Whether a pod has an address to list (upstream ``ShouldPodBeInEndpoints``): it has an IP and
    has not finished."""
    return bool((pod.get("status") or {}).get("podIP")) and not is_terminal(pod)


def endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Service's ports as this pod serves them: a named target port is the container port of
    that name (a port the pod does not have is left out, as upstream's ``FindPort``)."""
    out: list[dict[str, Any]] = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = _find_port(pod, port)
        if number is None:
            continue
        ep: dict[str, Any] = {"port": number, "protocol": port.get("protocol") or "TCP"}
        if port.get("name"):
            ep = {"name": port["name"], **ep}
        if port.get("appProtocol"):
            ep["appProtocol"] = port["appProtocol"]
        out.append(ep)
    return out


def _find_port(pod: Mapping[str, Any], port: Mapping[str, Any]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str):
        if target.isdigit():
            return int(target)
        protocol = port.get("protocol") or "TCP"
        for container in (pod.get("spec") or {}).get("containers") or []:
            for cport in container.get("ports") or [] if isinstance(container, dict) else []:
                if cport.get("name") == target and (cport.get("protocol") or "TCP") == protocol:
                    return int(cport.get("containerPort", 0)) or None
    return None


def target_ref(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    return {
        "kind": "Pod",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }


def object_labels(service: Mapping[str, Any]) -> dict[str, str]:
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS] = ""
    return labels


class ServicePods:
    """What both endpoint controllers follow: Services and the pods of their namespaces. A Service
    is due when it changed or when a pod it selects (or selected) did."""

    def __init__(self, informers: InformerFactory) -> None:
        self._pods = informers.informer("Pod")
        self._services: dict[str, dict[str, Obj]] = {}  # namespace → name → Service
        self.due: dict[Key, None] = {}
        informers.informer("Service").add_handler(self._on_service)
        self._pods.add_handler(self._on_pod)

    def _on_service(self, change: Change[Any]) -> None:
        namespace, name = namespaced_key(change.obj)
        if change.type == EventType.DELETED:
            self._services.get(namespace, {}).pop(name, None)
        else:
            self._services.setdefault(namespace, {})[name] = change.obj
        self.due[(namespace, name)] = None

    def _on_pod(self, change: Change[Any]) -> None:
        namespace = str((change.obj.get("metadata") or {}).get("namespace"))
        services = self._services.get(namespace)
        if not services:
            return
        labels = (change.obj.get("metadata") or {}).get("labels") or {}
        old = ((change.old or {}).get("metadata") or {}).get("labels") or {}
        for name, svc in services.items():
            if selects(svc, labels) or (change.old is not None and selects(svc, old)):
                self.due[(namespace, name)] = None

    def pods_of(self, service: Obj) -> list[Obj]:
        namespace = str((service.get("metadata") or {}).get("namespace"))
        out = [
            p
            for p in self._pods.list_raw()
            if (p.get("metadata") or {}).get("namespace") == namespace
            and selects(service, (p.get("metadata") or {}).get("labels") or {})
        ]
        out.sort(key=lambda p: str((p.get("metadata") or {}).get("name")))
        return out

    def take_due(self) -> Iterable[Key]:
        due, self.due = self.due, {}
        return due


class EndpointsController:
    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self.services = ServicePods(informers)

    def sync(self) -> None:
        for namespace, name in self.services.take_due():
            with contextlib.suppress(Conflict, NotFound, AlreadyExists):
                self._reconcile(namespace, name)

    def _reconcile(self, namespace: str, name: str) -> None:
        svc = self.store.get("Service", namespace, name)
        old = self.store.get("Endpoints", namespace, name)
        if svc is None:
            # The Endpoints of a Service that had a selector go with it.
            if old is not None and not (old.get("metadata") or {}).get("labels", {}).get(
                "endpointslice.kubernetes.io/skip-mirror"
            ):
                self.store.delete("Endpoints", namespace, name)
            return
        if not (svc.get("spec") or {}).get("selector"):
            return
        subsets = self._subsets(svc)
        labels = object_labels(svc)
        if old is None:
            endpoints: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
            }
            if subsets:
                endpoints["subsets"] = subsets
            self.store.create(endpoints)
            return
        if (old.get("subsets") or []) == subsets and (old.get("metadata") or {}).get("labels", {}) == labels:
            return
        new = {**old, "metadata": {**old["metadata"], "labels": labels}}
        if subsets:
            new["subsets"] = subsets
        else:
            new.pop("subsets", None)
        self.store.update(new)

    def _subsets(self, svc: Obj) -> list[dict[str, Any]]:
        """One subset per set of ports, its addresses sorted by IP (upstream ``RepackSubsets``)."""
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        grouped: dict[str, tuple[list[dict[str, Any]], list[Any], list[Any]]] = {}
        for pod in self.services.pods_of(svc):
            if not in_endpoints(pod) or (
                (pod.get("metadata") or {}).get("deletionTimestamp") and not publish
            ):
                continue
            ports = endpoint_ports(svc, pod)
            if (svc.get("spec") or {}).get("ports") and not ports:
                continue
            address: dict[str, Any] = {"ip": pod["status"]["podIP"]}
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                address["nodeName"] = node
            address["targetRef"] = target_ref(pod)
            key = repr(ports)
            entry = grouped.setdefault(key, (ports, [], []))
            (entry[1] if publish or pod_ready(pod) else entry[2]).append(address)
        out = []
        for ports, ready, not_ready in grouped.values():
            subset: dict[str, Any] = {}
            if ready:
                subset["addresses"] = sorted(ready, key=lambda a: _ip_key(a["ip"]))
            if not_ready:
                subset["notReadyAddresses"] = sorted(not_ready, key=lambda a: _ip_key(a["ip"]))
            if ports:
                subset["ports"] = ports
            out.append(subset)
        return out


def _ip_key(ip: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in ip.split("."))
    except ValueError:
        return (1 << 20,)
