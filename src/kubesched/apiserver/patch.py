"""The three patch formats kubectl sends: JSON merge patch, JSON patch, strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.apiserver.openapi.schemas import resolve
from kubesched.registry.errors import ApiError, bad_request

#: Strategic merge: list fields merged by a key (upstream's patchMergeKey), by field name. Fields not
#: listed are replaced whole, as lists without a merge strategy are.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
#: Lists of scalars merged as sets (patchStrategy merge without a key).
SET_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        if isinstance(doc, dict):
            if p not in doc:
                raise ApiError(
                    422, "Invalid", f"the server rejected our request: path segment {p!r} not found"
                )
            doc = doc[p]
        elif isinstance(doc, list):
            doc = doc[_index(doc, p, False)]
        else:
            raise ApiError(422, "Invalid", f"the server rejected our request: cannot descend into {p!r}")
    return doc


def _index(lst: list[Any], p: str, adding: bool) -> int:
    if adding and p == "-":
        return len(lst)
    if not p.isdigit():
        raise ApiError(422, "Invalid", f"the server rejected our request: invalid list index {p!r}")
    i = int(p)
    if i > len(lst) or (not adding and i == len(lst)):
        raise ApiError(422, "Invalid", f"the server rejected our request: list index {i} out of range")
    return i


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if (
            not isinstance(op, dict)
            or not isinstance(op.get("op"), str)
            or not isinstance(op.get("path"), str)
        ):
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind = op["op"]
        parts = _pointer(op["path"])
        if kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise ApiError(
                    422, "Invalid", f"the server rejected our request: test failed at {op['path']}"
                )
            continue
        if kind in ("copy", "move"):
            if not isinstance(op.get("from"), str):
                raise bad_request(f"json patch {kind} needs 'from'")
            src = _pointer(op["from"])
            value = copy.deepcopy(_walk(doc, src))
            if kind == "move":
                doc = _remove(doc, src)
            doc = _add(doc, parts, value)
            continue
        if kind in ("add", "replace") and "value" not in op:
            raise bad_request(f"json patch {kind} needs a value")
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind == "replace":
            doc = _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op["value"]))
        else:
            raise bad_request(f"unknown json patch operation {kind!r}")
    return doc


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise ApiError(422, "Invalid", "the server rejected our request: cannot add to a scalar")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return None
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ApiError(422, "Invalid", f"the server rejected our request: nothing to remove at {last!r}")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, False)]
    else:
        raise ApiError(422, "Invalid", "the server rejected our request: cannot remove from a scalar")
    return doc


def strategic_merge_patch(target: Any, patch: Any, schema: dict[str, Any] | None = None) -> Any:
    """Kubernetes' strategic merge patch, with the ``$patch``, ``$retainKeys``, ``$setElementOrder/``
    and ``$deleteFromPrimitiveList/`` directives. ``schema`` is the kind's OpenAPI schema: a list
    merges by its ``x-kubernetes-patch-strategy`` and ``-merge-key`` there, as upstream reads them
    from the Go types; without one, the fields of :data:`MERGE_KEYS` and :data:`SET_LISTS` merge."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(out.get(name), list) and isinstance(value, list):
                out[name] = [v for v in out[name] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
            continue
        current = out.get(key)
        field = field_schema(schema, key)
        if isinstance(value, list):
            strategy, merge_key = _list_strategy(schema, field, key)
            items = None if field is None else resolve(field.get("items"))
            if not isinstance(current, list) or strategy == "replace":
                out[key] = [
                    _strip(v, items)
                    for v in value
                    if not (isinstance(v, dict) and v.get("$patch") == "delete")
                ]
            elif merge_key:
                out[key] = _merge_list(current, value, merge_key, items)
            else:
                out[key] = current + [v for v in value if v not in current]
        else:
            merged = strategic_merge_patch(current, value, field)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def field_schema(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The schema of ``key`` in an object (a property, or a map's values)."""
    if schema is None:
        return None
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return resolve(props[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return resolve(extra)
    return None


def _list_strategy(schema: dict[str, Any] | None, field: dict[str, Any] | None, key: str) -> tuple[str, str]:
    """("merge" or "replace", the merge key or "" for a set of scalars)."""
    if schema is None:
        if key in MERGE_KEYS:
            return "merge", MERGE_KEYS[key]
        return ("merge", "") if key in SET_LISTS else ("replace", "")
    field = field or {}
    strategies = str(field.get("x-kubernetes-patch-strategy", "")).split(",")
    if "merge" not in strategies:
        return "replace", ""
    return "merge", str(field.get("x-kubernetes-patch-merge-key", ""))


def _strip(value: Any, schema: dict[str, Any] | None = None) -> Any:
    """A patch value without directives, for a field that had nothing to merge into."""
    if isinstance(value, dict):
        return strategic_merge_patch({}, value, schema)
    return copy.deepcopy(value)


def _merge_list(current: list[Any], patch: list[Any], key: str, schema: dict[str, Any] | None) -> list[Any]:
    out = [copy.deepcopy(v) for v in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            if isinstance(item, dict) and item.get("$patch") == "replace":
                return []
            out.append(_strip(item, schema))
            continue
        pos = next((i for i, v in enumerate(out) if isinstance(v, dict) and v.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if pos is not None:
                del out[pos]
            continue
        if pos is None:
            out.append(_strip(item, schema))
        else:
            out[pos] = strategic_merge_patch(out[pos], item, schema)
    return out
