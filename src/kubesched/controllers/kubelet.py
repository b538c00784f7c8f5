"""The simulated kubelet of every node, as KWOK plays it: a bound pod starts Running at once and,
with ``kubesched.io/duration``, Succeeds that long after; a terminating pod goes at the next tick.
Also the Node a simulated kubelet registers."""

from __future__ import annotations

import functools
import heapq
import ipaddress
import time
from typing import Any

from kubesched.api.annotations import ANNOTATION_DURATION
from kubesched.api.durations import parse_duration
from kubesched.controllers.controller_utils import Key, is_terminal, seconds, timestamp
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.controllers.nodeipam import pod_cidr
from kubesched.store.base import Conflict, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore


def simulated_node(
    index: int, *, cpu: str, memory: str, pods: str, zones: int, gpus: int = 0, gpu_model: str = ""
) -> dict[str, Any]:
    """The Node the kubelet of ``node-<index>`` registers (upstream ``initialNode``): its capacity,
    zone and addresses; the API server's admission fills in the rest. ``gpus`` cards (of
    ``gpu_model``, a ``kubesched.io/gpu-model`` label) are ``nvidia.com/gpu`` capacity, as a device
    plugin reports them."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "1Ti"}
    name = f"node-{index}"
    labels = {"topology.kubernetes.io/zone": f"zone-{index % max(1, zones)}"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        if gpu_model:
            labels["kubesched.io/gpu-model"] = gpu_model
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
        },
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                # As kind numbers its nodes: 172.18.0.2 onwards.
                {"type": "InternalIP", "address": str(ipaddress.IPv4Address("172.18.0.2") + index)},
                {"type": "Hostname", "address": name},
            ],
        },
    }
    # The node IPAM controller's /24 for it, given at once so that a large cluster starts without
    # an update of every node.
    cidr = pod_cidr(index)
    if cidr is not None:
        node["spec"] = {"podCIDR": cidr, "podCIDRs": [cidr]}
    return node


def host_ip(node: Obj | None) -> str | None:
    """A node's address pods report as ``hostIP``: its InternalIP (kubelet's ``GetNodeHostIPs``)."""
    addresses = ((node or {}).get("status") or {}).get("addresses") or []
    for kind in ("InternalIP", "ExternalIP"):
        for address in addresses:
            if isinstance(address, dict) and address.get("type") == kind and address.get("address"):
                return str(address["address"])
    return None


@functools.lru_cache(maxsize=4096)
def _pod_network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A node's pod CIDR parsed once: every pod started on the node reads it."""
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


class PodAddresses:
    """Each node's pod IPs, handed out from its pod CIDR one after the other (as the host-local
    IPAM plugin does: the network's first address is the gateway's), skipping those live pods
    hold."""

    def __init__(self) -> None:
        #: Per node, each IP in use and the uid of the pod holding it.
        self._used: dict[str, dict[str, str]] = {}
        self._last: dict[str, int] = {}

    def hold(self, node: str, ip: str, uid: str) -> None:
        self._used.setdefault(node, {})[ip] = uid

    def release(self, node: str, ip: str, uid: str) -> None:
        held = self._used.get(node, {})
        if held.get(ip) == uid:
            del held[ip]

    def next(self, node: Obj, uid: str) -> str | None:
        spec = node.get("spec") or {}
        cidr = (spec.get("podCIDRs") or [spec.get("podCIDR")])[0]
        if not cidr:
            return None
        net = _pod_network(str(cidr))
        if net is None:
            return None
        name = str(node["metadata"]["name"])
        used = self._used.setdefault(name, {})
        first = int(net.network_address) + 2
        count = min(net.num_addresses - 3, 1 << 20)
        if count <= 0:
            return None
        last = self._last.get(name, -1)
        for step in range(1, count + 1):
            offset = (last + step) % count
            ip = str(ipaddress.ip_address(first + offset))
            if ip not in used:
                self._last[name] = offset
                used[ip] = uid
                return ip
        return None


