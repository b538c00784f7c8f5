"""Secrets: ``data`` as base64, ``stringData`` folded into it on every write, types with their
required keys, and immutable secrets (upstream's ``pkg/registry/core/secret`` and
``ValidateSecret``/``ValidateSecretUpdate``)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import bad_request, invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import Obj

#: Upstream's ``MaxSecretSize``: the bytes of all values together.
MAX_SECRET_SIZE = 1024 * 1024
OPAQUE = "Opaque"

_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_IMMUTABLE = "Forbidden: field is immutable when `immutable` is set"
_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", dict: "object", list: "array"}

_STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_DECODE = {ord(c): i for i, c in enumerate(_STD)}


class SecretStrategy(Strategy):
    top_fields = frozenset({"data", "stringData", "type", "immutable"})
    columns: tuple[Column, ...] = (NAME, ("Type", "string", 0), ("Data", "string", 0), AGE)
    field_paths = frozenset({"type"})

    def defaults(self, obj: dict[str, Any]) -> None:
        if not obj.get("type"):
            obj["type"] = OPAQUE

    def decode(self, body: dict[str, Any]) -> None:
        """Upstream's decoding of a v1 Secret: ``data`` values are base64 (else 400), ``stringData``
        overwrites the keys it names in ``data`` and is not kept, an empty type is Opaque."""
        data = body.get("data")
        if data is not None and not isinstance(data, dict):
            raise _cannot_decode("data", data, "map[string][]uint8")
        decoded: dict[str, bytes] = {}
        for key, value in (data or {}).items():
            if value is None:
                decoded[key] = b""
                continue
            if not isinstance(value, str):
                raise _cannot_decode("data", value, "[]uint8")
            try:
                decoded[key] = go_base64_decode(value)
            except _CorruptInput as exc:
                raise bad_request(
                    'Secret in version "v1" cannot be handled as a Secret: '
                    f"illegal base64 data at input byte {exc}"
                ) from None
        string_data = body.pop("stringData", None)
        if string_data is not None and not isinstance(string_data, dict):
            raise _cannot_decode("stringData", string_data, "map[string]string")
        for key, value in (string_data or {}).items():
            if not isinstance(value, str):
                raise _cannot_decode("stringData", value, "string")
            decoded[key] = value.encode()
        if data is not None or string_data:
            body["data"] = {key: base64.b64encode(decoded[key]).decode() for key in sorted(decoded)}
        kind = body.get("type")
        if kind is not None and not isinstance(kind, str):
            raise _cannot_decode("type", kind, "v1.SecretType")
        if not kind:
            body["type"] = OPAQUE
        immutable = body.get("immutable")
        if immutable is not None and not isinstance(immutable, bool):
            raise _cannot_decode("immutable", immutable, "bool")

    def validate(self, body: dict[str, Any]) -> None:
        causes = _secret_errors(body)
        if causes:
            raise invalid("Secret", "", str(body["metadata"].get("name", "")), causes)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        super().prepare_for_update(old, new)
        causes: list[tuple[str, str, str]] = []
        if new.get("type") != old.get("type"):
            why = f'Invalid value: "{new.get("type")}": field is immutable'
            causes.append(("FieldValueInvalid", "type", why))
        if old.get("immutable") is True:
            if new.get("immutable") is not True:
                causes.append(("FieldValueForbidden", "immutable", _IMMUTABLE))
            if (new.get("data") or {}) != (old.get("data") or {}):
                causes.append(("FieldValueForbidden", "data", _IMMUTABLE))
        if causes:
            raise invalid("Secret", "", str(new["metadata"].get("name", "")), causes)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        data = obj.get("data")
        return [
            meta_of(obj).get("name"),
            obj.get("type") or OPAQUE,
            len(data) if isinstance(data, dict) else 0,
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


def _secret_errors(body: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``ValidateSecret``: valid keys, the size limit, and each type's required keys."""
    causes: list[tuple[str, str, str]] = []
    data: dict[str, str] = body.get("data") or {}
    size = 0
    for key, value in data.items():
        for why in _key_errors(key):
            causes.append(("FieldValueInvalid", f"data[{key}]", f'Invalid value: "{key}": {why}'))
        size += len(value) * 3 // 4 - value[-2:].count("=")
    if size > MAX_SECRET_SIZE:
        causes.append(("FieldValueTooLong", "data", f"Too long: must have at most {MAX_SECRET_SIZE} bytes"))
    kind = body.get("type")
    annotations = meta_of(body).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            causes.append(
                (
                    "FieldValueRequired",
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "Required value",
                )
            )
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            causes.append(("FieldValueRequired", f"data[{key}]", "Required value"))
        else:
            problem = _json_object_error(base64.b64decode(data[key]))
            if problem:
                why = f'Invalid value: "<secret contents redacted>": {problem}'
                causes.append(("FieldValueInvalid", f"data[{key}]", why))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            # Upstream words these paths so.
            causes.append(("FieldValueRequired", "data[%s][username]", "Required value"))
            causes.append(("FieldValueRequired", "data[%s][password]", "Required value"))
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            causes.append(("FieldValueRequired", "data[%s][ssh-privatekey]", "Required value"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                causes.append(("FieldValueRequired", f"data[{key}]", "Required value"))
    return causes


def _key_errors(key: str) -> list[str]:
    """apimachinery's ``IsConfigMapKey``."""
    errors: list[str] = []
    if len(key) > 253:
        errors.append("must be no more than 253 characters")
    if not _KEY.fullmatch(key):
        errors.append(_KEY_MESSAGE)
    if key == ".":
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _json_object_error(raw: bytes) -> str | None:
    """What Go's ``json.Unmarshal`` into a map says of ``raw``; None when it decodes."""
    text = raw.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            return "unexpected end of JSON input"
        char = _go_char(text[exc.pos])
        if exc.msg.startswith("Invalid control character"):
            return f"invalid character {char} in string literal"
        if exc.msg.startswith("Invalid \\escape"):
            return f"invalid character {char} in string escape code"
        return f"invalid character {char} {_GO_SCANNER.get(exc.msg) or _after_element(text, exc.pos)}"
    if value is None or isinstance(value, dict):
        return None
    shown = _JSON_TYPES.get(type(value), "value")
    return f"json: cannot unmarshal {shown} into Go value of type map[string]interface {{}}"


#: Where Go's JSON scanner says it was, for each of Python's complaints.
_GO_SCANNER = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
}


def _after_element(text: str, pos: int) -> str:
    """Go's words for a missing comma: inside the innermost open object or array at ``pos``."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return "after array element" if stack and stack[-1] == "[" else "after object key:value pair"


def _go_char(char: str) -> str:
    """A character as Go's JSON errors quote it."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    if char == "\\":
        return "'\\\\'"
    if char.isprintable():
        return f"'{char}'"
    return repr(char)


def _cannot_decode(field: str, value: Any, go_type: str) -> Exception:
    return bad_request(
        'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal '
        f"{_JSON_TYPES.get(type(value), 'value')} into Go struct field Secret.{field} of type {go_type}"
    )


class _CorruptInput(ValueError):
    """Go's ``base64.CorruptInputError``: the offset of the first bad byte."""


def go_base64_decode(text: str) -> bytes:
    """Standard base64 (padded) as Go's ``base64.StdEncoding.Decode`` reads it: newlines are
    skipped, anything else outside the alphabet is an error at its offset."""
    src = text.encode("utf-8", "surrogatepass")
    out = bytearray()
    si = 0
    n = len(src)
    while si < n:
        quantum: list[int] = []
        length = 4
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return bytes(out)
                # A quantum cut short without padding.
                raise _CorruptInput(si - j)
            ch = src[si]
            si += 1
            value = _DECODE.get(ch)
            if value is not None:
                quantum.append(value)
                j += 1
                continue
            if ch in (0x0A, 0x0D):
                continue
            if ch != ord("="):
                raise _CorruptInput(si - 1)
            # Padding: only after two or three symbols, and then nothing but newlines.
            if j in (0, 1):
                raise _CorruptInput(si - 1)
            if j == 2:
                while si < n and src[si] in (0x0A, 0x0D):
                    si += 1
                if si == n:
                    raise _CorruptInput(n)
                if src[si] != ord("="):
                    raise _CorruptInput(si - 1)
                si += 1
            while si < n and src[si] in (0x0A, 0x0D):
                si += 1
            if si < n:
                raise _CorruptInput(si)
            length = j
            break
        quantum += [0] * (4 - len(quantum))
        value = quantum[0] << 18 | quantum[1] << 12 | quantum[2] << 6 | quantum[3]
        out += bytes(((value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF))[: length - 1]
        if length < 4:
            return bytes(out)
    return bytes(out)


STRATEGY = SecretStrategy(Resource("", "v1", "secrets", "secret", "Secret", True))
