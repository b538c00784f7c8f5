"""The service accounts controller (upstream ``pkg/controller/serviceaccount``): every active
namespace has a ServiceAccount named ``default``, made again when it is deleted."""

from __future__ import annotations

from typing import Any

from kubesched.registry.admission import apply_defaults
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

DEFAULT_ACCOUNT = "default"


class ServiceAccountsController:
    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._due: dict[str, None] = {}
        informers.informer("Namespace").add_handler(self._on_namespace)
        informers.informer("ServiceAccount").add_handler(self._on_account)

    def _on_namespace(self, change: Change[Any]) -> None:
        if change.type != EventType.DELETED:
            self._due[str(change.obj["metadata"]["name"])] = None

    def _on_account(self, change: Change[Any]) -> None:
        meta = change.obj.get("metadata") or {}
        if change.type == EventType.DELETED and meta.get("name") == DEFAULT_ACCOUNT:
            self._due[str(meta.get("namespace"))] = None

    def sync(self) -> None:
        due, self._due = self._due, {}
        for namespace in due:
            ns = self.store.get("Namespace", None, namespace)
            if ns is None or (ns.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if (ns.get("status") or {}).get("phase", "Active") != "Active":
                continue
            if self.store.get("ServiceAccount", namespace, DEFAULT_ACCOUNT) is not None:
                continue
            account: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace},
            }
            apply_defaults(account)
            try:
                self.store.create(account)
            except (AlreadyExists, NotFound):
                pass
            except Conflict:
                self._due[namespace] = None  # tried again at the next tick
