"""Volcano's network topology kind: HyperNode (``topology.volcano.sh/v1alpha1``, cluster-scoped).

A HyperNode is one network domain (a leaf switch, a spine, …) at a tier: tier 1 holds nodes, higher
tiers hold the HyperNodes below them. Its members are nodes, picked by exact name, by a regular
expression over node names or by a label selector, or HyperNodes, named exactly. The checks are the
ones Volcano's CRD schema makes: ``spec.tier`` at least 0, at least one member, each member of type
``Node`` or ``HyperNode`` with exactly one of ``exactMatch``, ``regexMatch``, ``labelMatch``, and
the messages are those of its admission policy. A HyperNode member is resolved by exact name only
(another selector is accepted and ignored, as Volcano does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.fields import as_int, as_list, as_mapping, object_name
from kubesched.api.selectors import LabelSelector
from kubesched.errors import InputError

TOPOLOGY_VOLCANO = "topology.volcano.sh"
HYPER_NODE_API_VERSION = f"{TOPOLOGY_VOLCANO}/v1alpha1"
HYPER_NODE_API_VERSIONS = (HYPER_NODE_API_VERSION,)

MEMBER_TYPE_NODE = "Node"
MEMBER_TYPE_HYPER_NODE = "HyperNode"
MEMBER_TYPES = (MEMBER_TYPE_NODE, MEMBER_TYPE_HYPER_NODE)

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """Exactly one of the three is set."""

    exact: str = ""
    regex: re.Pattern[str] | None = None
    labels: LabelSelector | None = None

    def matching(self, nodes: Iterable[tuple[str, Mapping[str, str]]]) -> set[str]:
        """The names among ``(name, labels)`` this selector picks (Volcano's ``GetMembers``): an
        exact name whether or not such a node exists, a regex by search over the name, a label
        selector with no requirement picks nothing."""
        if self.exact:
            return {self.exact}
        if self.regex is not None:
            return {name for name, _ in nodes if self.regex.search(name)}
        if self.labels is not None and not self.labels.is_empty:
            return {name for name, labels in nodes if self.labels.matches(labels)}
        return set()


@dataclass(frozen=True, slots=True)
class Member:
    type: str
    selector: MemberSelector


@dataclass(slots=True, eq=False)
class HyperNode:
    name: str
    uid: str
    tier: int
    tier_name: str
    members: tuple[Member, ...]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> HyperNode:
        api_version = obj.get("apiVersion")
        if api_version not in HYPER_NODE_API_VERSIONS:
            raise InputError(
                f"apiVersion {api_version!r} is not supported for HyperNode; use {HYPER_NODE_API_VERSION}",
                field="apiVersion",
            )
        meta = as_mapping(obj.get("metadata"), "metadata")
        name = object_name(meta)
        spec = as_mapping(obj.get("spec"), "spec")
        if spec.get("tier") is None:
            raise InputError("Required value", field="spec.tier")
        tier = as_int(spec.get("tier"), "spec.tier", minimum=0)
        tier_name = spec.get("tierName") or ""
        if not isinstance(tier_name, str):
            raise InputError(f"must be a string, got {type(tier_name).__name__}", field="spec.tierName")
        if len(tier_name) > 253:
            raise InputError("may not be more than 253 characters", field="spec.tierName")
        raw_members = as_list(spec.get("members"), "spec.members")
        if not raw_members:
            raise InputError("member must have at least one member", field="spec.members")
        members = tuple(_member(m, f"spec.members[{i}]") for i, m in enumerate(raw_members))
        uid = meta.get("uid") or ""
        return cls(name=name, uid=str(uid), tier=tier, tier_name=tier_name, members=members, raw=obj)


def _member(data: Any, where: str) -> Member:
    member = as_mapping(data, where)
    kind = member.get("type")
    if kind is None or kind == "":
        raise InputError("Required value", field=f"{where}.type")
    if kind not in MEMBER_TYPES:
        raise InputError(
            f'Unsupported value: {kind!r}: supported values: "Node", "HyperNode"', field=f"{where}.type"
        )
    sel_where = f"{where}.selector"
    selector = as_mapping(member.get("selector"), sel_where)
    given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if selector.get(k) is not None]
    if not given:
        raise InputError(
            "member selector must have one of exactMatch, regexMatch, or labelMatch", field=sel_where
        )
    if len(given) > 1:
        raise InputError(
            "cannot specify more than one selector type (exactMatch, regexMatch, labelMatch)", field=sel_where
        )
    which = given[0]
    body = as_mapping(selector.get(which), f"{sel_where}.{which}")
    if which == "exactMatch":
        exact = body.get("name")
        if not isinstance(exact, str) or not exact:
            raise InputError("Required value", field=f"{sel_where}.exactMatch.name")
        if len(exact) > 253 or not _DNS_SUBDOMAIN.match(exact):
            raise InputError(
                f"{exact!r} must be a lowercase DNS subdomain of at most 253 characters",
                field=f"{sel_where}.exactMatch.name",
            )
        return Member(kind, MemberSelector(exact=exact))
    if which == "regexMatch":
        pattern = body.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise InputError("Required value", field=f"{sel_where}.regexMatch.pattern")
        try:
            compiled = re.compile(pattern)
        except re.error as err:
            raise InputError(
                f"member regexMatch pattern is invalid: {err}", field=f"{sel_where}.regexMatch.pattern"
            ) from err
        return Member(kind, MemberSelector(regex=compiled))
    return Member(kind, MemberSelector(labels=LabelSelector.from_dict(body, f"{sel_where}.labelMatch")))
