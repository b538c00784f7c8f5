"""The DaemonSet controller (upstream ``pkg/controller/daemon``): one pod on every node that should
run the DaemonSet's pod, left to the scheduler to place through a required node affinity on the
node's name (``matchFields metadata.name In [node]``), with the daemon tolerations; the pods of a
changed template replaced node by node within ``maxUnavailable`` (or surged, ``maxSurge``), and
the status counts ``kubectl rollout status ds/x`` reads."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

import orjson

from kubesched.api.selectors import NodeSelector
from kubesched.api.taints import Taint, Toleration, find_untolerated_taint
from kubesched.controllers.controller_utils import (
    OwnerController,
    controller_uid,
    create_pod,
    generate_name,
    is_terminal,
    normalized,
    owner_ref,
    safe_hash,
    write_status,
)
from kubesched.controllers.endpoints import pod_ready
from kubesched.errors import InputError
from kubesched.registry.apps.daemonset import ON_DELETE, int_or_percent
from kubesched.store.base import AlreadyExists, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

REVISION_HASH = "controller-revision-hash"
TEMPLATE_GENERATION = "pod-template-generation"

#: What upstream's ``AddOrUpdateDaemonPodTolerations`` adds to every daemon pod.
DAEMON_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
#: Added too when the pod uses the host's network.
NETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def template_hash(template: Mapping[str, Any], collisions: int = 0) -> str:
    """The ``controller-revision-hash`` of a pod template (upstream ``ComputeHash``: the template
    as Go reads it, and the collision count when there is one)."""
    raw = orjson.dumps(normalized(template), option=orjson.OPT_SORT_KEYS)
    return safe_hash(raw + (str(collisions).encode() if collisions else b""))


def revision_data(template: Mapping[str, Any]) -> dict[str, Any]:
    """What a DaemonSet's ControllerRevision keeps (upstream ``getPatch``): the template, put back
    whole (``$patch: replace``) by ``kubectl rollout undo``."""
    return {"spec": {"template": {**copy.deepcopy(dict(template)), "$patch": "replace"}}}


def daemon_pod_spec(template: Mapping[str, Any], node: str) -> dict[str, Any]:
    """The template's pod spec for ``node``: its required node affinity replaced by the node's name
    (upstream ``ReplaceDaemonSetPodNodeNameNodeAffinity``; preferred terms stay) and the daemon
    tolerations added where the pod has none of that key and effect."""
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
    tolerations = list(spec.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(NETWORK_TOLERATION)
    for toleration in wanted:
        if not any(
            t.get("key") == toleration["key"] and t.get("effect") == toleration["effect"] for t in tolerations
        ):
            tolerations.append(dict(toleration))
    spec["tolerations"] = tolerations
    return spec


def target_node(pod: Mapping[str, Any]) -> str | None:
    """The node a daemon pod is for: where it is bound, else its node-name affinity
    (upstream ``GetTargetNodeName``)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return None


