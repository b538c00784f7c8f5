"""Label and field selectors as they appear in query strings."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.registry.errors import bad_request

Match = Callable[[Mapping[str, Any]], bool]

_REQ = re.compile(
    r"""\s*(?:
        (?P<not>!)\s*(?P<nkey>[^\s,=!()]+)
      | (?P<key>[^\s,=!()]+)\s*(?:
            (?P<op>==|=|!=)\s*(?P<value>[^\s,()=!]*)
          | \s(?P<setop>in|notin)\s*\((?P<values>[^)]*)\)
        )?
    )\s*(?:,|$)""",
    re.X,
)


Labels = Mapping[str, Any]


def _has(key: str) -> Callable[[Labels], bool]:
    return lambda labels: key in labels


def _lacks(key: str) -> Callable[[Labels], bool]:
    return lambda labels: key not in labels


def _equals(key: str, value: str, want: bool) -> Callable[[Labels], bool]:
    return lambda labels: (key in labels and labels[key] == value) == want


def _within(key: str, values: frozenset[str], want: bool) -> Callable[[Labels], bool]:
    return lambda labels: (key in labels and labels[key] in values) == want


def parse_label_selector(text: str) -> Match:
    """``a=b,c!=d,e in (x,y),f notin (z),g,!h`` → a predicate over an object's labels."""
    checks: list[Callable[[Labels], bool]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _REQ.match(text, pos)
        if m is None or m.end() == pos:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        pos = m.end()
        if m.group("not"):
            checks.append(_lacks(m.group("nkey")))
        elif m.group("op"):
            checks.append(_equals(m.group("key"), m.group("value"), m.group("op") != "!="))
        elif m.group("setop"):
            values = frozenset(v.strip() for v in m.group("values").split(",") if v.strip())
            checks.append(_within(m.group("key"), values, m.group("setop") == "in"))
        else:
            checks.append(_has(m.group("key")))

    def match(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(c(labels) for c in checks)

    return match


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    if path == "source" and isinstance(obj.get("source"), Mapping):
        return str(obj["source"].get("component") or "")
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str, allowed: frozenset[str]) -> Match:
    """``spec.nodeName=n1,status.phase!=Running`` → a predicate over objects whose selectable
    fields are ``allowed``."""
    checks: list[tuple[str, bool, str]] = []
    for term in text.split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            path, value = term.split("!=", 1)
            equal = False
        elif "==" in term:
            path, value = term.split("==", 1)
            equal = True
        elif "=" in term:
            path, value = term.split("=", 1)
            equal = True
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        path = path.strip()
        if path not in allowed:
            raise bad_request(f"field label not supported: {path}")
        checks.append((path, equal, value.strip()))

    def match(obj: Mapping[str, Any]) -> bool:
        return all((_field_value(obj, p) == v) == eq for p, eq, v in checks)

    return match
