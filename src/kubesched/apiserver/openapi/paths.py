"""The operations of every served resource, as kube-apiserver's OpenAPI documents list them: one path
per collection, object and subresource, each operation with its upstream id, description,
parameters, ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``.

kubectl reads these to decide what the server supports: ``fieldValidation`` on PATCH (1.32 validates
on the server), ``dryRun`` on PATCH (1.20's ``diff`` and ``apply --dry-run=server``).
"""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.openapi.schemas import V3_REF, vendored
from kubesched.registry.strategy import Resource, Strategy

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_MEDIA = ("application/json", "application/yaml")
_PATCH_MEDIA = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
#: Subresources that read and write another kind than their resource's.
_SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
}


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _camel_group(group: str, version: str) -> str:
    # kube-apiserver's operation ids: "apps" → AppsV1, "" → CoreV1, "scheduling.k8s.io" → SchedulingV1.
    parts = (group.removesuffix(".k8s.io") or "core").split(".")
    return "".join(p[:1].upper() + p[1:] for p in parts) + version[:1].upper() + version[1:]


def _tag(group: str, version: str) -> str:
    parts = (group.removesuffix(".k8s.io") or "core").split(".")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]) + "_" + version


def _article(kind: str) -> str:
    if kind.endswith("s") and not kind.endswith("ss"):
        return " "  # plurals (Endpoints) take none
    return " an " if kind[0].lower() in "aeiou" else " a "


def _param(name: str) -> dict[str, Any]:
    param: dict[str, Any] = vendored().parameters[name]
    return param


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "in": "path",
        "name": name,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


def _content(schema: str, media: tuple[str, ...] = _MEDIA) -> dict[str, Any]:
    return {m: {"schema": {"$ref": V3_REF + schema}} for m in media}


def _ok(schema: str, *codes: tuple[str, str]) -> dict[str, Any]:
    out = {code: {"content": _content(schema), "description": text} for code, text in (("200", "OK"), *codes)}
    out["401"] = {"description": "Unauthorized"}
    return out