class Kubelet:
    """Starts the pods bound to a node, finishes them after their duration, removes terminating
    ones, and picks up what an earlier run of the server left half done."""

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        pods = informers.informer("Pod")
        # What an earlier run left half done: bound pods not started, terminating pods not removed.
        self._leftover = [
            (str(p["metadata"].get("namespace")), str(p["metadata"]["name"])) for p in pods.list_raw()
        ]
        self._changes: list[Change[Any]] = []
        #: Pod IPs in use per node: those of the pods that are bound and not finished.
        self.addresses = PodAddresses()
        for pod in pods.list_raw():
            self._hold(pod)
        pods.add_handler(self._changes.append, replay=False)
        #: Pods with a duration: when they finish, by namespace, name and uid.
        self._finishing: list[tuple[float, str, str, str]] = []

    def _hold(self, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        ip = (pod.get("status") or {}).get("podIP")
        if node and ip and not is_terminal(pod):
            self.addresses.hold(str(node), str(ip), str(pod["metadata"].get("uid")))

    def _release(self, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        ip = (pod.get("status") or {}).get("podIP")
        if node and ip:
            self.addresses.release(str(node), str(ip), str(pod["metadata"].get("uid")))

    @property
    def next_due(self) -> float | None:
        """When the next pod finishes."""
        return self._finishing[0][0] if self._finishing else None

    def sync(self) -> None:
        self._start_and_stop()
        self._finish_due()

    def _start_and_stop(self) -> None:
        starting: dict[Key, Obj] = {}
        stopping: dict[Key, str] = {}
        for key in self._leftover:
            pod = self.store.get("Pod", key[0], key[1])
            if pod is not None and pod["metadata"].get("deletionTimestamp"):
                stopping[key] = str(pod["metadata"].get("uid"))
            elif pod is not None and (pod.get("status") or {}).get("phase") == "Running":
                self._finish_later(pod, seconds((pod.get("status") or {}).get("startTime")))
            elif pod is not None:
                starting[key] = pod
        self._leftover = []
        changes = self._changes.copy()
        self._changes.clear()
        for change in changes:
            obj = change.obj
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace")), str(meta.get("name")))
            if change.type == EventType.DELETED or is_terminal(obj):
                self._release(obj)
            if change.type == EventType.DELETED:
                starting.pop(key, None)
                stopping.pop(key, None)
                continue
            if meta.get("deletionTimestamp"):
                # KWOK's kubelet stops containers at once: the pod goes at the next tick.
                stopping[key] = str(meta.get("uid"))
                starting.pop(key, None)
                continue
            spec, status = obj.get("spec") or {}, obj.get("status") or {}
            if spec.get("nodeName") and status.get("phase", "Pending") == "Pending":
                starting[key] = obj
        # The pods that start (or go) in one tick share one commit.
        with self.store.transaction():
            for namespace, name in starting:
                self._start(namespace, name)
            for (namespace, name), uid in stopping.items():
                pod = self.store.get("Pod", namespace, name)
                if pod is not None and pod["metadata"].get("uid") == uid:
                    # The kubelet's final delete goes through the API as any other: the garbage
                    # collector takes what the pod owned with it.
                    delete_cascading(self.store, "Pod", namespace, name, "Background")

    def _start(self, namespace: str, name: str) -> None:
        for _ in range(5):
            pod = self.store.get("Pod", namespace, name)
            if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                return
            if not (pod.get("spec") or {}).get("nodeName"):
                return
            now = timestamp()
            node = self.store.get("Node", None, str(pod["spec"]["nodeName"]))
            status = dict(pod.get("status") or {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
            conditions += [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("Initialized", "Ready", "ContainersReady")
            ]
            status.update(
                {
                    "phase": "Running",
                    "conditions": conditions,
                    "startTime": now,
                    "containerStatuses": [
                        {
                            "name": c.get("name"),
                            "image": c.get("image"),
                            "imageID": "",
                            "ready": True,
                            "started": True,
                            "restartCount": 0,
                            "state": {"running": {"startedAt": now}},
                        }
                        for c in (pod.get("spec") or {}).get("containers") or []
                        if isinstance(c, dict)
                    ],
                }
            )
            host = host_ip(node)
            if host is not None:
                status["hostIP"] = host
                status["hostIPs"] = [{"ip": host}]
            uid = str(pod["metadata"].get("uid"))
            ip = self.addresses.next(node, uid) if node is not None else None
            if ip is not None:
                status["podIP"] = ip
                status["podIPs"] = [{"ip": ip}]
            try:
                self.store.update({**pod, "status": status})
            except (Conflict, NotFound) as exc:
                if ip is not None:
                    self.addresses.release(str(pod["spec"]["nodeName"]), ip, uid)
                if isinstance(exc, Conflict):
                    continue
                return
            self._finish_later(pod, time.time())
            return

    def _finish_later(self, pod: Obj, started: float | None) -> None:
        """A pod with a duration finishes that long after it started."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_DURATION not in annotations or started is None:
            return
        try:
            duration = parse_duration(annotations[ANNOTATION_DURATION])
        except Exception:
            return
        meta = pod["metadata"]
        entry = (started + duration, str(meta.get("namespace")), str(meta["name"]), str(meta.get("uid")))
        heapq.heappush(self._finishing, entry)

    def _finish_due(self) -> None:
        now = time.time()
        while self._finishing and self._finishing[0][0] <= now:
            _, namespace, name, uid = heapq.heappop(self._finishing)
            for _ in range(5):
                pod = self.store.get("Pod", namespace, name)
                if pod is None or pod["metadata"].get("uid") != uid or is_terminal(pod):
                    break
                stamp = timestamp(now)
                status = dict(pod.get("status") or {})
                status["phase"] = "Succeeded"
                status["conditions"] = [
                    {**c, "status": "False", "reason": "PodCompleted", "lastTransitionTime": stamp}
                    if c.get("type") in ("Ready", "ContainersReady")
                    else c
                    for c in status.get("conditions") or []
                ]
                status["containerStatuses"] = [
                    {
                        **c,
                        "ready": False,
                        "started": False,
                        "state": {"terminated": _terminated(c, stamp)},
                    }
                    for c in status.get("containerStatuses") or []
                ]
                try:
                    self.store.update({**pod, "status": status})
                    break
                except Conflict:
                    continue


def _terminated(container_status: dict[str, Any], finished: str) -> dict[str, Any]:
    """A container's state once it completed: kubelet keeps when it started beside when it ended."""
    state: dict[str, Any] = {"exitCode": 0, "reason": "Completed"}
    started = ((container_status.get("state") or {}).get("running") or {}).get("startedAt")
    if started:
        state["startedAt"] = started
    state["finishedAt"] = finished
    return state
