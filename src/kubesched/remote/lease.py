"""Leases on an API server: the :class:`~kubesched.runtime.leader_election.LeaseAPI` that leader
election uses in ``kubesched run``, over an :class:`~kubesched.remote.client.ApiClient`.

The client turns Status answers into ``kubesched.store.base`` exceptions (404 ``NotFound``, 409
``Conflict`` or ``AlreadyExists``), which is what the elector expects; a missing Lease reads as None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from kubesched.remote.client import ApiClient, ApiError
from kubesched.store.base import NotFound

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def lease_path(namespace: str, name: str | None = None) -> str:
    path = LEASES.format(namespace=quote(namespace, safe=""))
    return path if name is None else f"{path}/{quote(name, safe='')}"


def _object(answer: Any, what: str) -> dict[str, Any]:
    if not isinstance(answer, dict) or answer.get("kind") not in (None, "Lease"):
        raise ApiError(200, "", f"{what}: the server answered with something other than a Lease")
    return answer


def _where(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name") or not meta.get("namespace"):
        raise ValueError("a Lease needs metadata.name and metadata.namespace")
    return str(meta["namespace"]), str(meta["name"])


class RemoteLeaseAPI:
    """``coordination.k8s.io/v1`` Leases through one client: get, create, update (PUT, carrying the
    ``resourceVersion`` it was read at, so a concurrent writer makes it fail with Conflict)."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            answer = await self.client.request("GET", lease_path(namespace, name))
        except NotFound:
            return None
        return _object(answer, f"GET lease {namespace}/{name}")

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        namespace, name = _where(obj)
        answer = await self.client.request("POST", lease_path(namespace), body=dict(obj))
        return _object(answer, f"POST lease {namespace}/{name}")

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        namespace, name = _where(obj)
        answer = await self.client.request("PUT", lease_path(namespace, name), body=dict(obj))
        return _object(answer, f"PUT lease {namespace}/{name}")