class _Builder:
    """The path items of one resource."""

    def __init__(self, r: Resource) -> None:
        v = vendored()
        self.r = r
        self.prefix = _camel_group(r.group, r.version)
        self.tag = _tag(r.group, r.version)
        self.gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        self.kind_schema = v.by_gvk[(r.group, r.version, r.kind)]
        self.list_schema = v.by_gvk.get((r.group, r.version, r.kind + "List"))
        self.scope = "Namespaced" if r.namespaced else ""
        base = "/" + gv_path(r.group, r.version)
        ns = "/namespaces/{namespace}" if r.namespaced else ""
        self.collection = f"{base}{ns}/{r.plural}"
        self.all_namespaces = f"{base}/{r.plural}" if r.namespaced else None
        self.item = f"{self.collection}/{{name}}"

    def _op(
        self,
        verb: str,
        action: str,
        description: str,
        params: tuple[str, ...],
        responses: dict[str, Any],
        *,
        sub: str = "",
        body: str | None = None,
        body_media: tuple[str, ...] = _MEDIA,
        gvk: dict[str, str] | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        op: dict[str, Any] = {
            "description": description,
            "operationId": f"{verb}{self.prefix}{self.scope if scope is None else scope}{self.r.kind}"
            + sub[:1].upper()
            + sub[1:],
            "parameters": [_param(p) for p in params],
            "responses": responses,
            "tags": [self.tag],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk or self.gvk,
        }
        if not op["parameters"]:
            del op["parameters"]
        if body is not None:
            op["requestBody"] = {"content": _content(body, body_media), "required": action != "delete"}
        return op

    def _scoped(self, *extra: dict[str, Any]) -> list[dict[str, Any]]:
        out = list(extra)
        if self.r.namespaced:
            out.append(_path_param("namespace", "object name and auth scope, such as for teams and projects"))
        out.append(_param("pretty"))
        return out

    def items(self) -> dict[str, dict[str, Any]]:
        r, kind, verbs = self.r, self.r.kind, self.r.verbs
        status = _META + "Status"
        out: dict[str, dict[str, Any]] = {}
        coll: dict[str, Any] = {"parameters": self._scoped()}
        if "list" in verbs and self.list_schema:
            coll["get"] = self._op(
                "list", "list", f"list or watch objects of kind {kind}", _LIST_PARAMS, _ok(self.list_schema)
            )
        if "create" in verbs:
            coll["post"] = self._op(
                "create",
                "post",
                f"create{_article(kind)}{kind}",
                _WRITE_PARAMS,
                _ok(self.kind_schema, ("201", "Created"), ("202", "Accepted")),
                body=self.kind_schema,
                scope=self.scope,
            )
        if "deletecollection" in verbs:
            coll["delete"] = self._op(
                "deletecollection",
                "deletecollection",
                f"delete collection of {kind}",
                _DELETE_PARAMS + _LIST_PARAMS,
                _ok(status),
                sub="",
                body=_META + "DeleteOptions",
                scope=self.scope,
            )
            coll["delete"]["operationId"] = f"deleteCollection{self.prefix}{self.scope}{kind}"
        out[self.collection] = coll
        if self.all_namespaces and "list" in verbs and self.list_schema:
            out[self.all_namespaces] = {
                "get": self._op(
                    "list",
                    "list",
                    f"list or watch objects of kind {kind}",
                    _LIST_PARAMS,
                    _ok(self.list_schema),
                    scope="",
                ),
                "parameters": [_param("pretty")],
            }
            out[self.all_namespaces]["get"]["operationId"] += "ForAllNamespaces"
        if "get" in verbs:
            name = _path_param("name", f"name of the {kind}")
            out[self.item] = {
                "get": self._op("read", "get", f"read the specified {kind}", (), _ok(self.kind_schema)),
                "put": self._op(
                    "replace",
                    "put",
                    f"replace the specified {kind}",
                    _WRITE_PARAMS,
                    _ok(self.kind_schema, ("201", "Created")),
                    body=self.kind_schema,
                ),
                "patch": self._op(
                    "patch",
                    "patch",
                    f"partially update the specified {kind}",
                    (*_WRITE_PARAMS, "force"),
                    _ok(self.kind_schema, ("201", "Created")),
                    body=_META + "Patch",
                    body_media=_PATCH_MEDIA,
                ),
                "delete": self._op(
                    "delete",
                    "delete",
                    f"delete{_article(kind)}{kind}",
                    _DELETE_PARAMS,
                    _ok(status, ("202", "Accepted")),
                    body=_META + "DeleteOptions",
                ),
                "parameters": self._scoped(name),
            }
            for sub in r.subresources:
                out.update(self._subresource(sub, name))
        return out

    def _subresource(self, sub: str, name: dict[str, Any]) -> dict[str, dict[str, Any]]:
        kind = self.r.kind
        path = f"{self.item}/{sub}"
        if sub in ("status", "scale"):
            schema, gvk = self.kind_schema, self.gvk
            if sub == "scale":
                g, v, k = _SUBRESOURCE_KINDS[sub]
                schema, gvk = vendored().by_gvk[(g, v, k)], {"group": g, "kind": k, "version": v}
            return {
                path: {
                    "get": self._op(
                        "read",
                        "get",
                        f"read {sub} of the specified {kind}",
                        (),
                        _ok(schema),
                        sub=sub,
                        gvk=gvk,
                    ),
                    "put": self._op(
                        "replace",
                        "put",
                        f"replace {sub} of the specified {kind}",
                        _WRITE_PARAMS,
                        _ok(schema, ("201", "Created")),
                        sub=sub,
                        body=schema,
                        gvk=gvk,
                    ),
                    "patch": self._op(
                        "patch",
                        "patch",
                        f"partially update {sub} of the specified {kind}",
                        (*_WRITE_PARAMS, "force"),
                        _ok(schema, ("201", "Created")),
                        sub=sub,
                        body=_META + "Patch",
                        body_media=_PATCH_MEDIA,
                        gvk=gvk,
                    ),
                    "parameters": self._scoped(name),
                }
            }
        if sub in ("binding", "eviction"):
            g, v, k = _SUBRESOURCE_KINDS[sub]
            schema = vendored().by_gvk[(g, v, k)]
            description = f"create {sub} of{_article(kind)}{kind}"
            op = self._op(
                "create",
                "post",
                description,
                _WRITE_PARAMS,
                _ok(schema, ("201", "Created"), ("202", "Accepted")),
                sub=sub,
                body=schema,
                gvk={"group": g, "kind": k, "version": v},
            )
            return {path: {"post": op, "parameters": self._scoped(_path_param("name", f"name of the {k}"))}}
        return {}  # log, exec, attach, portforward: streams, not objects


def resource_paths(strategy: Strategy) -> dict[str, dict[str, Any]]:
    """The OpenAPI v3 path items of one served resource."""
    return _Builder(strategy.resource).items()


def resource_schemas(strategy: Strategy) -> set[str]:
    """The names of the schemas a resource's operations read and write."""
    r = strategy.resource
    by_gvk = vendored().by_gvk
    names = {by_gvk[(r.group, r.version, r.kind)]}
    listed = by_gvk.get((r.group, r.version, r.kind + "List"))
    if listed:
        names.add(listed)
    names.update(by_gvk[_SUBRESOURCE_KINDS[s]] for s in r.subresources if s in _SUBRESOURCE_KINDS)
    names.update(_META + n for n in ("APIResourceList", "DeleteOptions", "Patch", "Status", "WatchEvent"))
    return names
