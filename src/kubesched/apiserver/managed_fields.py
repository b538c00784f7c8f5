"""Server-side apply's field management: which manager owns which fields of an object
(``metadata.managedFields``), the conflicts an apply meets, and how an applied configuration merges
into the object.

A field is named by its path from the object's root: ``f:<name>`` steps into a map, ``k:{...}``
into the item of a list merged by key, ``v:<value>`` names a value of a list merged as a set, and
a path ending in ``.`` is the keyed item itself. How each list merges is read from the kind's
OpenAPI schema as structured-merge-diff reads it (containers by name, container ports by
``containerPort`` and ``protocol``, finalizers as a set, tolerations atomic); atomic lists and
empty maps are owned whole. The paths are kept in ``managedFields`` as upstream's ``FieldsV1``
trees.

An apply by a manager owns exactly the fields of its configuration. A field another manager owns is
a conflict when the configuration gives it another value than the object has (the same value is
shared ownership); ``force`` takes the conflicting fields over. A field the manager applied before
and leaves out now is removed from the object unless another manager owns it. A write that is not
an apply (create, update, patch, the scale subresource) makes its manager the owner of the fields it
changed, taken from whoever owned them: these are tracked on objects that have managed fields, that
is, once an object has been applied.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kubesched.apiserver.openapi.schemas import resolve
from kubesched.apiserver.patch import MERGE_KEYS, SET_LISTS, field_schema
from kubesched.registry.errors import ApiError

Path = tuple[str, ...]

#: Top-level fields nobody owns (identity and the status a main-resource write does not change).
_UNOWNED_TOP = frozenset({"apiVersion", "kind", "status"})
#: Metadata the server sets or identifies the object by.
_UNOWNED_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_MISSING = object()
_PRESENT = object()

APPLY = "Apply"
UPDATE = "Update"


# -- field sets ----------------------------------------------------------------------------------
#: How a list merges: as a map keyed by some of its items' fields, as a set of scalars, or whole.
MAP, SET, ATOMIC = "map", "set", "atomic"
Schema = dict[str, Any] | None


def list_semantics(field: str, schema: Schema) -> tuple[str, tuple[str, ...]]:
    """How the list ``field`` (whose OpenAPI schema is ``schema``) merges, with its key fields, as
    structured-merge-diff reads the schema: ``x-kubernetes-list-type`` and its map keys; without
    one, a ``merge`` patch strategy with a merge key is a map on that key, without a key a set;
    anything else is atomic. A kind with no built-in schema keys the lists of :data:`MERGE_KEYS`
    by their usual field."""
    if schema is None:
        key = MERGE_KEYS.get(field)
        if key is not None:
            return MAP, (key,)
        return (SET, ()) if field in SET_LISTS else (ATOMIC, ())
    kind = schema.get("x-kubernetes-list-type")
    if kind is None:
        if "merge" not in str(schema.get("x-kubernetes-patch-strategy", "")).split(","):
            return ATOMIC, ()
        merge_key = schema.get("x-kubernetes-patch-merge-key")
        return (MAP, (str(merge_key),)) if merge_key else (SET, ())
    if kind == MAP:
        keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
        return (MAP, keys) if keys else (ATOMIC, ())
    return (SET, ()) if kind == SET else (ATOMIC, ())


def _items(schema: Schema) -> Schema:
    return None if schema is None else resolve(schema.get("items"))


def _key_defaults(keys: tuple[str, ...], items: Schema) -> dict[str, Any]:
    """The schema defaults of a map list's key fields (a container port's ``protocol``)."""
    props = (items or {}).get("properties") or {}
    return {k: props[k]["default"] for k in keys if isinstance(props.get(k), dict) and "default" in props[k]}


def with_key_defaults(obj: Any, schema: Schema, field: str = "") -> Any:
    """``obj`` with the key fields its map lists' items leave out filled from the schema's
    defaults, as the object will hold them once defaulted."""
    if isinstance(obj, dict):
        return {k: with_key_defaults(v, field_schema(schema, k), k) for k, v in obj.items()}
    if isinstance(obj, list) and schema is not None:
        kind, keys = list_semantics(field, schema)
        items = _items(schema)
        defaults = _key_defaults(keys, items) if kind == MAP else {}
        out = []
        for item in obj:
            if defaults and isinstance(item, dict):
                item = {**{k: v for k, v in defaults.items() if k not in item}, **item}
            out.append(with_key_defaults(item, items))
        return out
    return obj


def field_set(obj: Mapping[str, Any], schema: Schema = None) -> set[Path]:
    """The paths of the fields ``obj`` sets (its leaves, its keyed list items and set values)."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in _UNOWNED_TOP:
            continue
        node = field_schema(schema, key)
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if mkey not in _UNOWNED_METADATA:
                    _walk(mvalue, ("f:metadata", f"f:{mkey}"), mkey, out, field_schema(node, mkey))
            continue
        _walk(value, (f"f:{key}",), key, out, node)
    return out


