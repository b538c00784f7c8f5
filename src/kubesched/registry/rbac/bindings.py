"""RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1): stored and listed as
kube-apiserver does; ``roleRef`` is validated as upstream's ``ValidateRoleBinding`` and may not
change once set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.field_errors import Cause, not_supported, required
from kubesched.registry.errors import invalid as invalid_error
from kubesched.registry.rbac.roles import GROUP
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import ClusterStore, Obj

SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def binding_causes(body: Mapping[str, Any], role_kinds: tuple[str, ...]) -> list[Cause]:
    causes: list[Cause] = []
    ref = body.get("roleRef")
    ref = ref if isinstance(ref, Mapping) else {}
    if ref.get("apiGroup") != GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (GROUP,)))
    if ref.get("kind") not in role_kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind", ""), role_kinds))
    if not ref.get("name"):
        causes.append(required("roleRef.name", ""))
    for i, subject in enumerate(body.get("subjects") or []):
        if not isinstance(subject, Mapping):
            continue
        path = f"subjects[{i}]"
        if not subject.get("name"):
            causes.append(required(f"{path}.name", ""))
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            causes.append(not_supported(f"{path}.kind", kind or "", SUBJECT_KINDS))
        elif kind == "ServiceAccount" and subject.get("apiGroup"):
            causes.append(not_supported(f"{path}.apiGroup", subject["apiGroup"], ("",)))
        elif kind in ("User", "Group") and subject.get("apiGroup") != GROUP:
            causes.append(not_supported(f"{path}.apiGroup", subject.get("apiGroup", ""), (GROUP,)))
    return causes


def set_defaults(obj: dict[str, Any]) -> None:
    """Upstream's rbac/v1 defaults: the roleRef's API group, and a User's or Group's."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        if (
            isinstance(subject, dict)
            and not subject.get("apiGroup")
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = GROUP


def _names(subjects: Any, kind: str) -> str:
    out = []
    for s in subjects if isinstance(subjects, list) else []:
        if isinstance(s, Mapping) and s.get("kind") == kind:
            name = str(s.get("name", ""))
            out.append(f"{s.get('namespace', '')}/{name}" if kind == "ServiceAccount" else name)
    return ", ".join(out)


class RoleBindingStrategy(Strategy):
    top_fields = frozenset({"subjects", "roleRef"})
    columns: tuple[Column, ...] = (
        NAME,
        ("Role", "string", 0),
        AGE,
        ("Users", "string", 1),
        ("Groups", "string", 1),
        ("ServiceAccounts", "string", 1),
    )
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        set_defaults(obj)

    def validate(self, body: dict[str, Any]) -> None:
        res = self.resource
        causes = binding_causes(body, self.role_kinds)
        if causes:
            raise invalid_error(res.kind, res.group, str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        if old is not None and old.get("roleRef") != new.get("roleRef"):
            res = self.resource
            shown = _go_ref(new.get("roleRef"))
            why: Cause = ("FieldValueInvalid", "roleRef", f"Invalid value: {shown}: cannot change roleRef")
            raise invalid_error(res.kind, res.group, str(new["metadata"].get("name", "")), [why])

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        ref = obj.get("roleRef") or {}
        subjects = obj.get("subjects")
        return [
            meta_of(obj).get("name"),
            f"{ref.get('kind', '')}/{ref.get('name', '')}",
            age(meta_of(obj).get("creationTimestamp"), now),
            _names(subjects, "User"),
            _names(subjects, "Group"),
            _names(subjects, "ServiceAccount"),
        ]


def _go_ref(ref: Any) -> str:
    ref = ref if isinstance(ref, Mapping) else {}
    return (
        f'rbac.RoleRef{{APIGroup:"{ref.get("apiGroup", "")}", Kind:"{ref.get("kind", "")}", '
        f'Name:"{ref.get("name", "")}"}}'
    )


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    role_kinds = ("ClusterRole",)


ROLE_BINDING = RoleBindingStrategy(Resource(GROUP, "v1", "rolebindings", "rolebinding", "RoleBinding", True))
CLUSTER_ROLE_BINDING = ClusterRoleBindingStrategy(
    Resource(GROUP, "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False)
)
