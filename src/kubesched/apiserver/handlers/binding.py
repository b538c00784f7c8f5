"""The Binding subresource of pods: the scheduler's write of a pod's node."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesched.apiserver.handlers.responses import json_response
from kubesched.registry.errors import ApiError, conflict, invalid, not_found, success
from kubesched.store.base import Conflict, NotFound
from kubesched.store.sqlite import SqliteStore


def bind(store: SqliteStore, namespace: str, name: str, body: Any, dry: bool = False) -> web.Response:
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
        raise invalid("Binding", "", name, [("FieldValueRequired", "target", "Required value")])
    node = body["target"].get("name")
    if not isinstance(node, str) or not node:
        raise invalid("Binding", "", name, [("FieldValueRequired", "target.name", "Required value")])
    uid = str((body.get("metadata") or {}).get("uid") or "")
    if dry:
        _check_bind(store, namespace, name, uid, node)
        return json_response(success(), 201)
    try:
        store.bind(namespace, name, uid, node)
    except NotFound as exc:
        if store.get("Pod", namespace, name) is None:
            raise not_found("pods", "", name) from None
        raise ApiError(404, "NotFound", str(exc)) from None
    except Conflict as exc:
        raise conflict("pods/binding", "", name, str(exc)) from None
    return json_response(success(), 201)


def _check_bind(store: SqliteStore, namespace: str, name: str, uid: str, node: str) -> None:
    """What a bind would refuse, refused the same way, without binding."""
    pod = store.get("Pod", namespace, name)
    if pod is None:
        raise not_found("pods", "", name)
    if uid and pod["metadata"].get("uid") != uid:
        raise conflict("pods/binding", "", name, f"pod {namespace}/{name} was replaced (uid changed)")
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        raise conflict(
            "pods/binding", "", name, f"pod {namespace}/{name} is already assigned to node {bound!r}"
        )
    if store.get("Node", None, node) is None:
        raise ApiError(404, "NotFound", f"node {node!r} not found")
