"""Typed, parsed views of the Kubernetes objects the scheduler reads.

The store keeps objects as plain Kubernetes JSON (dicts), exactly as an API server would. The
scheduler parses each one once into these views; parsing validates the fields kubesched relies on and
raises :class:`~kubesched.errors.InputError` naming the offending field.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, NamedTuple

from kubesched.api.fields import INT64_MAX, as_int, as_list, as_mapping, as_str_map, object_name, str_map_view
from kubesched.api.resource import PodResourceClaim, pod_claim_statuses, pod_resource_claims
from kubesched.api.resources import CPU, MEMORY, PODS, ResourceList, parse_resource_list, pod_requests
from kubesched.api.scheduling_groups import pod_scheduling_group
from kubesched.api.storage import PodVolume, pod_volumes
from kubesched.api.taints import Taint, Toleration
from kubesched.errors import InputError

#: kubelet's default ``maxPods``: used when a Node manifest reports no ``pods`` capacity at all.
DEFAULT_MAX_PODS = 110

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"

DEFAULT_SCHEDULER_NAME = "default-scheduler"

SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}

#: Upstream ``DefaultBindAllHostIP``: the host IP a port binds to when ``hostIP`` is empty.
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
#: Protocol of a container port that names none (upstream ``HostPortInfo.sanitize``).
DEFAULT_PROTOCOL = "TCP"
PROTOCOLS = ("TCP", "UDP", "SCTP")


class HostPort(NamedTuple):
    """A host port a container binds, sanitized like upstream ``HostPortInfo``: an empty ``hostIP``
    is ``0.0.0.0`` (every address) and an empty protocol is ``TCP``."""

    ip: str
    protocol: str
    port: int


def _container_ports(container: Mapping[str, Any], field: str) -> list[HostPort]:
    out: list[HostPort] = []
    for i, raw in enumerate(as_list(container.get("ports"), f"{field}.ports")):
        where = f"{field}.ports[{i}]"
        port = as_mapping(raw, where)
        host_port = port.get("hostPort", 0)
        if host_port is None:
            host_port = 0
        if not isinstance(host_port, int) or isinstance(host_port, bool) or not 0 <= host_port <= 65535:
            raise InputError(
                f"hostPort must be an integer from 0 to 65535, got {host_port!r}", field=f"{where}.hostPort"
            )
        protocol = port.get("protocol") or DEFAULT_PROTOCOL
        if protocol not in PROTOCOLS:
            raise InputError(
                f"protocol must be TCP, UDP or SCTP, got {protocol!r}", field=f"{where}.protocol"
            )
        host_ip = port.get("hostIP") or DEFAULT_BIND_ALL_HOST_IP
        if not isinstance(host_ip, str):
            raise InputError("hostIP must be a string", field=f"{where}.hostIP")
        if host_port > 0:
            out.append(HostPort(host_ip, str(protocol), host_port))
    return out


def _image(container: Mapping[str, Any], field: str) -> str:
    image = container.get("image") or ""
    if not isinstance(image, str):
        raise InputError(f"image must be a string, got {type(image).__name__}", field=f"{field}.image")
    return image


def _ports_and_images(spec: Mapping[str, Any]) -> tuple[tuple[HostPort, ...], tuple[str, ...]]:
    """Upstream ``GetHostPorts`` (ports with ``hostPort > 0`` of sidecars, i.e. init containers with
    ``restartPolicy: Always``, then of containers) and the image of every init container and
    container, in that order (what ImageLocality scores)."""
    ports: list[HostPort] = []
    images: list[str] = []
    for i, c in enumerate(as_list(spec.get("initContainers"), "spec.initContainers")):
        where = f"spec.initContainers[{i}]"
        c = as_mapping(c, where)
        if c.get("restartPolicy") == "Always":
            ports.extend(_container_ports(c, where))
        images.append(_image(c, where))
    for i, c in enumerate(as_list(spec.get("containers"), "spec.containers")):
        where = f"spec.containers[{i}]"
        c = as_mapping(c, where)
        ports.extend(_container_ports(c, where))
        images.append(_image(c, where))
    return tuple(ports), tuple(images)


def _gate_name(gate: Any, i: int) -> str:
    name = as_mapping(gate, f"spec.schedulingGates[{i}]").get("name")
    if not isinstance(name, str) or not name:
        raise InputError("a scheduling gate needs a name", field=f"spec.schedulingGates[{i}].name")
    return name


def _node_images(status: Mapping[str, Any]) -> dict[str, int]:
    """``status.images`` as image name → size in bytes. A name listed twice keeps its first size, as
    upstream's cache does."""
    out: dict[str, int] = {}
    for i, raw in enumerate(as_list(status.get("images"), "status.images")):
        where = f"status.images[{i}]"
        image = as_mapping(raw, where)
        size = image.get("sizeBytes", 0)
        if size is None:
            size = 0
        size = as_int(size, f"{where}.sizeBytes", minimum=0, maximum=INT64_MAX)
        for j, name in enumerate(as_list(image.get("names"), f"{where}.names")):
            if not isinstance(name, str):
                raise InputError("image names must be strings", field=f"{where}.names[{j}]")
            out.setdefault(name, size)
    return out