def _keyed(field: str, value: Any, schema: Schema) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """The key fields (and their defaults) of a map list whose items all carry them or have them
    defaulted (None: not merged by key)."""
    kind, keys = list_semantics(field, schema)
    if kind != MAP or not isinstance(value, list) or not value:
        return None
    defaults = _key_defaults(keys, _items(schema))
    if all(isinstance(item, dict) and all(k in item or k in defaults for k in keys) for item in value):
        return keys, defaults
    return None


def _is_set(field: str, value: Any, schema: Schema) -> bool:
    return (
        list_semantics(field, schema)[0] == SET
        and isinstance(value, list)
        and all(v is None or isinstance(v, str | int | float | bool) for v in value)
    )


def _item(keys: tuple[str, ...], item: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    return "k:" + orjson.dumps({k: item.get(k, defaults.get(k)) for k in sorted(keys)}).decode()


def _value_step(value: Any) -> str:
    return "v:" + orjson.dumps(value).decode()


def _walk(value: Any, path: Path, field: str, out: set[Path], schema: Schema) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _walk(sub, (*path, f"f:{key}"), key, out, field_schema(schema, key))
        return
    keyed = _keyed(field, value, schema)
    if keyed is not None:
        keys, defaults = keyed
        items = _items(schema)
        for item in value:
            at = (*path, _item(keys, item, defaults))
            out.add((*at, "."))
            for sub_key, sub in item.items():
                _walk(sub, (*at, f"f:{sub_key}"), sub_key, out, field_schema(items, sub_key))
        return
    if isinstance(value, list) and list_semantics(field, schema)[0] != ATOMIC and not value:
        return  # an empty map or set list owns no item, and not the list itself
    if value and _is_set(field, value, schema):
        out.update((*path, _value_step(v)) for v in value)
        return
    out.add(path)


def value_at(obj: Any, path: Path) -> Any:
    """The value at ``path`` (a private sentinel when absent). A keyed item itself (a path ending
    in ``.``) has no value of its own, only presence: its fields are paths of their own."""
    current = obj
    for step in path:
        if step == ".":
            return _PRESENT
        if step.startswith("f:"):
            if not isinstance(current, dict) or step[2:] not in current:
                return _MISSING
            current = current[step[2:]]
        elif step.startswith("v:"):
            wanted_value = _set_value(step)
            if not isinstance(current, list) or wanted_value is _MISSING or wanted_value not in current:
                return _MISSING
            return _PRESENT
        else:
            wanted = _item_key(step)
            if wanted is None or not isinstance(current, list):
                return _MISSING
            current = next((i for i in current if _matches(i, wanted)), _MISSING)
            if current is _MISSING:
                return _MISSING
    return current


def _item_key(step: str) -> dict[str, Any] | None:
    """The fields a ``k:`` step names its item by (None: not a valid key)."""
    try:
        wanted = orjson.loads(step[2:])
    except orjson.JSONDecodeError:
        return None
    return wanted if isinstance(wanted, dict) and wanted else None


def _set_value(step: str) -> Any:
    try:
        return orjson.loads(step[2:])
    except orjson.JSONDecodeError:
        return _MISSING


def _matches(item: Any, wanted: Mapping[str, Any]) -> bool:
    return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for step in path:
            node = node.setdefault(step, {})
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for step, sub in tree.items():
        valid = (
            step == "."
            or step.startswith("f:")
            or (step.startswith("k:") and _item_key(step))
            or (step.startswith("v:") and _set_value(step) is not _MISSING)
        )
        if not valid:
            # List indices (``i:``) are not tracked here.
            continue
        path = (*prefix, step)
        if step == "." or not sub:
            out.add(path)
        else:
            out |= from_fields_v1(sub, path)
    return out


def path_text(path: Path) -> str:
    """A path as upstream prints it: ``.spec.containers[name="c"].image``."""
    out = ""
    for step in path:
        if step == ".":
            continue
        if step.startswith("f:"):
            out += "." + step[2:]
        elif step.startswith("v:"):
            out += "[=" + step[2:] + "]"
        else:
            wanted = _item_key(step) or {}
            out += "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in wanted.items()) + "]"
    return out


