"""A cluster's scheduling state, listed through the API and written as manifests `simulate` reads.

Every kind the scheduler follows is listed (the same discovery and paged lists as ``run``'s
reflectors, so a server that lacks a kind leaves it out with a warning). Each object keeps what a
scheduling decision reads and loses the rest:

- metadata keeps name, namespace, uid, labels, annotations (less kubectl's last-applied copy),
  ownerReferences (default spreading and gangs follow them) and creationTimestamp;
  resourceVersion, managedFields, generation, finalizers and the like go;
- a pod keeps its spec less what only its containers' processes see (env, envFrom, command, args,
  probes, lifecycle hooks, mounts, security contexts, pull secrets, DNS and host aliases) and, of its
  status, the phase, conditions, nominatedNodeName and resourceClaimStatuses; a pod that has
  finished (Succeeded or Failed) holds nothing and is left out;
- a node keeps its spec and, of its status, capacity, allocatable, conditions and images (image
  locality scores them); addresses and daemon endpoints go;
- Secrets and ConfigMaps are never listed.

With ``anonymise``, names and label values are replaced by a keyed hash, the same everywhere it
appears, so references stay intact: object names and namespaces, node names wherever a pod or
volume names one (``spec.nodeName``, ``kubernetes.io/hostname`` values, ``matchFields``), claim, owner
and queue names, PodGroup names in pods' group annotation, label values in labels and selectors, and
container images. Left as they are: label keys, values of keys in the ``kubernetes.io`` and ``k8s.io``
domains (zones, instance types, architectures) other than the hostname, the built-in namespaces
and ``system-`` priority classes, storage and device class names, CSI and DRA driver, pool and
device names, and HyperNode member regexes. Annotations are kept only where kubesched reads them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery, Getter
from kubesched.remote.reflector import PAGE_SIZE, list_pages

#: The order manifests are written in: what others refer to first.
_WRITE_ORDER = (
    "Namespace",
    "PriorityClass",
    "StorageClass",
    "CSIDriver",
    "DeviceClass",
    "Queue",
    "HyperNode",
    "Node",
    "CSINode",
    "CSIStorageCapacity",
    "ResourceSlice",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "VolumeAttachment",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "PodGroup",
    "Workload",
    POD_GROUP_STORE_KIND,
    "Pod",
)

_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_KEPT_META = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences", "creationTimestamp")
#: Container fields only the container's processes see.
_CONTAINER_DROPPED = frozenset(
    {
        "env",
        "envFrom",
        "command",
        "args",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "workingDir",
        "volumeMounts",
        "volumeDevices",
        "securityContext",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "stdin",
        "stdinOnce",
        "tty",
    }
)
_POD_SPEC_DROPPED = frozenset(
    {"ephemeralContainers", "imagePullSecrets", "dnsConfig", "hostAliases", "securityContext", "hostname"}
)
_POD_STATUS_KEPT = ("phase", "conditions", "nominatedNodeName", "resourceClaimStatuses")
_NODE_STATUS_KEPT = ("capacity", "allocatable", "conditions", "images")
_FINISHED = frozenset({"Succeeded", "Failed"})

_BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_HOSTNAME = "kubernetes.io/hostname"
#: Annotation keys kept when anonymising: the ones kubesched reads.
_READ_ANNOTATION_DOMAINS = (
    "kubesched.io/",
    "scheduling.k8s.io/",
    "scheduling.volcano.sh/",
    "volcano.sh/",
    "volume.kubernetes.io/",
    "volume.beta.kubernetes.io/",
    "pv.kubernetes.io/",
)
_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
_BUILTIN_QUEUES = frozenset({"default", "root"})
_CONFIG_KINDS = frozenset({"StorageClass", "DeviceClass", "CSIDriver"})


@dataclass
class Snapshot:
    """The listed objects, by kind, scrubbed (and anonymised when asked)."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: Finished pods left out.
    finished_pods: int = 0

    def ordered(self) -> list[tuple[str, list[dict[str, Any]]]]:
        rank = {kind: i for i, kind in enumerate(_WRITE_ORDER)}
        kinds = sorted(self.objects, key=lambda k: (rank.get(k, len(rank)), k))
        return [(kind, self.objects[kind]) for kind in kinds if self.objects[kind]]

    def count(self, kind: str) -> int:
        return len(self.objects.get(kind, ()))


async def take_snapshot(
    client: Getter,
    discovery: Discovery,
    *,
    kinds: Iterable[str] = FOLLOWED_KINDS,
    anonymiser: Anonymiser | None = None,
    page_size: int = PAGE_SIZE,
) -> Snapshot:
    """List every kind of ``kinds`` the server serves and scrub each object."""
    snap = Snapshot(warnings=list(discovery.warnings))
    for kind in kinds:
        if not discovery.has(kind):
            continue
        items, _rv = await list_pages(client, discovery.path(kind), {}, page_size, kind)
        kept: list[dict[str, Any]] = []
        for item in items:
            obj = scrub(discovery.convert(kind, item))
            if obj is None:
                snap.finished_pods += 1
                continue
            kept.append(obj)
        kept.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"].get("name") or ""))
        snap.objects[kind] = kept
    if anonymiser is not None:
        for kind, objs in snap.objects.items():
            snap.objects[kind] = [anonymiser.object(kind, obj) for obj in objs]
    return snap


