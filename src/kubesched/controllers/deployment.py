"""The Deployment controller (upstream ``pkg/controller/deployment``).

A Deployment keeps one ReplicaSet per pod template. The ReplicaSet whose template equals the
Deployment's (but for the ``pod-template-hash`` label) is the new one; it is named after a hash of
the template and carries the revision (``deployment.kubernetes.io/revision``, one more than any old
ReplicaSet's), the Deployment's own annotations (``kubernetes.io/change-cause`` among them) and the
replica counts of the rollout. A template that returns to an earlier one (``kubectl rollout undo``
patches the Deployment back to an old ReplicaSet's template) makes that ReplicaSet the new one again
under the next revision, its earlier revisions kept in ``deployment.kubernetes.io/revision-history``.

Rollouts follow the strategy: ``RollingUpdate`` scales the new ReplicaSet up within ``maxSurge``
and old ones down while ``maxUnavailable`` allows; ``Recreate`` scales old ones to zero and starts
the new one once their pods are gone. A complete rollout removes old, empty ReplicaSets beyond
``revisionHistoryLimit``. The status (replica counts, ``Available`` and ``Progressing`` conditions)
is computed from the ReplicaSets as upstream's ``calculateStatus`` and ``syncRolloutStatus`` do."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kubesched.controllers.controller_utils import (
    OwnerController,
    controller_uid,
    normalized,
    owner_ref,
    safe_hash,
    timestamp,
)
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.registry.admission import apply_defaults
from kubesched.store.base import AlreadyExists, Obj

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
CHANGE_CAUSE = "kubernetes.io/change-cause"
HASH_LABEL = "pod-template-hash"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: The Deployment's annotations that are its own, never copied to its ReplicaSets.
SKIPPED_ANNOTATIONS = frozenset(
    {
        LAST_APPLIED,
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
#: Upstream keeps the revision history annotation under this many characters.
_MAX_HISTORY_CHARS = 2000
_REPORTER = "deployment-controller"


def template_without_hash(template: Mapping[str, Any]) -> Any:
    tmpl = normalized(template)
    labels = (tmpl.get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and HASH_LABEL in labels:
        labels = {k: v for k, v in labels.items() if k != HASH_LABEL}
        meta = {**tmpl["metadata"], "labels": labels}
        if not labels:
            del meta["labels"]
        tmpl = {**tmpl, "metadata": meta} if meta else {k: v for k, v in tmpl.items() if k != "metadata"}
    return tmpl


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Upstream ``EqualIgnoreHash``: the templates are equal but for their pod-template-hash label."""
    return bool(template_without_hash(a) == template_without_hash(b))


