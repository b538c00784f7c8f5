"""Server-side apply's field management: which manager owns which fields of an object
(``metadata.managedFields``), the conflicts an apply meets, and how an applied configuration merges
into the object.

A field is named by its path from the object's root: ``f:<name>`` steps into a map, ``k:{...}``
into the item of a list merged by key (containers by name, tolerations are atomic), and a path
ending in ``.`` is the item itself. Lists without a merge key, and empty maps, are owned whole.
The paths are kept in ``managedFields`` as upstream's ``FieldsV1`` trees.

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

from kubesched.apiserver.patch import MERGE_KEYS
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
def field_set(obj: Mapping[str, Any]) -> set[Path]:
    """The paths of the fields ``obj`` sets (its leaves and its keyed list items)."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in _UNOWNED_TOP:
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if mkey not in _UNOWNED_METADATA:
                    _walk(mvalue, ("f:metadata", f"f:{mkey}"), mkey, out)
            continue
        _walk(value, (f"f:{key}",), key, out)
    return out


def _keyed(field: str, value: Any) -> str | None:
    """The merge key of a list field whose items all carry it (None: the list is atomic)."""
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, dict) and key in item for item in value):
        return key
    return None


def _item(key: str, item: Mapping[str, Any]) -> str:
    return "k:" + orjson.dumps({key: item[key]}).decode()


def _walk(value: Any, path: Path, field: str, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _walk(sub, (*path, f"f:{key}"), key, out)
        return
    key = _keyed(field, value)
    if key is not None:
        for item in value:
            at = (*path, _item(key, item))
            out.add((*at, "."))
            for sub_key, sub in item.items():
                _walk(sub, (*at, f"f:{sub_key}"), sub_key, out)
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
        if not (step == "." or step.startswith("f:") or (step.startswith("k:") and _item_key(step))):
            # Values of set lists (``v:``) and list indices (``i:``) are not tracked here.
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
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (None: it does not exist yet),
    its ``managedFields`` brought up to date; an :class:`ApiError` 409 on conflicts unless
    ``force``."""
    entries = entries_of(live)
    applied = field_set(config)
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
    out: dict[str, Any] = copy.deepcopy(dict(live)) if live is not None else {}
    for path in sorted(dropped, key=len, reverse=True):
        _remove(out, path)
    out = _merge(out, dict(config))
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


def _merge(live: Any, config: Any, field: str = "") -> Any:
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = _merge(live.get(key, _MISSING), value, key)
        return out
    key = _keyed(field, config)
    if key is not None and isinstance(live, list):
        merged = list(live)
        for item in config:
            pos = next(
                (i for i, cur in enumerate(merged) if isinstance(cur, dict) and cur.get(key) == item[key]),
                None,
            )
            if pos is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[pos] = _merge(merged[pos], item)
        return merged
    return copy.deepcopy(config)


def _remove(obj: Any, path: Path) -> None:
    """Remove the field (or keyed item, for a path ending in ``.``) at ``path``, if present."""
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
) -> None:
    """After a write that is not an apply: ``manager`` owns the fields it changed, taken from the
    others. Only objects that have managed fields are tracked."""
    entries = entries_of(old)
    if not entries:
        meta = new.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        return
    before, after = field_set(old), field_set(new)
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
