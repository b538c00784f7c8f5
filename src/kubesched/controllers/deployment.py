"""The Deployment controller (upstream ``pkg/controller/deployment``): a Deployment keeps one
ReplicaSet per pod template, named after the template's hash, at its replicas; the ReplicaSets of
earlier templates go to zero at once (a rollout without surge). Its status follows the current
ReplicaSet's."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

from kubesched.controllers.controller_utils import OwnerController, owner_ref, owner_uids, write_status
from kubesched.registry.admission import apply_defaults
from kubesched.store.base import Obj


class DeploymentController(OwnerController):
    kind = "Deployment"
    dependent_kind = "ReplicaSet"

    def owners_of(self, dependent: Obj) -> Iterable[str]:
        # Every ReplicaSet that names the Deployment among its owners is one of its own.
        return owner_uids(dependent)

    def reconcile(self, deploy: Obj, owned: list[Obj]) -> None:
        spec = deploy.get("spec") or {}
        template = spec.get("template") or {}
        replicas = int(spec.get("replicas", 1))
        digest = hashlib.sha256(orjson.dumps(template, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]
        namespace = deploy["metadata"].get("namespace")
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
                    "ownerReferences": [owner_ref(deploy)],
                    "generation": 1,
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": tmpl,
                },
            }
            apply_defaults(rs)
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
        write_status(self.store, deploy, status)
