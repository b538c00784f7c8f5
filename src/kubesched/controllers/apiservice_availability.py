"""The aggregator's availability controller (upstream ``kube-aggregator``'s
``AvailableConditionController``): each APIService's ``Available`` condition. A local one (no
service) is always available; one backed by a Service that does not exist, or whose endpoints have
no address, is not, with upstream's reasons and messages. ``serve`` proxies no aggregated API, so a
service-backed APIService whose service is there fails its discovery check, saying so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.controllers.controller_utils import timestamp
from kubesched.store.base import Conflict, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

WATCHED = ("APIService", "Service", "Endpoints")


def available_condition(api_service: Mapping[str, Any], store: SqliteStore) -> tuple[str, str, str]:
    """(status, reason, message) of the APIService's ``Available`` condition."""
    service = (api_service.get("spec") or {}).get("service")
    if not isinstance(service, Mapping):
        return "True", "Local", "Local APIServices are always available"
    namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
    if store.get("Service", namespace, name) is None:
        return "False", "ServiceNotFound", f'service/{name} in "{namespace}" is not present'
    endpoints = store.get("Endpoints", namespace, name) or {}
    if not any((subset or {}).get("addresses") for subset in endpoints.get("subsets") or []):
        return (
            "False",
            "MissingEndpoints",
            f'endpoints for service/{name} in "{namespace}" have no addresses with port name ""',
        )
    return (
        "False",
        "FailedDiscoveryCheck",
        f'failing or missing response from service/{name} in "{namespace}": kubesched serves no '
        "aggregated API (its pods are simulated)",
    )


class APIServiceAvailabilityController:
    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._dirty = True
        for kind in WATCHED:
            informers.informer(kind).add_handler(self._on_change)

    def _on_change(self, change: Change[Any]) -> None:
        self._dirty = True

    def sync(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        for api_service in self.store.list("APIService"):
            self._update(api_service)

    def _update(self, api_service: Obj) -> None:
        status, reason, message = available_condition(api_service, self.store)
        old = dict(api_service.get("status") or {})
        conditions = [c for c in old.get("conditions") or [] if isinstance(c, dict)]
        current = next((c for c in conditions if c.get("type") == "Available"), None)
        if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
            status,
            reason,
            message,
        ):
            return
        changed_at = (
            current.get("lastTransitionTime")
            if current is not None and current.get("status") == status
            else timestamp()
        )
        condition = {
            "type": "Available",
            "status": status,
            "lastTransitionTime": changed_at,
            "reason": reason,
            "message": message,
        }
        rest = [c for c in conditions if c.get("type") != "Available"]
        try:
            self.store.update({**api_service, "status": {**old, "conditions": [*rest, condition]}})
        except (Conflict, NotFound):
            self._dirty = True  # changed or gone meanwhile: looked at again next time