# -- scrubbing -------------------------------------------------------------------------------------
def scrub(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object with only what scheduling reads; None for a pod that has finished."""
    kind = str(obj.get("kind"))
    meta = obj.get("metadata") or {}
    out_meta = {key: meta[key] for key in _KEPT_META if meta.get(key) not in (None, "", [], {})}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        out_meta["annotations"] = annotations
    else:
        out_meta.pop("annotations", None)
    out: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": kind, "metadata": out_meta}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    status = obj.get("status")
    if kind == "Pod":
        status = status or {}
        if status.get("phase") in _FINISHED:
            return None
        out["spec"] = _pod_spec(obj.get("spec") or {})
        status = {key: status[key] for key in _POD_STATUS_KEPT if key in status}
    elif kind == "Node":
        status = {key: (status or {})[key] for key in _NODE_STATUS_KEPT if key in (status or {})}
    if status:
        out["status"] = status
    return out


def _pod_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in spec.items() if key not in _POD_SPEC_DROPPED}
    for field_name in ("containers", "initContainers"):
        if field_name in out:
            out[field_name] = [
                {key: value for key, value in c.items() if key not in _CONTAINER_DROPPED}
                for c in out[field_name] or []
            ]
    return out


# -- anonymising -----------------------------------------------------------------------------------
class Anonymiser:
    """Replaces names and label values by a keyed hash: one input string, one output, everywhere."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._memo: dict[str, str] = {}

    def name(self, value: str) -> str:
        """A lowercase DNS label that starts with a letter (valid as a name and as a label value)."""
        if not value:
            return value
        found = self._memo.get(value)
        if found is None:
            digest = hmac.new(self._key, value.encode(), hashlib.sha256).hexdigest()[:12]
            found = self._memo[value] = f"x{digest}"
        return found

    def namespace(self, value: str) -> str:
        return value if value in _BUILTIN_NAMESPACES else self.name(value)

    def label_value(self, key: str, value: Any) -> Any:
        if not isinstance(value, str) or not value or _kept_label(key):
            return value
        return self.name(value)

    def object(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        name = str(meta.get("name") or "")
        if kind == "Namespace":
            meta["name"] = self.namespace(name)
        elif kind == "Queue":
            meta["name"] = self.queue(name)
        elif not _kept_name(kind, name):
            meta["name"] = self.name(name)
        if meta.get("namespace"):
            meta["namespace"] = self.namespace(str(meta["namespace"]))
        for ref in meta.get("ownerReferences") or []:
            ref["name"] = self.name(str(ref.get("name") or ""))
        if "annotations" in meta:
            annotations = {
                k: v for k, v in meta["annotations"].items() if k.startswith(_READ_ANNOTATION_DOMAINS)
            }
            if _GROUP_ANNOTATION in annotations:
                annotations[_GROUP_ANNOTATION] = self.name(str(annotations[_GROUP_ANNOTATION]))
            if _QUEUE_ANNOTATION in annotations:
                annotations[_QUEUE_ANNOTATION] = self.queue(str(annotations[_QUEUE_ANNOTATION]))
            if annotations:
                meta["annotations"] = annotations
            else:
                del meta["annotations"]
        self._labels_and_selectors(obj)
        fix = _REFERENCES.get(kind)
        if fix is not None:
            fix(self, obj)
        return obj

    def queue(self, value: str) -> str:
        return value if value in _BUILTIN_QUEUES else self.name(value)

    def _labels_and_selectors(self, node: Any) -> None:
        """Label maps, label and node selectors anywhere in the object: values of keys outside the
        Kubernetes domains, and field selectors on a node's name."""
        if isinstance(node, list):
            for item in node:
                self._labels_and_selectors(item)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key in ("labels", "matchLabels", "nodeSelector") and isinstance(value, dict):
                node[key] = {k: self.label_value(k, v) for k, v in value.items()}
            elif key == "matchExpressions" and isinstance(value, list):
                for expr in value:
                    if isinstance(expr, dict) and isinstance(expr.get("values"), list):
                        k = str(expr.get("key") or "")
                        expr["values"] = [self.label_value(k, v) for v in expr["values"]]
            elif key == "matchFields" and isinstance(value, list):
                for expr in value:
                    if isinstance(expr, dict) and isinstance(expr.get("values"), list):
                        expr["values"] = [self.name(str(v)) for v in expr["values"]]
            elif key == "namespaces" and isinstance(value, list):
                node[key] = [self.namespace(str(v)) for v in value]
            else:
                self._labels_and_selectors(value)


def _kept_name(kind: str, name: str) -> bool:
    """Cluster configuration rather than workload: built-in priority classes, storage and device
    classes, CSI drivers."""
    return (kind == "PriorityClass" and name.startswith("system-")) or kind in _CONFIG_KINDS


def _kept_label(key: str) -> bool:
    if key == _HOSTNAME:
        return False
    domain = key.split("/", 1)[0] if "/" in key else ""
    return domain.endswith(("kubernetes.io", "k8s.io"))


def _pod_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if spec.get("nodeName"):
        spec["nodeName"] = a.name(str(spec["nodeName"]))
    if status.get("nominatedNodeName"):
        status["nominatedNodeName"] = a.name(str(status["nominatedNodeName"]))
    pc = str(spec.get("priorityClassName") or "")
    if pc and not pc.startswith("system-"):
        spec["priorityClassName"] = a.name(pc)
    group = spec.get("schedulingGroup")
    if isinstance(group, dict) and group.get("podGroupName"):
        group["podGroupName"] = a.name(str(group["podGroupName"]))
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if c.get("image"):
            c["image"] = a.name(str(c["image"]))
    for volume in spec.get("volumes") or []:
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, dict) and pvc.get("claimName"):
            pvc["claimName"] = a.name(str(pvc["claimName"]))
    for claim in spec.get("resourceClaims") or []:
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if claim.get(key):
                claim[key] = a.name(str(claim[key]))
    for claim_status in status.get("resourceClaimStatuses") or []:
        if claim_status.get("resourceClaimName"):
            claim_status["resourceClaimName"] = a.name(str(claim_status["resourceClaimName"]))


def _node_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    for image in (obj.get("status") or {}).get("images") or []:
        image["names"] = [a.name(str(n)) for n in image.get("names") or []]


def _pvc_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    if spec.get("volumeName"):
        spec["volumeName"] = a.name(str(spec["volumeName"]))
    annotations = (obj["metadata"].get("annotations")) or {}
    for key in ("volume.kubernetes.io/selected-node",):
        if key in annotations:
            annotations[key] = a.name(str(annotations[key]))


def _pv_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    ref = (obj.get("spec") or {}).get("claimRef")
    if isinstance(ref, dict):
        if ref.get("name"):
            ref["name"] = a.name(str(ref["name"]))
        if ref.get("namespace"):
            ref["namespace"] = a.namespace(str(ref["namespace"]))


def _claim_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    for ref in (obj.get("status") or {}).get("reservedFor") or []:
        if ref.get("name"):
            ref["name"] = a.name(str(ref["name"]))


def _node_named_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    for holder in (obj.get("spec") or {}, obj):
        if holder.get("nodeName"):
            holder["nodeName"] = a.name(str(holder["nodeName"]))


def _pod_group_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    if spec.get("queue"):
        spec["queue"] = a.queue(str(spec["queue"]))


def _queue_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    if spec.get("parent"):
        spec["parent"] = a.queue(str(spec["parent"]))


def _hyper_node_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    for member in (obj.get("spec") or {}).get("members") or []:
        selector = member.get("selector") or {}
        exact = selector.get("exactMatch")
        if isinstance(exact, dict) and exact.get("name"):
            exact["name"] = a.name(str(exact["name"]))


def _volume_attachment_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    if spec.get("nodeName"):
        spec["nodeName"] = a.name(str(spec["nodeName"]))
    source = spec.get("source") or {}
    if source.get("persistentVolumeName"):
        source["persistentVolumeName"] = a.name(str(source["persistentVolumeName"]))


def _workload_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    ref = (obj.get("spec") or {}).get("controllerRef")
    if isinstance(ref, dict) and ref.get("name"):
        ref["name"] = a.name(str(ref["name"]))


def _scheduling_pod_group_refs(a: Anonymiser, obj: dict[str, Any]) -> None:
    ref = ((obj.get("spec") or {}).get("podGroupTemplateRef") or {}).get("workload")
    if isinstance(ref, dict) and ref.get("workloadName"):
        ref["workloadName"] = a.name(str(ref["workloadName"]))


_REFERENCES: dict[str, Callable[[Anonymiser, dict[str, Any]], None]] = {
    "Workload": _workload_refs,
    POD_GROUP_STORE_KIND: _scheduling_pod_group_refs,
    "Pod": _pod_refs,
    "Node": _node_refs,
    "PersistentVolumeClaim": _pvc_refs,
    "PersistentVolume": _pv_refs,
    "ResourceClaim": _claim_refs,
    "ResourceSlice": _node_named_refs,
    "PodGroup": _pod_group_refs,
    "Queue": _queue_refs,
    "HyperNode": _hyper_node_refs,
    "VolumeAttachment": _volume_attachment_refs,
}
