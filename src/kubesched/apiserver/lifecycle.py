"""What kubelets and controllers do in a real cluster, simulated as KWOK does for kube-apiserver:
nodes are Ready, a bound pod starts Running at once and, with ``kubesched.io/duration``, Succeeds
that long after; Deployments, ReplicaSets, StatefulSets and Jobs make and remove their pods."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import heapq
import logging
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from kubesched.api.annotations import ANNOTATION_DURATION
from kubesched.api.durations import parse_duration
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound, Obj
from kubesched.store.memory import format_timestamp
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

#: A simulated node's capacity unless its manifest says otherwise.
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}


def _timestamp(seconds: float | None = None) -> str:
    return format_timestamp(time.time() if seconds is None else seconds)


def _seconds(stamp: Any) -> float | None:
    try:
        return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def node_defaults(obj: dict[str, Any]) -> None:
    """A node as its kubelet would report it: Ready, with capacity and the usual labels."""
    meta = obj.setdefault("metadata", {})
    name = str(meta.get("name", ""))
    labels = meta.setdefault("labels", {})
    if isinstance(labels, dict):
        labels.setdefault("kubernetes.io/hostname", name)
        labels.setdefault("kubernetes.io/os", "linux")
        labels.setdefault("kubernetes.io/arch", "amd64")
        labels.setdefault("type", "kwok")
    status = obj.setdefault("status", {})
    if not isinstance(status, dict):
        return
    capacity = status.get("capacity") or status.get("allocatable") or dict(DEFAULT_CAPACITY)
    status.setdefault("capacity", capacity)
    status.setdefault("allocatable", capacity)
    now = _timestamp()
    if not status.get("conditions"):
        status["conditions"] = [
            {
                "type": t,
                "status": "False",
                "reason": f"KubeletHas{r}",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
            for t, r in (
                ("MemoryPressure", "SufficientMemory"),
                ("DiskPressure", "NoDiskPressure"),
                ("PIDPressure", "SufficientPID"),
            )
        ] + [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ]
    status.setdefault(
        "nodeInfo",
        {
            "architecture": "amd64",
            "bootID": "",
            "containerRuntimeVersion": "kwok://simulated",
            "kernelVersion": "simulated",
            "kubeProxyVersion": "",
            "kubeletVersion": "v1.32.0-kwok",
            "machineID": "",
            "operatingSystem": "linux",
            "osImage": "kubesched simulated node",
            "systemUUID": "",
        },
    )
    status.setdefault("phase", "Running")


def simulated_node(index: int, *, cpu: str, memory: str, pods: str, zones: int) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "1Ti"}
    name = f"node-{index}"
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"topology.kubernetes.io/zone": f"zone-{index % max(1, zones)}"},
        },
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {
                    "type": "InternalIP",
                    "address": f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}",
                },
                {"type": "Hostname", "address": name},
            ],
        },
    }
    node_defaults(obj)
    return obj


def _owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("uid") == uid for r in refs)


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _owner_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Lifecycle:
    """Runs on the server's event loop: ``tick`` does whatever became due since the last one."""

    def __init__(self, store: SqliteStore, event_ttl: float = 3600.0) -> None:
        self.store = store
        self.event_ttl = event_ttl
        self._next_event_sweep = 0.0
        self._pods = store.watch(frozenset({"Pod"}))
        self._finishing: list[tuple[float, str, str, str]] = []
        self._seen_rv = -1
        self._ip = 0
        # What an earlier run left half done: bound pods not started, terminating pods not removed.
        self._leftover = [
            (str(p["metadata"].get("namespace")), str(p["metadata"]["name"])) for p in store.list("Pod")
        ]

    def tick(self) -> None:
        self._pod_lifecycle()
        self._finish_due()
        rv = self.store.resource_version
        if rv != self._seen_rv:
            # Another pass follows whatever this one writes (a ReplicaSet's new status reaches its
            # Deployment on the next tick); a pass that writes nothing ends it.
            self._seen_rv = rv
            self._reconcile()
        now = time.time()
        if now >= self._next_event_sweep:
            self._next_event_sweep = now + 60.0
            self._expire_events(now)

    def _expire_events(self, now: float) -> None:
        """Events live for ``event_ttl`` seconds, as kube-apiserver's --event-ttl (1h) keeps them: a
        pod that stays unschedulable would otherwise add events without end."""
        for event in self.store.list("Event"):
            meta = event.get("metadata") or {}
            created = _seconds(meta.get("creationTimestamp"))
            if created is not None and now - created > self.event_ttl:
                with contextlib.suppress(NotFound):
                    self.store.delete("Event", meta.get("namespace"), str(meta.get("name")))

    # -- kubelet ---------------------------------------------------------------------------------
    def _pod_lifecycle(self) -> None:
        starting: dict[tuple[str, str], Obj] = {}
        stopping: dict[tuple[str, str], str] = {}
        for key in self._leftover:
            pod = self.store.get("Pod", key[0], key[1])
            if pod is not None and pod["metadata"].get("deletionTimestamp"):
                stopping[key] = str(pod["metadata"].get("uid"))
            elif pod is not None and (pod.get("status") or {}).get("phase") == "Running":
                self._finish_later(pod, _seconds((pod.get("status") or {}).get("startTime")))
            elif pod is not None:
                starting[key] = pod
        self._leftover = []
        for event in self._pods.drain():
            obj = event.obj
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace")), str(meta.get("name")))
            if event.type == EventType.DELETED:
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
            for (namespace, name), _ in starting.items():
                self._start(namespace, name)
            for (namespace, name), uid in stopping.items():
                pod = self.store.get("Pod", namespace, name)
                if pod is not None and pod["metadata"].get("uid") == uid:
                    with contextlib.suppress(NotFound):
                        self.store.delete("Pod", namespace, name)

    def _start(self, namespace: str, name: str) -> None:
        for _ in range(5):
            pod = self.store.get("Pod", namespace, name)
            if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                return
            if not (pod.get("spec") or {}).get("nodeName"):
                return
            now = _timestamp()
            self._ip += 1
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
                    "podIP": f"10.244.{self._ip // 256 % 256}.{self._ip % 256}",
                    "hostIP": "10.0.0.1",
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
            try:
                self.store.update({**pod, "status": status})
            except Conflict:
                continue
            except NotFound:
                return
            self._finish_later(pod, time.time())
            return

    def _finish_later(self, pod: Obj, started: float | None) -> None:
        """A pod with a duration finishes that long after it started."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_DURATION not in annotations or started is None:
            return
        try:
            seconds = parse_duration(annotations[ANNOTATION_DURATION])
        except Exception:
            return
        meta = pod["metadata"]
        entry = (started + seconds, str(meta.get("namespace")), str(meta["name"]), str(meta.get("uid")))
        heapq.heappush(self._finishing, entry)

    def _finish_due(self) -> None:
        now = time.time()
        while self._finishing and self._finishing[0][0] <= now:
            _, namespace, name, uid = heapq.heappop(self._finishing)
            for _ in range(5):
                pod = self.store.get("Pod", namespace, name)
                if pod is None or pod["metadata"].get("uid") != uid or _terminal(pod):
                    break
                stamp = _timestamp(now)
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
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": stamp}},
                    }
                    for c in status.get("containerStatuses") or []
                ]
                try:
                    self.store.update({**pod, "status": status})
                    break
                except Conflict:
                    continue

    @property
    def next_due(self) -> float | None:
        return self._finishing[0][0] if self._finishing else None

    # -- controllers -----------------------------------------------------------------------------
    def _reconcile(self) -> None:
        workloads = [
            (kind, self.store.list(kind)) for kind in ("Deployment", "ReplicaSet", "StatefulSet", "Job")
        ]
        if not any(objs for _, objs in workloads):
            return
        pods_by_owner: dict[str, list[Obj]] = {}
        for pod in self.store.list("Pod"):
            uid = _controller_uid(pod)
            if uid:
                pods_by_owner.setdefault(uid, []).append(pod)
        for kind, step in (
            ("Deployment", self._deployment),
            ("ReplicaSet", self._replicaset),
            ("StatefulSet", self._statefulset),
            ("Job", self._job),
        ):
            for obj in self.store.list(kind):
                try:
                    step(obj, pods_by_owner.get(str(obj["metadata"]["uid"]), []))
                except (Conflict, NotFound, AlreadyExists):
                    pass  # changed under us: the next pass sees the newer state
                except Exception:
                    log.exception("reconciling %s %s", kind, obj.get("metadata", {}).get("name"))

    def _write_status(self, obj: Obj, status: dict[str, Any]) -> None:
        if obj.get("status") == status:
            return
        self.store.update({**obj, "status": status})

    def _create_pod(
        self, owner: Obj, name: str, template: Mapping[str, Any], extra_labels: Mapping[str, str]
    ) -> None:
        from kubesched.apiserver.app import admit

        tmeta = template.get("metadata") or {}
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": owner["metadata"].get("namespace"),
                "labels": {**(tmeta.get("labels") or {}), **extra_labels},
                "ownerReferences": [_owner_ref(owner)],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if tmeta.get("annotations"):
            pod["metadata"]["annotations"] = dict(tmeta["annotations"])
        admit(pod)
        self.store.create(pod)

    def _deployment(self, deploy: Obj, _pods: list[Obj]) -> None:
        from kubesched.apiserver.app import admit

        spec = deploy.get("spec") or {}
        template = spec.get("template") or {}
        replicas = int(spec.get("replicas", 1))
        digest = hashlib.sha256(orjson.dumps(template, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]
        uid = str(deploy["metadata"]["uid"])
        namespace = deploy["metadata"].get("namespace")
        owned = [rs for rs in self.store.list("ReplicaSet") if _owned_by(rs, uid)]
        current = next(
            (rs for rs in owned if (rs["metadata"].get("labels") or {}).get("pod-template-hash") == digest),
            None,
        )
        if current is None:
            labels = {**((template.get("metadata") or {}).get("labels") or {}), "pod-template-hash": digest}
            tmpl = copy.deepcopy(template)
            tmpl.setdefault("metadata", {})["labels"] = labels
            rs: dict[str, Any] = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{deploy['metadata']['name']}-{digest}",
                    "namespace": namespace,
                    "labels": labels,
                    "ownerReferences": [_owner_ref(deploy)],
                    "generation": 1,
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": tmpl,
                },
            }
            admit(rs)
            current = self.store.create(rs)
        elif int((current.get("spec") or {}).get("replicas", 1)) != replicas:
            current = self.store.update({**current, "spec": {**current["spec"], "replicas": replicas}})
        for old in owned:
            if old is not current and int((old.get("spec") or {}).get("replicas", 0)) != 0:
                self.store.update({**old, "spec": {**old["spec"], "replicas": 0}})
        rs_status = current.get("status") or {}
        status = {
            "observedGeneration": deploy["metadata"].get("generation", 1),
            "replicas": rs_status.get("replicas", 0),
            "updatedReplicas": rs_status.get("replicas", 0),
            "readyReplicas": rs_status.get("readyReplicas", 0),
            "availableReplicas": rs_status.get("readyReplicas", 0),
        }
        self._write_status(deploy, status)

    def _replicaset(self, rs: Obj, pods: list[Obj]) -> None:
        spec = rs.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        live = [p for p in pods if not _terminal(p)]
        name = rs["metadata"]["name"]
        for _ in range(replicas - len(live)):
            suffix = "".join(random.choices(_ALPHABET, k=5))
            self._create_pod(rs, f"{name}-{suffix}", spec.get("template") or {}, {})
        if len(live) > replicas:
            # Unscheduled pods go first, then the newest, as the ReplicaSet controller ranks them.
            ranked = sorted(
                live,
                key=lambda p: (
                    bool((p.get("spec") or {}).get("nodeName")),
                    str(p["metadata"].get("creationTimestamp")),
                ),
            )
            for pod in ranked[: len(live) - replicas]:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"])
        ready = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
        status = {
            "replicas": min(len(live), replicas) if len(live) > replicas else len(live),
            "fullyLabeledReplicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        self._write_status(rs, status)

    def _statefulset(self, sts: Obj, pods: list[Obj]) -> None:
        spec = sts.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        name = sts["metadata"]["name"]
        have = {p["metadata"]["name"]: p for p in pods}
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            if pod_name not in have:
                self._create_pod(
                    sts,
                    pod_name,
                    spec.get("template") or {},
                    {"statefulset.kubernetes.io/pod-name": pod_name},
                )
        for pod_name, pod in have.items():
            ordinal = pod_name.rsplit("-", 1)[-1]
            if ordinal.isdigit() and int(ordinal) >= replicas:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod_name)
        ready = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        self._write_status(
            sts,
            {
                "replicas": min(len(pods), replicas),
                "readyReplicas": ready,
                "currentReplicas": min(len(pods), replicas),
                "availableReplicas": ready,
                "observedGeneration": sts["metadata"].get("generation", 1),
            },
        )

    def _job(self, job: Obj, pods: list[Obj]) -> None:
        spec = job.get("spec") or {}
        completions = int(spec.get("completions", 1) if spec.get("completions") is not None else 1)
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        active = [p for p in pods if not _terminal(p)]
        want = max(0, min(parallelism - len(active), completions - succeeded - len(active)))
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("spec", {}).setdefault("restartPolicy", "Never")
        name = job["metadata"]["name"]
        for _ in range(want):
            suffix = "".join(random.choices(_ALPHABET, k=5))
            self._create_pod(job, f"{name}-{suffix}", template, {"job-name": name})
        status: dict[str, Any] = dict(job.get("status") or {})
        status.setdefault("startTime", _timestamp())
        status.update({"active": len(active) + want, "succeeded": succeeded, "failed": failed})
        if succeeded >= completions and not status.get("completionTime"):
            now = _timestamp()
            status["completionTime"] = now
            status["conditions"] = [
                {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
            ]
        self._write_status(job, status)