def template_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """Upstream ``ComputeHash``: the template's hash, with the collision count when there is one."""
    data = orjson.dumps(template_without_hash(template), option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += str(collision_count).encode()
    return safe_hash(data)


def revision(obj: Mapping[str, Any]) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """Upstream ``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return 0


def _replicas(obj: Mapping[str, Any]) -> int:
    return _int((obj.get("spec") or {}).get("replicas"), 1)


def _status(obj: Mapping[str, Any], field: str) -> int:
    return _int((obj.get("status") or {}).get(field), 0)


def is_rolling(deploy: Mapping[str, Any]) -> bool:
    strategy = (deploy.get("spec") or {}).get("strategy") or {}
    return bool(strategy.get("type", "RollingUpdate") != "Recreate")


def fenceposts(deploy: Mapping[str, Any]) -> tuple[int, int]:
    """Upstream ``ResolveFenceposts``: (maxSurge, maxUnavailable) for the desired replicas; both
    zero means one unavailable."""
    rolling = ((deploy.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = _replicas(deploy)
    surge = _scaled(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(deploy: Mapping[str, Any]) -> int:
    return fenceposts(deploy)[0] if is_rolling(deploy) else 0


def max_unavailable(deploy: Mapping[str, Any]) -> int:
    desired = _replicas(deploy)
    if not is_rolling(deploy) or desired == 0:
        return 0
    return min(fenceposts(deploy)[1], desired)


def _created(rs: Mapping[str, Any]) -> tuple[str, str]:
    meta = rs.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


def _condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def _set_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str) -> None:
    """Upstream ``SetDeploymentCondition``: the same status and reason leave the condition as it is;
    the same status keeps its transition time."""
    now = timestamp()
    current = _condition(status, kind)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return
    cond = {
        "type": kind,
        "status": value,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }
    if current is not None and current.get("status") == value:
        cond["lastTransitionTime"] = current.get("lastTransitionTime", now)
    status["conditions"] = [
        c for c in status.get("conditions") or [] if not (isinstance(c, dict) and c.get("type") == kind)
    ] + [cond]


class DeploymentController(OwnerController):
    kind = "Deployment"
    dependent_kind = "ReplicaSet"

    def owners_of(self, dependent: Obj) -> Iterable[str]:
        uid = controller_uid(dependent)
        return (uid,) if uid else ()

    def reconcile(self, deploy: Obj, owned: list[Obj]) -> None:
        if (deploy.get("metadata") or {}).get("deletionTimestamp"):
            return
        spec = deploy.get("spec") or {}
        rs_list = sorted(owned, key=_created)
        new_rs = next(
            (
                rs
                for rs in rs_list
                if equal_ignore_hash(rs["spec"].get("template") or {}, spec.get("template") or {})
            ),
            None,
        )
        old_rss = [rs for rs in rs_list if rs is not new_rs]
        paused = bool(spec.get("paused"))
        # Upstream's syncDeployment: a paused Deployment and a scaling event are synced without a
        # new ReplicaSet; only a rollout makes one.
        new_rs, deploy = self._sync_new(deploy, new_rs, old_rss, create=False)
        if paused or self._is_scaling_event(deploy, new_rs, old_rss):
            self._scale(deploy, new_rs, old_rss)
            if paused:
                self._cleanup(deploy, old_rss)
            self._sync_status(deploy, new_rs, old_rss, rollout=False)
            return
        if new_rs is None:
            new_rs, deploy = self._sync_new(deploy, None, old_rss, create=True)
            if new_rs is None:
                return  # a collision was counted: the next pass makes it under another name
        assert new_rs is not None
        if is_rolling(deploy):
            changed = self._reconcile_new(deploy, new_rs, old_rss) or self._reconcile_old(
                deploy, new_rs, old_rss
            )
        else:
            changed = self._recreate(deploy, new_rs, old_rss)
        new_rs = self.store.get("ReplicaSet", *_key(new_rs)) or new_rs
        old_rss = [self.store.get("ReplicaSet", *_key(rs)) or rs for rs in old_rss]
        if not changed and self._complete(deploy, self._calculate(deploy, new_rs, old_rss)):
            self._cleanup(deploy, old_rss)
        self._sync_status(deploy, new_rs, old_rss, rollout=True)

    # -- the new ReplicaSet ----------------------------------------------------------------------
    def _sync_new(
        self, deploy: Obj, existing: Obj | None, old_rss: list[Obj], *, create: bool
    ) -> tuple[Obj | None, Obj]:
        """Upstream ``getNewReplicaSet``: the new ReplicaSet with its revision and annotations up to
        date (made when missing and ``create``), and the Deployment with the same revision."""
        new_revision = max((revision(rs) for rs in old_rss), default=0) + 1
        meta = deploy["metadata"]
        status = dict(deploy.get("status") or {})
        if existing is not None:
            found: dict[str, Any] = copy.deepcopy(dict(existing))
            changed = self._annotate(deploy, found, new_revision, exists=True)
            min_ready = (deploy.get("spec") or {}).get("minReadySeconds")
            if found["spec"].get("minReadySeconds") != min_ready:
                if min_ready is None:
                    found["spec"].pop("minReadySeconds", None)
                else:
                    found["spec"]["minReadySeconds"] = min_ready
                changed = True
            if changed:
                found = dict(self.store.update(found))
            annotations = dict(meta.get("annotations") or {})
            deploy_changed = annotations.get(REVISION) != found["metadata"]["annotations"][REVISION]
            annotations[REVISION] = found["metadata"]["annotations"][REVISION]
            if _condition(status, "Progressing") is None and self._has_deadline(deploy):
                _set_condition(
                    status,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    f'Found new replica set "{found["metadata"]["name"]}"',
                )
                deploy_changed = True
            if deploy_changed:
                deploy = self.store.update(
                    {**deploy, "metadata": {**meta, "annotations": annotations}, "status": status}
                )
            return found, deploy
        if not create:
            return None, deploy
        spec = deploy.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        collisions = status.get("collisionCount")
        digest = template_hash(template, collisions if isinstance(collisions, int) else None)
        tmeta = template.setdefault("metadata", {})
        labels = {**(tmeta.get("labels") or {}), HASH_LABEL: digest}
        tmeta["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
        rs_spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
        if spec.get("minReadySeconds") is not None:
            rs_spec["minReadySeconds"] = spec["minReadySeconds"]
        rs: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{digest}",
                "namespace": meta.get("namespace"),
                "labels": dict(labels),
                "ownerReferences": [owner_ref(deploy)],
                "generation": 1,
            },
            "spec": rs_spec,
        }
        replicas = self._new_replicas(deploy, [*old_rss, rs], rs)
        rs_spec["replicas"] = replicas
        self._annotate(deploy, rs, new_revision, exists=False)
        apply_defaults(rs)
        try:
            created = self.store.create(rs)
        except AlreadyExists:
            taken = self.store.get("ReplicaSet", meta.get("namespace"), rs["metadata"]["name"])
            if (
                taken is not None
                and controller_uid(taken) == meta.get("uid")
                and equal_ignore_hash(taken["spec"].get("template") or {}, spec.get("template") or {})
            ):
                return taken, deploy
            # Another object holds the name: the next hash is taken with a higher collision count.
            status["collisionCount"] = (collisions if isinstance(collisions, int) else 0) + 1
            self.store.update({**deploy, "status": status})
            return None, deploy
        if replicas > 0:
            self._event(deploy, f"Scaled up replica set {created['metadata']['name']} to {replicas}")
        annotations = {**(meta.get("annotations") or {}), REVISION: str(new_revision)}
        if self._has_deadline(deploy):
            _set_condition(
                status,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                f'Created new replica set "{created["metadata"]["name"]}"',
            )
        deploy = self.store.update(
            {**deploy, "metadata": {**meta, "annotations": annotations}, "status": status}
        )
        return created, deploy

    def _annotate(self, deploy: Obj, rs: dict[str, Any], new_revision: int, *, exists: bool) -> bool:
        """Upstream ``SetNewReplicaSetAnnotations``: the Deployment's own annotations are copied, the
        revision moves up (a ReplicaSet taken up again keeps its earlier revisions in the history)."""
        annotations = dict(rs["metadata"].get("annotations") or {})
        before = dict(annotations)
        for key, value in ((deploy.get("metadata") or {}).get("annotations") or {}).items():
            if key not in SKIPPED_ANNOTATIONS:
                annotations[key] = value
        old = annotations.get(REVISION)
        if revision(rs) < new_revision:
            annotations[REVISION] = str(new_revision)
            if old is not None:
                history = annotations.get(REVISION_HISTORY)
                if not history:
                    annotations[REVISION_HISTORY] = old
                else:
                    revisions = history.split(",")
                    while revisions and len(",".join(revisions)) + len(old) + 1 > _MAX_HISTORY_CHARS:
                        revisions.pop(0)
                    annotations[REVISION_HISTORY] = ",".join([*revisions, old])
        if not exists:
            desired = _replicas(deploy)
            annotations[DESIRED_REPLICAS] = str(desired)
            annotations[MAX_REPLICAS] = str(desired + max_surge(deploy))
        rs["metadata"]["annotations"] = annotations
        return annotations != before

    def _new_replicas(self, deploy: Obj, all_rss: list[Obj], new_rs: Obj) -> int:
        """Upstream ``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
        desired = _replicas(deploy)
        if not is_rolling(deploy):
            return desired
        current = sum(_replicas(rs) for rs in all_rss)
        most = desired + max_surge(deploy)
        if current >= most:
            return _replicas(new_rs)
        return _replicas(new_rs) + min(most - current, max(0, desired - _replicas(new_rs)))

    # -- scaling ---------------------------------------------------------------------------------
    def _scale_rs(self, deploy: Obj, rs: Obj, replicas: int) -> bool:
        """Upstream ``scaleReplicaSet``: the new size and the Deployment's replica annotations."""
        desired = _replicas(deploy)
        annotations = dict(rs["metadata"].get("annotations") or {})
        wanted = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(desired + max_surge(deploy))}
        was = _replicas(rs)
        if was == replicas and all(annotations.get(k) == v for k, v in wanted.items()):
            return False
        annotations.update(wanted)
        self.store.update(
            {
                **rs,
                "metadata": {**rs["metadata"], "annotations": annotations},
                "spec": {**rs["spec"], "replicas": replicas},
            }
        )
        if was != replicas:
            way = "up" if replicas > was else "down"
            self._event(deploy, f"Scaled {way} replica set {rs['metadata']['name']} from {was} to {replicas}")
            return True
        return False

    def _is_scaling_event(self, deploy: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        desired = str(_replicas(deploy))
        for rs in [*old_rss, *([new_rs] if new_rs is not None else [])]:
            if _replicas(rs) <= 0:
                continue
            value = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
            if value is not None and value != desired:
                return True
        return False

    def _scale(self, deploy: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
        """Upstream ``scale``: one active ReplicaSet takes the whole count; otherwise a saturated new
        one leaves the old ones none, and a rolling Deployment spreads the change in proportion."""
        desired = _replicas(deploy)
        everything = [*old_rss, *([new_rs] if new_rs is not None else [])]
        active = [rs for rs in everything if _replicas(rs) > 0]
        if len(active) <= 1:
            target = (
                active[0]
                if active
                else (new_rs if new_rs is not None else (max(old_rss, key=_created) if old_rss else None))
            )
            if target is not None:
                self._scale_rs(deploy, target, desired)
            return
        if (
            new_rs is not None
            and _replicas(new_rs) == desired
            and _status(new_rs, "availableReplicas") == desired
        ):
            for rs in old_rss:
                if _replicas(rs) > 0:
                    self._scale_rs(deploy, rs, 0)
            return
        if not is_rolling(deploy):
            return
        allowed = desired + max_surge(deploy) if desired > 0 else 0
        to_add = allowed - sum(_replicas(rs) for rs in active)
        if to_add == 0:
            return
        if to_add > 0:
            active.sort(key=lambda rs: _created(rs), reverse=True)
            active.sort(key=lambda rs: _replicas(rs), reverse=True)
        else:
            active.sort(key=_created)
            active.sort(key=lambda rs: _replicas(rs), reverse=True)
        sizes: dict[str, int] = {}
        added = 0
        for rs in active:
            share = self._proportion(deploy, rs, to_add, added)
            sizes[rs["metadata"]["name"]] = _replicas(rs) + share
            added += share
        first = active[0]["metadata"]["name"]
        sizes[first] = max(0, sizes[first] + to_add - added)
        for rs in active:
            self._scale_rs(deploy, rs, sizes[rs["metadata"]["name"]])

    def _proportion(self, deploy: Obj, rs: Obj, to_add: int, added: int) -> int:
        """Upstream ``GetProportion``: this ReplicaSet's share of the change, never beyond what is
        left of it."""
        if _replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        annotated = (rs["metadata"].get("annotations") or {}).get(MAX_REPLICAS)
        desired = _replicas(deploy)
        if desired == 0:
            fraction = -_replicas(rs)
        else:
            total = desired + max_surge(deploy)
            status_replicas = _status(deploy, "replicas")
            try:
                before = int(annotated) if annotated is not None else status_replicas
            except ValueError:
                before = status_replicas
            # Go rounds halves away from zero.
            fraction = math.floor(_replicas(rs) * total / before + 0.5) - _replicas(rs) if before else 0
        left = to_add - added
        return min(fraction, left) if to_add > 0 else max(fraction, left)

    def _reconcile_new(self, deploy: Obj, new_rs: Obj, old_rss: list[Obj]) -> bool:
        desired = _replicas(deploy)
        if _replicas(new_rs) == desired:
            return False
        if _replicas(new_rs) > desired:
            return self._scale_rs(deploy, new_rs, desired)
        return self._scale_rs(deploy, new_rs, self._new_replicas(deploy, [*old_rss, new_rs], new_rs))

    def _reconcile_old(self, deploy: Obj, new_rs: Obj, old_rss: list[Obj]) -> bool:
        """Upstream ``reconcileOldReplicaSets``: old ReplicaSets lose their unhealthy pods first,
        then as many as the minimum availability allows."""
        if sum(_replicas(rs) for rs in old_rss) == 0:
            return False
        all_rss = [*old_rss, new_rs]
        min_available = _replicas(deploy) - max_unavailable(deploy)
        new_unavailable = _replicas(new_rs) - _status(new_rs, "availableReplicas")
        max_down = sum(_replicas(rs) for rs in all_rss) - min_available - new_unavailable
        if max_down <= 0:
            return False
        cleaned = 0
        current = {rs["metadata"]["name"]: _replicas(rs) for rs in old_rss}
        for rs in sorted(old_rss, key=_created):
            if cleaned >= max_down:
                break
            size = current[rs["metadata"]["name"]]
            if size == 0:
                continue
            unhealthy = size - _status(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            down = min(max_down - cleaned, unhealthy)
            current[rs["metadata"]["name"]] = size - down
            cleaned += down
        available = sum(_status(rs, "availableReplicas") for rs in all_rss)
        total_down = max(0, available - min_available)
        scaled = 0
        for rs in sorted(old_rss, key=_created):
            if scaled >= total_down:
                break
            size = current[rs["metadata"]["name"]]
            if size == 0:
                continue
            down = min(size, total_down - scaled)
            current[rs["metadata"]["name"]] = size - down
            scaled += down
        changed = False
        for rs in old_rss:
            if current[rs["metadata"]["name"]] != _replicas(rs):
                changed |= self._scale_rs(deploy, rs, current[rs["metadata"]["name"]])
        return changed

    def _recreate(self, deploy: Obj, new_rs: Obj, old_rss: list[Obj]) -> bool:
        """Upstream ``rolloutRecreate``: old ReplicaSets go to zero; the new one grows once none of
        their pods is left."""
        changed = False
        for rs in old_rss:
            if _replicas(rs) > 0:
                changed |= self._scale_rs(deploy, rs, 0)
        if changed or any(
            _status(self.store.get("ReplicaSet", *_key(rs)) or rs, "replicas") > 0 for rs in old_rss
        ):
            return True
        return self._scale_rs(deploy, new_rs, _replicas(deploy))

    def _cleanup(self, deploy: Obj, old_rss: list[Obj]) -> None:
        """Upstream ``cleanupDeployment``: beyond ``revisionHistoryLimit``, the oldest revisions
        that have no pods left go."""
        limit = (deploy.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return
        alive = [rs for rs in old_rss if not rs["metadata"].get("deletionTimestamp")]
        diff = len(alive) - limit
        if diff <= 0:
            return
        alive.sort(key=_created)
        alive.sort(key=revision)
        for rs in alive[:diff]:
            meta = rs["metadata"]
            if (
                _status(rs, "replicas") != 0
                or _replicas(rs) != 0
                or _int(meta.get("generation"), 1) > _status(rs, "observedGeneration")
            ):
                continue
            delete_cascading(self.store, "ReplicaSet", meta.get("namespace"), meta["name"], "Background")

    # -- status ----------------------------------------------------------------------------------
    @staticmethod
    def _has_deadline(deploy: Obj) -> bool:
        deadline = (deploy.get("spec") or {}).get("progressDeadlineSeconds")
        return isinstance(deadline, int) and deadline != 2**31 - 1

    def _calculate(self, deploy: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> dict[str, Any]:
        """Upstream ``calculateStatus``."""
        all_rss = [*old_rss, *([new_rs] if new_rs is not None else [])]
        available = sum(_status(rs, "availableReplicas") for rs in all_rss)
        total = sum(_replicas(rs) for rs in all_rss)
        old = dict(deploy.get("status") or {})
        status: dict[str, Any] = {
            "observedGeneration": _int(deploy["metadata"].get("generation"), 1),
            "replicas": sum(_status(rs, "replicas") for rs in all_rss),
            "updatedReplicas": _status(new_rs, "replicas") if new_rs is not None else 0,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in all_rss),
            "availableReplicas": available,
            "unavailableReplicas": max(0, total - available),
        }
        if isinstance(old.get("collisionCount"), int):
            status["collisionCount"] = old["collisionCount"]
        status["conditions"] = copy.deepcopy(old.get("conditions") or [])
        if available >= _replicas(deploy) - max_unavailable(deploy):
            _set_condition(
                status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            _set_condition(
                status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        # Upstream leaves zero counts out of what it writes.
        for key in (
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        ):
            if status[key] == 0:
                del status[key]
        return status

    def _complete(self, deploy: Obj, status: Mapping[str, Any]) -> bool:
        """Upstream ``DeploymentComplete``."""
        desired = _replicas(deploy)
        return (
            _status({"status": status}, "updatedReplicas") == desired
            and _status({"status": status}, "replicas") == desired
            and _status({"status": status}, "availableReplicas") == desired
            and _status({"status": status}, "observedGeneration")
            >= _int(deploy["metadata"].get("generation"), 1)
        )

    def _sync_status(self, deploy: Obj, new_rs: Obj | None, old_rss: list[Obj], *, rollout: bool) -> None:
        """Upstream ``syncDeploymentStatus`` (a sync) and ``syncRolloutStatus`` (a rollout, which
        also moves the ``Progressing`` condition)."""
        deploy = self.store.get("Deployment", *_key(deploy)) or deploy
        status = self._calculate(deploy, new_rs, old_rss)
        if rollout:
            if not self._has_deadline(deploy):
                status["conditions"] = [c for c in status["conditions"] if c.get("type") != "Progressing"]
            current = _condition(status, "Progressing")
            complete_before = (
                _status({"status": status}, "replicas") == _status({"status": status}, "updatedReplicas")
                and current is not None
                and current.get("reason") == "NewReplicaSetAvailable"
            )
            if self._has_deadline(deploy) and not complete_before and new_rs is not None:
                name = new_rs["metadata"]["name"]
                if self._complete(deploy, status):
                    _set_condition(
                        status,
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        f'ReplicaSet "{name}" has successfully progressed.',
                    )
                elif self._progressing(deploy, status):
                    since = (
                        current.get("lastTransitionTime")
                        if current and current.get("status") == "True"
                        else None
                    )
                    status["conditions"] = [c for c in status["conditions"] if c.get("type") != "Progressing"]
                    _set_condition(
                        status,
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        f'ReplicaSet "{name}" is progressing.',
                    )
                    if since is not None:
                        cond = _condition(status, "Progressing")
                        assert cond is not None
                        cond["lastTransitionTime"] = since
        if not status["conditions"]:
            del status["conditions"]
        if status != (deploy.get("status") or {}):
            self.store.update({**deploy, "status": status})

    @staticmethod
    def _progressing(deploy: Obj, status: Mapping[str, Any]) -> bool:
        """Upstream ``DeploymentProgressing``: more pods updated, ready or available, or fewer old."""
        old = deploy.get("status") or {}
        new = {"status": status}
        old_obj = {"status": old}
        return (
            _status(new, "updatedReplicas") > _status(old_obj, "updatedReplicas")
            or _status(new, "replicas") - _status(new, "updatedReplicas")
            < _status(old_obj, "replicas") - _status(old_obj, "updatedReplicas")
            or _status(new, "readyReplicas") > _status(old_obj, "readyReplicas")
            or _status(new, "availableReplicas") > _status(old_obj, "availableReplicas")
        )

    def _event(self, deploy: Obj, message: str) -> None:
        self.store.record_event(
            deploy, "Normal", "ScalingReplicaSet", "ScalingReplicaSet", message, _REPORTER
        )


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace")), str(meta.get("name")))