def should_run(template: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet's pod belongs on ``node`` (upstream ``NodeShouldRunDaemonPod``): the
    node matches its node selector and required node affinity, and it tolerates the node's
    NoSchedule and NoExecute taints (with the daemon tolerations)."""
    meta = node.get("metadata") or {}
    name, labels = str(meta.get("name")), meta.get("labels") or {}
    spec = daemon_pod_spec(template, name)
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = (((template.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    try:
        if required and not NodeSelector.from_dict(required, "affinity").matches(name, labels):
            return False
        taints = [
            Taint.from_dict(t, f"spec.taints[{i}]")
            for i, t in enumerate((node.get("spec") or {}).get("taints") or [])
        ]
        tolerations = [
            Toleration.from_dict(t, f"spec.tolerations[{i}]")
            for i, t in enumerate(spec.get("tolerations") or [])
        ]
    except InputError:
        return False
    return find_untolerated_taint(taints, tolerations, {"NoSchedule", "NoExecute"}) is None


class DaemonSetController(OwnerController):
    kind = "DaemonSet"

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        super().__init__(store, informers)
        self._nodes = informers.informer("Node")
        self._nodes.add_handler(self._on_node)

    def _on_node(self, change: Change[Any]) -> None:
        if change.type == EventType.MODIFIED and change.old is not None:
            before, after = change.old, change.obj
            if (before.get("metadata") or {}).get("labels") == (after.get("metadata") or {}).get(
                "labels"
            ) and (before.get("spec") or {}).get("taints") == (after.get("spec") or {}).get("taints"):
                return  # only status or the like: no DaemonSet changes its mind
        for key in self._keys.values():
            self._due[key] = None

    def reconcile(self, ds: Obj, pods: list[Obj]) -> None:
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        revisions = self._revisions(ds)
        digest = self._current_revision(ds, revisions)
        generation = int(ds["metadata"].get("generation") or 1)
        nodes = sorted(self._nodes.list_raw(), key=lambda n: str(n["metadata"]["name"]))
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            node = target_node(pod)
            if node is not None and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                by_node.setdefault(node, []).append(pod)
        eligible = {str(n["metadata"]["name"]) for n in nodes if should_run(template, n)}
        for node, on_node in by_node.items():
            if node not in eligible:
                for pod in on_node:
                    self._delete(pod)  # a node that no longer should run it, or is gone
        desired = len(eligible)
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate") or {}
        max_unavailable = int_or_percent(rolling.get("maxUnavailable", 1), desired, True)
        max_surge = int_or_percent(rolling.get("maxSurge", 0), desired, True)
        unavailable = sum(
            1 for n in eligible if not any(pod_ready(p) and not is_terminal(p) for p in by_node.get(n, []))
        )
        for node in sorted(eligible):
            live = [p for p in by_node.get(node, []) if not is_terminal(p)]
            for failed in (p for p in by_node.get(node, []) if is_terminal(p)):
                self._delete(failed)  # a failed daemon pod is replaced
            new = [p for p in live if _hash_of(p) == digest]
            old = [p for p in live if _hash_of(p) != digest]
            if not live:
                self._create(ds, template, node, digest, generation)
                continue
            if len(new) > 1:
                for extra in sorted(new, key=_created)[1:]:
                    self._delete(extra)
            if not old or strategy.get("type") == ON_DELETE:
                continue
            if new:
                if any(pod_ready(p) for p in new):
                    for pod in old:
                        self._delete(pod)  # a surged pod took over
                continue
            if not any(pod_ready(p) for p in old):
                for pod in old:
                    self._delete(pod)  # not available anyway: replaced at once
            elif max_surge > 0:
                self._create(ds, template, node, digest, generation)
                max_surge -= 1
            elif unavailable < max_unavailable:
                for pod in old:
                    self._delete(pod)
                unavailable += 1
        self._truncate_history(ds, self._revisions(ds), pods, digest)
        self._write_status(ds, eligible, by_node, digest, generation)

    # -- revisions (upstream ``constructHistory``) -----------------------------------------------
    def _revisions(self, ds: Obj) -> list[Obj]:
        meta = ds["metadata"]
        return sorted(
            (
                r
                for r in self.store.list("ControllerRevision")
                if (r.get("metadata") or {}).get("namespace") == meta.get("namespace")
                and controller_uid(r) == meta.get("uid")
            ),
            key=lambda r: (int(r.get("revision") or 0), str(r["metadata"].get("name"))),
        )

    def _current_revision(self, ds: Obj, revisions: list[Obj]) -> str:
        """The hash of the DaemonSet's template, its ControllerRevision made (``<ds>-<hash>``) or,
        for an earlier template again (an undo), renumbered as the newest."""
        meta, spec = ds["metadata"], ds.get("spec") or {}
        template = spec.get("template") or {}
        data = revision_data(template)
        latest = max((int(r.get("revision") or 0) for r in revisions), default=0)
        same = [r for r in revisions if normalized(r.get("data")) == normalized(data)]
        if same:
            found = same[-1]
            if int(found.get("revision") or 0) != latest:
                found = self.store.update({**found, "revision": latest + 1})
            return str((found["metadata"].get("labels") or {}).get(REVISION_HASH) or template_hash(template))
        collisions = (ds.get("status") or {}).get("collisionCount")
        count = collisions if isinstance(collisions, int) and not isinstance(collisions, bool) else 0
        while True:
            digest = template_hash(template, count)
            name = f"{meta['name']}-{digest}"
            labels = {**((template.get("metadata") or {}).get("labels") or {}), REVISION_HASH: digest}
            revision: dict[str, Any] = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": meta.get("namespace"),
                    "labels": labels,
                    "ownerReferences": [owner_ref(ds)],
                },
                "data": data,
                "revision": latest + 1,
            }
            if meta.get("annotations"):
                revision["metadata"]["annotations"] = dict(meta["annotations"])
            try:
                self.store.create(revision)
                return digest
            except AlreadyExists:
                taken = self.store.get("ControllerRevision", meta.get("namespace"), name)
                if taken is not None and controller_uid(taken) == meta.get("uid"):
                    self.store.update({**taken, "data": data, "revision": latest + 1})
                    return digest
                count += 1  # another's revision has the name: the hash takes the collision count

    def _truncate_history(self, ds: Obj, revisions: list[Obj], pods: list[Obj], current: str) -> None:
        """Beyond ``revisionHistoryLimit``, the oldest revisions no pod runs go."""
        limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else 10
        live = {current} | {str(_hash_of(p)) for p in pods}
        history = [r for r in revisions if (r["metadata"].get("labels") or {}).get(REVISION_HASH) not in live]
        for revision in history[: max(0, len(history) - limit)]:
            with contextlib.suppress(NotFound):
                self.store.delete(
                    "ControllerRevision", revision["metadata"].get("namespace"), revision["metadata"]["name"]
                )

    def _create(self, ds: Obj, template: Mapping[str, Any], node: str, digest: str, generation: int) -> None:
        pod_template = {"metadata": template.get("metadata") or {}, "spec": daemon_pod_spec(template, node)}
        labels = {REVISION_HASH: digest, TEMPLATE_GENERATION: str(generation)}
        base = ds["metadata"]["name"]
        create_pod(self.store, ds, generate_name(base), pod_template, labels, generate_from=f"{base}-")

    def _delete(self, pod: Obj) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(NotFound):
            self.store.delete("Pod", meta.get("namespace"), meta["name"])

    def _write_status(
        self, ds: Obj, eligible: set[str], by_node: Mapping[str, list[Obj]], digest: str, generation: int
    ) -> None:
        current = ready = available = updated = misscheduled = 0
        for node, on_node in by_node.items():
            live = [p for p in on_node if not is_terminal(p)]
            if not live:
                continue
            if node not in eligible:
                misscheduled += 1
                continue
            current += 1
            newest = max(live, key=_created)
            if pod_ready(newest):
                ready += 1
                available += 1
            if _hash_of(newest) == digest:
                updated += 1
        status = dict(ds.get("status") or {})
        status.update(
            {
                "currentNumberScheduled": current,
                "numberMisscheduled": misscheduled,
                "desiredNumberScheduled": len(eligible),
                "numberReady": ready,
                "observedGeneration": generation,
                "updatedNumberScheduled": updated,
                "numberAvailable": available,
            }
        )
        if len(eligible) - available > 0:
            status["numberUnavailable"] = len(eligible) - available
        else:
            status.pop("numberUnavailable", None)
        write_status(self.store, ds, status)


def _hash_of(pod: Mapping[str, Any]) -> str | None:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH)


def _created(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("resourceVersion") or ""))
