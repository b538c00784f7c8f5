"""Review kinds: objects a client creates to ask the server a question about itself (upstream's
SelfSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview REST storages). They are
answered at once and never stored, so they only take ``create``.

The answers are about the user a request acts as, and about what ``serve`` lets that user do:
every request that carries the server's token is allowed, as kube-apiserver's ``AlwaysAllow``
authorizer allows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubesched.registry.errors import bad_request, invalid
from kubesched.registry.strategy import Resource, Strategy

#: Upstream's group names for every authenticated user and for the unrestricted one.
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a request acts as (upstream's ``user.Info``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The ``UserInfo`` of authentication.k8s.io (empty fields left out, as upstream's)."""
        out: dict[str, Any] = {"username": self.username}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra.items()}
        return out


def resource(group: str, plural: str, kind: str) -> Resource:
    """The discovery entry of a cluster-wide review kind."""
    return Resource(group, "v1", plural, "", kind, False, verbs=("create",))


class ReviewStrategy(Strategy):
    """A kind that is created, answered and forgotten."""

    top_fields = frozenset({"spec", "status"})

    def review(self, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
        """The answer to ``body`` (type meta already checked) asked by ``user``."""
        raise NotImplementedError

    def answer(self, body: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        res = self.resource
        out: dict[str, Any] = {
            "kind": res.kind,
            "apiVersion": res.group_version,
            "metadata": {"creationTimestamp": None},
        }
        if "spec" in self.top_fields:
            out["spec"] = body.get("spec") or {}
        out["status"] = status
        return out

    def spec_of(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The body's spec; a spec that is not an object is refused as upstream's decoder does."""
        spec = body.get("spec")
        if spec is None:
            return {}
        if not isinstance(spec, dict):
            raise self.cannot_decode("spec", spec, f"v1.{self.kind}Spec")
        return spec

    def cannot_decode(self, path: str, value: Any, go_type: str) -> Exception:
        kind = self.kind
        return bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
            f"{_json_type(value)} into Go struct field {kind}.{path} of type {go_type}"
        )

    def empty_metadata_errors(self, body: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """Upstream refuses a review whose metadata says anything: it names nothing that is kept."""
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            return []
        said = {k: v for k, v in meta.items() if v not in (None, "", {}, []) and k != "creationTimestamp"}
        if not said:
            return []
        shown = orjson.dumps(said, option=orjson.OPT_SORT_KEYS).decode()
        return [("FieldValueInvalid", "metadata", f"Invalid value: {shown}: must be empty")]

    def refuse(self, causes: list[tuple[str, str, str]]) -> Exception:
        # Upstream names the kind of the internal object, which carries no type meta: "" here.
        return invalid("", self.resource.group, "", causes)


_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", dict: "object", list: "array"}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "value")