# -- entries -------------------------------------------------------------------------------------
class Entry:
    """One ``managedFields`` entry: a manager, its operation, and the fields it owns."""

    __slots__ = ("api_version", "manager", "operation", "paths", "subresource", "time")

    def __init__(
        self,
        manager: str,
        operation: str,
        api_version: str,
        time: str,
        paths: set[Path],
        subresource: str = "",
    ) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.time = time
        self.paths = paths
        self.subresource = subresource

    @classmethod
    def parse(cls, raw: Any) -> Entry | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("manager"), str):
            return None
        return cls(
            raw["manager"],
            str(raw.get("operation") or UPDATE),
            str(raw.get("apiVersion") or ""),
            str(raw.get("time") or ""),
            from_fields_v1(raw.get("fieldsV1")),
            str(raw.get("subresource") or ""),
        )

    def same_owner(self, manager: str, operation: str, subresource: str) -> bool:
        return (self.manager, self.operation, self.subresource) == (manager, operation, subresource)

    def shown(self) -> str:
        """The manager as upstream's conflict messages name it."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
            if self.time:
                text += f" at {self.time}"
        return text

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.paths),
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def entries_of(obj: Mapping[str, Any] | None) -> list[Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields")
    if not isinstance(raw, list):
        return []
    return [e for e in (Entry.parse(r) for r in raw) if e is not None]


def _store(obj: dict[str, Any], entries: list[Entry]) -> None:
    kept = [e.dump() for e in entries if e.paths]
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return  # not an object: validation refuses it, naming the field
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


# -- apply ---------------------------------------------------------------------------------------
def apply(
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    now: str,
    schema: Schema = None,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (None: it does not exist yet),
    its ``managedFields`` brought up to date; an :class:`ApiError` 409 on conflicts unless
    ``force``. ``schema`` is the kind's OpenAPI schema: it says how each list merges."""
    entries = entries_of(live)
    # The configuration owns the fields it gives; it is compared and merged as the object will
    # hold it, its items' key fields defaulted.
    applied = field_set(config, schema)
    config = with_key_defaults(dict(config), schema)
    mine = next((e for e in entries if e.same_owner(manager, APPLY, "")), None)
    conflicts: list[tuple[Entry, Path]] = []
    for entry in entries:
        if entry is mine:
            continue
        for path in sorted(applied & entry.paths):
            if value_at(config, path) != value_at(live, path):
                conflicts.append((entry, path))
    if conflicts and not force:
        raise conflict_error(conflicts)
    for entry, path in conflicts:
        entry.paths.discard(path)
    others: set[Path] = set().union(*(e.paths for e in entries if e is not mine))
    dropped = (mine.paths if mine is not None else set()) - applied - others
    # A keyed item goes only when nobody else owns a field inside it; it goes with its fields, so
    # items are removed before the fields that name them (a removed key field would lose it).
    held = {p[:i] for p in others for i in range(1, len(p))}
    dropped = {p for p in dropped if not (p[-1] == "." and p[:-1] in held)}
    out: dict[str, Any] = copy.deepcopy(dict(live)) if live is not None else {}
    for path in sorted(dropped, key=lambda p: (len(p), p[-1] != ".")):
        _remove(out, path)
    out = _merge(out, dict(config), "", schema)
    if mine is None:
        mine = Entry(manager, APPLY, api_version, now, set())
        entries.append(mine)
    mine.paths, mine.api_version, mine.time = applied, api_version, now
    _store(out, entries)
    return out


