"""Parsed views of the workload objects the scheduler reads for default pod spreading.

kube-scheduler spreads a pod without topology spread constraints of its own by the selector of the
workload it belongs to (upstream ``helper.DefaultSelector``): the Services whose selector matches
the pod, and the ReplicationController, ReplicaSet or StatefulSet that controls it through
``metadata.ownerReferences``. These views hold just that: names, namespaces and selectors, plus a
pod's owner references. Parsing validates the fields read and raises
:class:`~kubesched.errors.InputError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.fields import as_list, as_mapping, as_str_map, object_name
from kubesched.api.selectors import LabelSelector, label_value_error, qualified_name_error
from kubesched.errors import InputError

__all__ = [
    "APPS_V1",
    "CORE_V1",
    "OwnerReference",
    "ReplicaSet",
    "ReplicationController",
    "Service",
    "StatefulSet",
    "controller_of",
    "owner_references",
]

CORE_V1 = "v1"
APPS_V1 = "apps/v1"


def _namespace(meta: Mapping[str, Any]) -> str:
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise InputError("namespace must be a string", field="metadata.namespace")
    return namespace


def _selector_map(raw: Any, field: str) -> dict[str, str]:
    """A set-based selector (``map[string]string``) with valid label keys and values."""
    selector = as_str_map(raw, field)
    for key, value in selector.items():
        if (why := qualified_name_error(key)) is not None:
            raise InputError(why, field=field)
        if (why := label_value_error(value)) is not None:
            raise InputError(f"value of {key!r}: {why}", field=f"{field}.{key}")
    return selector


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """One ``metadata.ownerReferences`` entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False

    @classmethod
    def from_dict(cls, data: Any, field: str) -> OwnerReference:
        ref = as_mapping(data, field)
        values: dict[str, str] = {}
        for key in ("apiVersion", "kind", "name", "uid"):
            value = ref.get(key)
            if not isinstance(value, str) or not value:
                raise InputError("is required (a non-empty string)", field=f"{field}.{key}")
            values[key] = value
        controller = ref.get("controller", False)
        if controller is None:
            controller = False
        if not isinstance(controller, bool):
            raise InputError(f"must be true or false, got {controller!r}", field=f"{field}.controller")
        return cls(values["apiVersion"], values["kind"], values["name"], values["uid"], controller)


def owner_references(meta: Mapping[str, Any]) -> tuple[OwnerReference, ...]:
    """An object's ``metadata.ownerReferences``; the API server allows one controller at most."""
    field = "metadata.ownerReferences"
    refs = tuple(
        OwnerReference.from_dict(raw, f"{field}[{i}]")
        for i, raw in enumerate(as_list(meta.get("ownerReferences"), field))
    )
    controllers = [i for i, r in enumerate(refs) if r.controller]
    if len(controllers) > 1:
        raise InputError(
            "only one reference can have controller set to true", field=f"{field}[{controllers[1]}]"
        )
    return refs


def controller_of(refs: Sequence[OwnerReference]) -> OwnerReference | None:
    """The controlling owner (``metav1.GetControllerOf``), if any."""
    for ref in refs:
        if ref.controller:
            return ref
    return None


@dataclass(frozen=True, slots=True)
class Service:
    """A ``v1 Service``: only its pod selector matters to the scheduler."""

    namespace: str
    name: str
    #: ``spec.selector``; None when absent (such a Service selects no pods, not all of them).
    selector: dict[str, str] | None

    def selects(self, labels: Mapping[str, str]) -> bool:
        if self.selector is None:
            return False
        return all(labels.get(k) == v for k, v in self.selector.items())

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Service:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        raw = spec.get("selector")
        selector = None if raw is None else _selector_map(raw, "spec.selector")
        return cls(_namespace(meta), object_name(meta), selector)


@dataclass(frozen=True, slots=True)
class ReplicationController:
    """A ``v1 ReplicationController`` and its equality-based selector."""

    namespace: str
    name: str
    selector: dict[str, str]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ReplicationController:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        raw = spec.get("selector")
        if raw is None:
            # API defaulting: an unset selector is the pod template's labels.
            template = as_mapping(spec.get("template"), "spec.template")
            tmeta = as_mapping(template.get("metadata"), "spec.template.metadata")
            selector = _selector_map(tmeta.get("labels"), "spec.template.metadata.labels")
        else:
            selector = _selector_map(raw, "spec.selector")
        return cls(_namespace(meta), object_name(meta), selector)


def _apps_selector(spec: Mapping[str, Any]) -> LabelSelector:
    raw = spec.get("selector")
    if raw is None:
        raise InputError("is required (a label selector matching the pod template)", field="spec.selector")
    return LabelSelector.from_dict(as_mapping(raw, "spec.selector"), "spec.selector")


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """An ``apps/v1 ReplicaSet`` and its label selector."""

    namespace: str
    name: str
    selector: LabelSelector

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ReplicaSet:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        return cls(_namespace(meta), object_name(meta), _apps_selector(spec))


@dataclass(frozen=True, slots=True)
class StatefulSet:
    """An ``apps/v1 StatefulSet`` and its label selector."""

    namespace: str
    name: str
    selector: LabelSelector

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> StatefulSet:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        return cls(_namespace(meta), object_name(meta), _apps_selector(spec))
