"""Roles and ClusterRoles (rbac.authorization.k8s.io/v1): stored and listed as kube-apiserver does,
their rules validated as upstream's ``ValidatePolicyRule``. ``serve`` authorizes every token it
knows as a cluster admin, so no rule here grants or denies a request."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubesched.api.field_errors import Cause, invalid, required
from kubesched.registry.errors import invalid as invalid_error
from kubesched.registry.strategy import NAME, Column, Resource, Row, Strategy, meta_of

GROUP = "rbac.authorization.k8s.io"


def rule_causes(rules: Any, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        if not isinstance(rule, Mapping):
            continue
        path = f"rules[{i}]"
        if not rule.get("verbs"):
            causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                why = "namespaced rules cannot apply to non-resource URLs"
                causes.append(invalid(f"{path}.nonResourceURLs", urls, why))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                why = "rules cannot apply to both regular resources and non-resource URLs"
                causes.append(invalid(f"{path}.nonResourceURLs", urls, why))
            continue
        if not rule.get("apiGroups"):
            causes.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            causes.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return causes


def created_at(obj: Mapping[str, Any]) -> str:
    """The creation time as upstream's RBAC printers show it (RFC 3339, UTC)."""
    stamp = str(meta_of(obj).get("creationTimestamp") or "")
    try:
        when = datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return stamp
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class RoleStrategy(Strategy):
    top_fields = frozenset({"rules"})
    columns: tuple[Column, ...] = (NAME, ("Created At", "date", 0))

    def validate(self, body: dict[str, Any]) -> None:
        res = self.resource
        causes = rule_causes(body.get("rules"), res.namespaced)
        if causes:
            raise invalid_error(res.kind, res.group, str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        return [meta_of(obj).get("name"), created_at(obj)]


class ClusterRoleStrategy(RoleStrategy):
    top_fields = frozenset({"rules", "aggregationRule"})


ROLE = RoleStrategy(Resource(GROUP, "v1", "roles", "role", "Role", True))
CLUSTER_ROLE = ClusterRoleStrategy(Resource(GROUP, "v1", "clusterroles", "clusterrole", "ClusterRole", False))
