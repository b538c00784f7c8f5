"""What every write checks of a body before its kind's strategy sees it: type meta, the name (or
generateName), the namespace (created on first use, as a playground convenience), labels and
annotations, and fields the kind does not have."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping
from typing import Any

from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.registry.admission import apply_defaults
from kubesched.registry.core.event import API_VERSIONS as EVENT_API_VERSIONS
from kubesched.registry.errors import bad_request, invalid, not_found
from kubesched.registry.strategy import Strategy
from kubesched.store.base import AlreadyExists, ClusterStore

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def prepare(
    store: ClusterStore | None,
    auto_create_namespaces: bool,
    strategy: Strategy,
    namespace: str | None,
    body: Any,
    query: Mapping[str, str],
    *,
    creating: bool,
) -> tuple[dict[str, Any], list[str]]:
    """Check a body's shape for the strategy's resource and validate it; returns it and any
    warnings. Without a store nothing is written: a missing namespace is not created."""
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a JSON object, not {type(body).__name__}")
    check_type_meta(strategy, body)
    meta = body.get("metadata")
    if meta is None:
        meta = body["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    name = _check_name(strategy, meta, creating=creating)
    if strategy.resource.namespaced:
        given = meta.get("namespace")
        if given is not None and given != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
        if creating and store is not None and store.get("Namespace", None, str(namespace)) is None:
            _create_namespace(store, auto_create_namespaces, str(namespace))
    else:
        meta.pop("namespace", None)
    _check_labels(strategy, meta, name)
    warnings = _unknown_fields(strategy, body, meta, query)
    for key in ("spec", "status"):
        if key in body and body[key] is not None and not isinstance(body[key], dict):
            raise bad_request(f"{key} must be an object")
    strategy.decode(body)
    strategy.validate(body)
    return body, warnings


def check_type_meta(strategy: Strategy, body: dict[str, Any]) -> None:
    res = strategy.resource
    kind = body.get("kind")
    if kind is None:
        body["kind"] = res.kind
    elif kind != res.kind:
        raise bad_request(f"the object provided is unrecognized (must be of type {res.kind}): kind {kind!r}")
    api_version = body.get("apiVersion")
    if api_version is None:
        body["apiVersion"] = res.group_version
    elif not isinstance(api_version, str) or (
        api_version != res.group_version and not (res.kind == "Event" and api_version in EVENT_API_VERSIONS)
    ):
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({res.group_version})"
        )


def _check_name(strategy: Strategy, meta: dict[str, Any], *, creating: bool) -> str:
    """The object's name, generated from generateName on create when it has none."""
    res = strategy.resource
    name = meta.get("name")
    shown = name if isinstance(name, str) else ""
    if creating and not name:
        generate = meta.get("generateName")
        if isinstance(generate, str) and generate:
            name = generate + "".join(random.choices(_GENERATE_ALPHABET, k=5))
            meta["name"] = name
        else:
            raise invalid(
                res.kind,
                res.group,
                "",
                [("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")],
            )
    if not isinstance(name, str):
        raise invalid(
            res.kind,
            res.group,
            shown,
            [("FieldValueInvalid", "metadata.name", "Invalid value: must be a string")],
        )
    if not strategy.name_valid(name):
        raise invalid(
            res.kind,
            res.group,
            name,
            [
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                    "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                    "character",
                )
            ],
        )
    return name


def _create_namespace(store: ClusterStore, auto_create_namespaces: bool, namespace: str) -> None:
    """A playground convenience (upstream answers 404): creating an object in a namespace that does
    not exist creates the namespace, so manifests made for ``simulate`` apply as they are."""
    if not auto_create_namespaces:
        raise not_found("namespaces", "", namespace)
    created: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    apply_defaults(created)
    with contextlib.suppress(AlreadyExists):
        store.create(created)


def _check_labels(strategy: Strategy, meta: dict[str, Any], name: str) -> None:
    causes: list[tuple[str, str, str]] = []
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise bad_request(f"metadata.{field} must be a map of strings")
        for key, value in values.items():
            why = qualified_name_error(key)
            if why:
                causes.append(("FieldValueInvalid", f"metadata.{field}", f'Invalid value: "{key}": {why}'))
            if field == "labels":
                why = label_value_error(value)
                if why:
                    causes.append(
                        ("FieldValueInvalid", "metadata.labels", f'Invalid value: "{value}": {why}')
                    )
    if causes:
        raise invalid(strategy.kind, strategy.resource.group, name, causes)


def _unknown_fields(
    strategy: Strategy, body: dict[str, Any], meta: dict[str, Any], query: Mapping[str, str]
) -> list[str]:
    """Fields the kind does not have: refused under fieldValidation=Strict, else warned about
    (unless Ignore)."""
    known = strategy.known_fields
    unknown = [f"{k}" for k in body if k not in known]
    unknown += [f"metadata.{k}" for k in meta if k not in _META_FIELDS]
    if not unknown:
        return []
    if query.get("fieldValidation") == "Strict":
        raise bad_request("strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown))
    if query.get("fieldValidation") != "Ignore":
        return [f'unknown field "{u}"' for u in unknown]
    return []
