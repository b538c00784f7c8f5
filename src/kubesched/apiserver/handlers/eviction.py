"""The Eviction subresource of pods (upstream ``pkg/registry/core/pod/storage/eviction.go``): a pod
is deleted unless that would break the one PodDisruptionBudget covering it, evaluated by
``kubesched.api.pdb`` as preemption evaluates it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesched.api.pdb import PodDisruptionBudget
from kubesched.apiserver.handlers.dryrun import dry_run
from kubesched.apiserver.handlers.responses import get_or_404, json_response
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.errors import InputError
from kubesched.registry.core.pod import STRATEGY as POD
from kubesched.registry.errors import ApiError, bad_request, success
from kubesched.store.base import ClusterStore, Obj
from kubesched.store.memory import format_timestamp

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def evict(server: ApiServer, namespace: str, name: str, body: Any, dry: bool = False) -> web.Response:
    """Evict a pod; ``dry`` (the query's dryRun or the Eviction's deleteOptions.dryRun) checks the
    budget and answers as the eviction would, changing nothing."""
    store = server.store
    pod = get_or_404(store, POD.resource, namespace, name)
    if not isinstance(body, dict):
        raise bad_request("an Eviction must be an object")
    options = body.get("deleteOptions") or {}
    given = options.get("dryRun") or [] if isinstance(options, dict) else []
    dry = dry_run("POST", given if isinstance(given, list) else [str(given)]) or dry
    if not _can_ignore_budgets(pod):
        budget = _covering_budget(store, pod)
        if budget is not None:
            _take_disruption(store, budget, name, dry)
    if dry:
        return json_response(success(), 201)
    store.update_pod_condition(
        namespace,
        name,
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        },
    )
    delete_cascading(store, "Pod", namespace, name, "Background")
    return json_response(success(), 201)


def _can_ignore_budgets(pod: Obj) -> bool:
    """Upstream's ``canIgnorePDB``: a finished, pending or terminating pod is no disruption."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def _covering_budget(store: ClusterStore, pod: Obj) -> tuple[Obj, PodDisruptionBudget] | None:
    """The budget whose selector picks ``pod`` (as an object and as read), if any; a pod that more
    than one covers cannot be evicted (as upstream)."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels") or {}
    found: list[tuple[Obj, PodDisruptionBudget]] = []
    for obj in store.list("PodDisruptionBudget"):
        try:
            budget = PodDisruptionBudget.from_dict(obj)
        except InputError:
            continue  # a budget the schedulers cannot read protects nothing, there or here
        if budget.matches(namespace, labels):
            found.append((obj, budget))
    if len(found) > 1:
        raise ApiError(
            500,
            "InternalError",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
            "support.",
        )
    return found[0] if found else None


def _take_disruption(
    store: ClusterStore, found: tuple[Obj, PodDisruptionBudget], pod_name: str, dry: bool
) -> None:
    """Refuse the eviction (429) when the budget allows no disruption; else, where the budget's
    status counts its disruptions, take one of them (the disruption controller's count is not there
    to drop by itself)."""
    obj, budget = found
    if budget.disruptions_allowed(store.list("Pod")) <= 0:
        raise ApiError(
            429,
            "TooManyRequests",
            _VIOLATION,
            details={
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {budget.name} needs more healthy pods",
                    }
                ]
            },
        )
    if budget.status_disruptions_allowed is None or dry:
        return
    status = dict(obj.get("status") or {})
    status["disruptionsAllowed"] = budget.status_disruptions_allowed - 1
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: format_timestamp(time.time())}
    store.update({**obj, "status": status})
