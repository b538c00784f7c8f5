"""Manifests given to ``kubesched serve`` at start, created as ``kubectl apply -f`` creates them:
every served kind, through the API's own create path (checks, defaults, admission), with the
``last-applied-configuration`` annotation kubectl leaves, so that a later ``kubectl apply`` of the
same files finds nothing to change.

They are read and checked before the server writes anything: an object the API would refuse as
written is an error of the command, located by file, document and object. A kind the server does
not serve is skipped with kubectl's words for it. Admission, which depends on what the cluster
holds, runs when the objects are created; its refusals are reported and the others created, as
``kubectl apply`` goes on past a refused object.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from kubesched.api.manifests import LOAD_ORDER, ManifestDocument, read_documents
from kubesched.api.objects import object_ref
from kubesched.apiserver.handlers.create import create_object
from kubesched.apiserver.handlers.prepare import prepare
from kubesched.errors import InputError
from kubesched.registry.errors import ApiError
from kubesched.registry.strategy import Strategy
from kubesched.registry.table import STRATEGIES
from kubesched.store.base import ClusterStore

#: kubectl's record of what was applied, from which its next apply computes a three-way patch.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: What kubectl apply asks of the server's checks.
_APPLY_QUERY = {"fieldValidation": "Strict"}
#: The namespace kubectl puts a namespaced object in when its manifest names none.
_DEFAULT_NAMESPACE = "default"

#: (apiVersion, kind) → the strategy that serves it.
_SERVED: dict[tuple[str, str], Strategy] = {}
for _strategy in STRATEGIES:
    if "create" in _strategy.resource.verbs and "list" in _strategy.resource.verbs:
        _SERVED.setdefault((_strategy.resource.group_version, _strategy.kind), _strategy)


def served_strategy(obj: Mapping[str, Any]) -> Strategy | None:
    """The strategy of an object's apiVersion and kind; None when this server does not serve it
    (the kind is unknown, or its feature gate is off)."""
    strategy = _SERVED.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    return strategy if strategy is not None and strategy.served() else None


def load_start_manifests(paths: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects of ``paths`` as ``kubectl apply`` would send them, each checked as the API checks
    a create, and warnings for the objects skipped. Writes nothing; raises :class:`InputError`."""
    objects: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen: dict[tuple[str, str, str, str], str] = {}
    for found in read_documents(paths):
        kind = found.obj.get("kind")
        if not isinstance(kind, str) or not kind:
            why = "missing kind" if kind is None else f"kind must be a non-empty string, got {kind!r}"
            raise _located(why, found)
        strategy = served_strategy(found.obj)
        if strategy is None:
            warnings.append(
                f"{found.source}: document {found.document}: skipping {object_ref(found.obj)}: "
                f'no matches for kind "{kind}" in version "{found.obj.get("apiVersion")}"'
            )
            continue
        obj = as_applied(strategy, found.obj)
        try:
            check(strategy, obj)
        except ApiError as err:
            raise _located(err.message, found) from None
        meta = obj["metadata"]
        key = (str(obj["apiVersion"]), kind, str(meta.get("namespace") or ""), str(meta.get("name")))
        if key in seen:
            raise _located(f"duplicate object, first defined in {seen[key]}", found)
        seen[key] = f"{found.source} document {found.document}"
        objects.append(obj)
    return objects, warnings


def _located(message: str, found: ManifestDocument) -> InputError:
    return InputError(message, file=found.source, document=found.document, obj=object_ref(found.obj))


def as_applied(strategy: Strategy, given: Mapping[str, Any]) -> dict[str, Any]:
    """The object as ``kubectl apply`` creates it: in the default namespace unless it names one,
    annotated with its own configuration (kubectl's ``GetModifiedConfiguration``)."""
    obj = copy.deepcopy(dict(given))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj  # the API's checks say what is wrong with it
    if strategy.resource.namespaced and not meta.get("namespace"):
        meta["namespace"] = _DEFAULT_NAMESPACE
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        return obj
    annotations = {k: v for k, v in (annotations or {}).items() if k != LAST_APPLIED}
    meta["annotations"] = annotations
    applied = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode() + "\n"
    meta["annotations"] = {**annotations, LAST_APPLIED: applied}
    return obj


def check(strategy: Strategy, obj: Mapping[str, Any]) -> None:
    """Every check the API makes of a create that does not depend on what the cluster holds."""
    body = copy.deepcopy(dict(obj))
    meta = body.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if not strategy.resource.namespaced:
        namespace = None
    prepared, _ = prepare(None, True, strategy, namespace, body, _APPLY_QUERY, creating=True)
    strategy.prepare_for_create(prepared)
    strategy.defaults(prepared)


def create_start_objects(
    store: ClusterStore, objects: Sequence[Mapping[str, Any]], auto_create_namespaces: bool
) -> list[str]:
    """Create what does not exist yet (a restart finds the objects of the first start), what
    others refer to first; returns a line for each object the API refused."""
    order = {k: i for i, k in enumerate(LOAD_ORDER)}
    warnings: list[str] = []
    for given in sorted(objects, key=lambda o: order.get(str(o.get("kind")), len(order))):
        strategy = served_strategy(given)
        if strategy is None:
            warnings.append(
                f'{object_ref(given)}: no matches for kind "{given.get("kind")}" in version '
                f'"{given.get("apiVersion")}"'
            )
            continue
        obj = as_applied(strategy, given)
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") if strategy.resource.namespaced else None
        if store.get(strategy.store_kind, namespace, str(meta.get("name"))) is not None:
            continue
        try:
            create_object(store, auto_create_namespaces, strategy, namespace, obj, _APPLY_QUERY)
        except ApiError as err:
            warnings.append(f"{object_ref(given)}: Error from server ({err.reason}): {err.message}")
    return warnings
