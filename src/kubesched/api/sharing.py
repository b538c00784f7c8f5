"""One object for the equal parts of many manifests.

The pods of one workload repeat the same containers, resources, tolerations, affinity and labels;
read as they are written, each pod holds its own copy of every one of them (a one-container pod:
five dicts and a list, about 0.8 KB). :func:`share_equal_parts` gives all the objects of a load one
dict or list for each part that is equal between them, as the manifest reader already gives them
one string for each repeated value.

Only what lies below an object's own sections (``metadata``, ``spec``, ``status``...) is shared:
those sections are the ones code copies and fills in (admission's defaults, a bind's
``nodeName``), and each object keeps its own. What lies below them is read, never written in
place: a stored object is read-only, and whoever changes a part makes a new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["share_equal_parts"]


def share_equal_parts(objects: Iterable[dict[str, Any]]) -> None:
    """Make the equal parts below the sections of ``objects`` one shared dict or list each.

    Each section keeps its keys, order and values: a value is replaced by one equal to it, of the
    same type at every level. Parts holding values other than strings, numbers, booleans and null
    (a timestamp the YAML reader made a ``datetime``) are left as they are."""
    table: dict[tuple[Any, ...], Any] = {}
    for obj in objects:
        for section in obj.values():
            if not isinstance(section, dict):
                continue
            try:
                for key, value in section.items():
                    if isinstance(value, (dict, list)):
                        shared, _ = _share(value, table)
                        if shared is not value:
                            section[key] = shared
            except RecursionError:
                # Nested too deep to walk: that object keeps its parts as they are.
                continue


def _share(value: Any, table: dict[tuple[Any, ...], Any]) -> tuple[Any, tuple[Any, ...] | None]:
    """``(the one value equal to value, its key)``; the key is None when the value cannot be
    shared. A container's key names its children by the identity of their shared instances, which
    the table keeps alive."""
    kind = type(value)
    if kind is dict:
        items: list[Any] = []
        ok = True
        for k, v in value.items():
            child, child_key = _share(v, table)
            if child is not v:
                value[k] = child
            if child_key is None:
                ok = False
            elif ok:
                items.append((type(k), k, child_key))
        if not ok:
            return value, None
        key: tuple[Any, ...] = (dict, tuple(items))
    elif kind is list:
        keys: list[Any] = []
        ok = True
        for i, v in enumerate(value):
            child, child_key = _share(v, table)
            if child is not v:
                value[i] = child
            if child_key is None:
                ok = False
            elif ok:
                keys.append(child_key)
        if not ok:
            return value, None
        key = (list, tuple(keys))
    elif kind is str or kind is int or kind is bool or value is None:
        return value, (kind, value)
    elif kind is float:
        # 0.0 and -0.0 are equal yet read back differently; their text tells them apart.
        return value, (kind, repr(value))
    else:
        return value, None
    shared = table.setdefault(key, value)
    return shared, (kind, id(shared))