def conflict_error(conflicts: list[tuple[Entry, Path]]) -> ApiError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {e.shown()}", "field": path_text(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.shown()}: {path_text(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.shown(), []).append(path_text(path))
        lines: list[str] = []
        for shown in sorted(by_manager):
            lines.append(f"conflicts with {shown}:")
            lines += [f"- {p}" for p in by_manager[shown]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, details={"causes": causes})


def _merge(live: Any, config: Any, field: str, schema: Schema) -> Any:
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = _merge(live.get(key, _MISSING), value, key, field_schema(schema, key))
        return out
    kind, keys = list_semantics(field, schema)
    keyed = (
        kind == MAP
        and isinstance(config, list)
        and all(isinstance(item, dict) and all(k in item for k in keys) for item in config)
    )
    if keyed and isinstance(live, list):
        # The applied items join the others' (an empty list leaves them as they are).
        items = _items(schema)
        merged = list(live)
        for item in config:
            pos = next(
                (
                    i
                    for i, cur in enumerate(merged)
                    if isinstance(cur, dict) and all(cur.get(k) == item[k] for k in keys)
                ),
                None,
            )
            if pos is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[pos] = _merge(merged[pos], item, "", items)
        return merged
    if isinstance(live, list) and _is_set(field, config, schema):
        return list(live) + [copy.deepcopy(v) for v in config if v not in live]
    return copy.deepcopy(config)


def _remove(obj: Any, path: Path) -> None:
    """Remove the field (or keyed item, for a path ending in ``.``, or set value) at ``path``, if
    present."""
    if path and path[-1].startswith("v:"):
        parent, gone = value_at(obj, path[:-1]), _set_value(path[-1])
        if isinstance(parent, list):
            parent[:] = [v for v in parent if v != gone]
        return
    if path and path[-1] == ".":
        parent, step = value_at(obj, path[:-2]), path[-2]
        wanted = _item_key(step)
        if isinstance(parent, list) and wanted is not None:
            parent[:] = [i for i in parent if not _matches(i, wanted)]
        return
    parent = value_at(obj, path[:-1])
    if isinstance(parent, dict) and path[-1].startswith("f:"):
        parent.pop(path[-1][2:], None)


# -- other writes ---------------------------------------------------------------------------------
def track_update(
    old: Mapping[str, Any],
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    now: str,
    subresource: str = "",
    schema: Schema = None,
) -> None:
    """After a write that is not an apply: ``manager`` owns the fields it changed, taken from the
    others. Only objects that have managed fields are tracked."""
    entries = entries_of(old)
    if not entries:
        meta = new.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        return
    before, after = field_set(old, schema), field_set(new, schema)
    changed = {p for p in after if value_at(old, p) != value_at(new, p)} | (before - after)
    if changed:
        for entry in entries:
            entry.paths -= changed
        owned = changed & after
        if owned:
            mine = next((e for e in entries if e.same_owner(manager, UPDATE, subresource)), None)
            if mine is None:
                mine = Entry(manager, UPDATE, api_version, now, set(), subresource)
                entries.append(mine)
            mine.paths |= owned
            mine.api_version, mine.time = api_version, now
    _store(new, entries)


def manager_from_user_agent(user_agent: str) -> str:
    """Upstream's default manager for a write that names none: the User-Agent up to its first
    ``/``, at most 128 characters."""
    return user_agent.split("/", 1)[0][:128]