def object_ref(obj: Mapping[str, Any]) -> str:
    """Human reference like ``Pod default/web-1`` for error messages (best effort on bad input)."""
    kind = obj.get("kind", "?") if isinstance(obj, Mapping) else "?"
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or "<no name>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


#: The claim statuses of every pod that has none (never written to).
_NO_CLAIM_STATUSES: Mapping[str, str | None] = MappingProxyType({})


@dataclass(slots=True, eq=False)
class Pod:
    """A pod as the scheduler sees it. ``requests`` follow upstream's pod request rules."""

    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str
    node_name: str
    priority: int
    priority_class_name: str
    preemption_policy: str
    requests: ResourceList
    nonzero_cpu: int
    nonzero_memory: int
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    affinity: Mapping[str, Any]
    scheduling_gates: tuple[str, ...]
    phase: str
    creation_timestamp: str
    raw: Mapping[str, Any] = field(repr=False)
    #: Host ports the pod binds (upstream ``GetHostPorts``), sanitized.
    host_ports: tuple[HostPort, ...] = ()
    #: Images of the init containers, then of the containers, as written in the spec.
    images: tuple[str, ...] = ()
    #: ``spec.volumes``, each with the claim it uses.
    volumes: tuple[PodVolume, ...] = ()
    #: ``spec.resourceClaims``: the DRA claims the pod uses, by name or through a template.
    resource_claims: tuple[PodResourceClaim, ...] = ()
    #: ``status.resourceClaimStatuses``: pod claim name → the claim generated for it (None: none
    #: was needed). Shared and empty for a pod without claims.
    claim_statuses: Mapping[str, str | None] = field(default_factory=lambda: _NO_CLAIM_STATUSES)
    #: ``spec.schedulingGroup.podGroupName``: the scheduling.k8s.io PodGroup the pod belongs to.
    scheduling_group: str | None = None

    def __copy__(self) -> Pod:
        # A shallow copy of every field (what ``copy.copy`` gives), by one constructor call: the
        # default path through ``__reduce_ex__`` costs several times as much, and every pod the
        # scheduler assumes, binds or sees written is copied.
        return Pod(*_POD_FIELDS(self))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminated(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Pod:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        name = object_name(meta)
        containers = as_list(spec.get("containers"), "spec.containers")
        if not containers:
            raise InputError("a pod needs at least one container", field="spec.containers")
        requests, nonzero = pod_requests(spec, shared=True)
        host_ports, images = _ports_and_images(spec)
        raw_tolerations = as_list(spec.get("tolerations"), "spec.tolerations")
        tolerations = (
            tuple(Toleration.from_dict(t, f"spec.tolerations[{i}]") for i, t in enumerate(raw_tolerations))
            if raw_tolerations
            else ()
        )
        gates: tuple[str, ...] = ()
        raw_gates = as_list(spec.get("schedulingGates"), "spec.schedulingGates")
        if raw_gates:
            gates = tuple(_gate_name(gate, i) for i, gate in enumerate(raw_gates))
        priority = spec.get("priority", 0)
        if priority is None:
            priority = 0
        priority = as_int(priority, "spec.priority")
        node_name = spec.get("nodeName") or ""
        if not isinstance(node_name, str):
            raise InputError("nodeName must be a string", field="spec.nodeName")
        scheduler_name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if not isinstance(scheduler_name, str):
            raise InputError("schedulerName must be a string", field="spec.schedulerName")
        namespace = meta.get("namespace") or "default"
        if not isinstance(namespace, str):
            raise InputError("namespace must be a string", field="metadata.namespace")
        priority_class_name = spec.get("priorityClassName") or ""
        if not isinstance(priority_class_name, str):
            raise InputError("priorityClassName must be a string", field="spec.priorityClassName")
        preemption_policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
        if preemption_policy not in ("PreemptLowerPriority", "Never"):
            raise InputError(
                f"preemptionPolicy must be PreemptLowerPriority or Never, got {preemption_policy!r}",
                field="spec.preemptionPolicy",
            )
        return cls(
            namespace=namespace,
            name=name,
            uid=str(meta.get("uid") or ""),
            labels=str_map_view(meta.get("labels"), "metadata.labels"),
            annotations=str_map_view(meta.get("annotations"), "metadata.annotations"),
            scheduler_name=scheduler_name,
            node_name=node_name,
            priority=priority,
            priority_class_name=priority_class_name,
            preemption_policy=str(preemption_policy),
            requests=requests,
            nonzero_cpu=nonzero[CPU],
            nonzero_memory=nonzero[MEMORY],
            tolerations=tolerations,
            node_selector=str_map_view(spec.get("nodeSelector"), "spec.nodeSelector"),
            affinity=as_mapping(spec.get("affinity"), "spec.affinity"),
            scheduling_gates=gates,
            phase=str(status.get("phase") or "Pending"),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            raw=obj,
            host_ports=host_ports,
            images=images,
            volumes=pod_volumes(spec, name) if spec.get("volumes") else (),
            resource_claims=pod_resource_claims(spec) if spec.get("resourceClaims") else (),
            claim_statuses=(
                pod_claim_statuses(status) if status.get("resourceClaimStatuses") else _NO_CLAIM_STATUSES
            ),
            scheduling_group=pod_scheduling_group(spec) if spec.get("schedulingGroup") is not None else None,
        )


#: Every field of a Pod, in constructor order.
_POD_FIELDS = operator.attrgetter(*(f.name for f in fields(Pod)))


@dataclass(slots=True, eq=False)
class Node:
    """A node as the scheduler sees it."""

    name: str
    uid: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: ResourceList
    ready: bool
    raw: Mapping[str, Any] = field(repr=False)
    #: Images the node holds (``status.images``): every name of an image → its size in bytes.
    images: dict[str, int] = field(default_factory=dict)

    @property
    def zone_key(self) -> str:
        """Upstream ``utilnode.GetZoneKey``: region and zone; empty when neither label is set.

        The deprecated ``failure-domain.beta.kubernetes.io`` labels win when present, as upstream.
        """
        labels = self.labels
        zone = labels[BETA_ZONE_LABEL] if BETA_ZONE_LABEL in labels else labels.get(ZONE_LABEL, "")
        region = labels[BETA_REGION_LABEL] if BETA_REGION_LABEL in labels else labels.get(REGION_LABEL, "")
        if not region and not zone:
            return ""
        return f"{region}:\x00:{zone}"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Node:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        name = object_name(meta)
        labels = as_str_map(meta.get("labels"), "metadata.labels")
        taints = tuple(
            Taint.from_dict(t, f"spec.taints[{i}]")
            for i, t in enumerate(as_list(spec.get("taints"), "spec.taints"))
        )
        unschedulable = spec.get("unschedulable", False)
        if not isinstance(unschedulable, bool):
            raise InputError("unschedulable must be true or false", field="spec.unschedulable")
        capacity = parse_resource_list(status.get("capacity"), "status.capacity")
        # A hand-written manifest often gives only capacity; kubelet would report allocatable too.
        if status.get("allocatable") is not None:
            allocatable = parse_resource_list(status.get("allocatable"), "status.allocatable")
        else:
            allocatable = dict(capacity)
        if PODS not in allocatable:
            allocatable[PODS] = capacity.get(PODS, DEFAULT_MAX_PODS)
        allocatable.setdefault(CPU, 0)
        allocatable.setdefault(MEMORY, 0)
        ready = True
        for i, cond in enumerate(as_list(status.get("conditions"), "status.conditions")):
            cond = as_mapping(cond, f"status.conditions[{i}]")
            if cond.get("type") == "Ready":
                ready = cond.get("status") == "True"
        return cls(
            name=name,
            uid=str(meta.get("uid") or ""),
            labels=labels,
            taints=taints,
            unschedulable=unschedulable,
            allocatable=allocatable,
            ready=ready,
            raw=obj,
            images=_node_images(status),
        )


@dataclass(slots=True, frozen=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool
    preemption_policy: str

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PriorityClass:
        meta = as_mapping(obj.get("metadata"), "metadata")
        name = object_name(meta)
        value = obj.get("value")
        value = as_int(value, "value")
        if value > 1_000_000_000 and name not in SYSTEM_PRIORITY_CLASSES:
            raise InputError("user priority classes may not exceed 1000000000", field="value")
        gd = obj.get("globalDefault", False)
        if not isinstance(gd, bool):
            raise InputError("globalDefault must be true or false", field="globalDefault")
        policy = obj.get("preemptionPolicy") or "PreemptLowerPriority"
        if policy not in ("PreemptLowerPriority", "Never"):
            raise InputError(
                f"preemptionPolicy must be PreemptLowerPriority or Never, got {policy!r}",
                field="preemptionPolicy",
            )
        return cls(name=name, value=value, global_default=gd, preemption_policy=str(policy))
