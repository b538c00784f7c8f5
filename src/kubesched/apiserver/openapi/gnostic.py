"""An OpenAPI v2 document in gnostic's protobuf form (``openapi_v2.Document``), which is what kubectl
asks ``/openapi/v2`` for and decodes with ``proto.Unmarshal``.

Only what kube-apiserver's documents use is encoded: info, paths with their operations, parameters
and responses, definitions with their schemas. Values that gnostic keeps as ``Any`` (vendor
extensions, ``default``, ``enum``) carry their YAML text, as gnostic writes it; JSON is YAML, and
kubectl reads them with a YAML parser. Field numbers are gnostic's ``OpenAPIv2.proto``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import orjson


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s are ten bytes of two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode()) if value else b""


def _bool(number: int, value: Any) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if value else b""


def _double(number: int, value: Any) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _strs(number: int, values: Iterable[str]) -> bytes:
    return b"".join(_bytes(number, v.encode()) for v in values)


def _any(value: Any) -> bytes:
    return _str(2, orjson.dumps(value).decode())  # Any.yaml


def _named_any(name: str, value: Any) -> bytes:
    return _str(1, name) + _bytes(2, _any(value))


def _extensions(number: int, obj: dict[str, Any]) -> bytes:
    return b"".join(_bytes(number, _named_any(k, v)) for k, v in obj.items() if k.startswith("x-"))


def schema(s: dict[str, Any]) -> bytes:
    """``openapi_v2.Schema``."""
    out = [_str(1, s.get("$ref", "")), _str(2, s.get("format", "")), _str(3, s.get("title", ""))]
    out.append(_str(4, s.get("description", "")))
    if "default" in s:
        out.append(_bytes(5, _any(s["default"])))
    for key, number in (("multipleOf", 6), ("maximum", 7), ("minimum", 9)):
        if key in s:
            out.append(_double(number, s[key]))
    out += [_bool(8, s.get("exclusiveMaximum")), _bool(10, s.get("exclusiveMinimum"))]
    for key, number in (("maxLength", 11), ("minLength", 12)):
        out.append(_int(number, s.get(key)))
    out.append(_str(13, s.get("pattern", "")))
    for key, number in (("maxItems", 14), ("minItems", 15)):
        out.append(_int(number, s.get(key)))
    out.append(_bool(16, s.get("uniqueItems")))
    for key, number in (("maxProperties", 17), ("minProperties", 18)):
        out.append(_int(number, s.get(key)))
    out.append(_strs(19, s.get("required", ())))
    out.extend(_bytes(20, _any(v)) for v in s.get("enum", ()))
    extra = s.get("additionalProperties")
    if isinstance(extra, bool):
        out.append(_bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00")))
    elif isinstance(extra, dict):
        out.append(_bytes(21, _bytes(1, schema(extra))))
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        out.append(_bytes(22, _strs(1, types)))
    if "items" in s:
        items = s["items"] if isinstance(s["items"], list) else [s["items"]]
        out.append(_bytes(23, b"".join(_bytes(1, schema(i)) for i in items)))
    out.extend(_bytes(24, schema(a)) for a in s.get("allOf", ()))
    if "properties" in s:
        props = b"".join(_bytes(1, _str(1, k) + _bytes(2, schema(v))) for k, v in s["properties"].items())
        out.append(_bytes(25, props))
    out.append(_bool(27, s.get("readOnly")))
    out.append(_extensions(31, s))
    return b"".join(out)


def _parameter(p: dict[str, Any]) -> bytes:
    """``openapi_v2.ParametersItem``."""
    if "$ref" in p:
        return _bytes(2, _str(1, p["$ref"]))
    if p.get("in") == "body":
        body = (
            _str(1, p.get("description", ""))
            + _str(2, p["name"])
            + _str(3, "body")
            + _bool(4, p.get("required"))
            + _bytes(5, schema(p.get("schema", {})))
            + _extensions(6, p)
        )
        return _bytes(1, _bytes(1, body))
    # Query and path parameters share their first fields; only their "type" and later fields move.
    where = p.get("in", "query")
    head = (
        _bool(1, p.get("required")) + _str(2, where) + _str(3, p.get("description", "")) + _str(4, p["name"])
    )
    if where == "query":
        sub = (
            head
            + _bool(5, p.get("allowEmptyValue"))
            + _str(6, p.get("type", ""))
            + _str(7, p.get("format", ""))
        )
        sub += _bool(20, p.get("uniqueItems")) + _extensions(23, p)
        oneof = 3
    else:
        sub = head + _str(5, p.get("type", "")) + _str(6, p.get("format", ""))
        sub += _bool(19, p.get("uniqueItems")) + _extensions(22, p)
        oneof = 4 if where == "path" else 1
    return _bytes(1, _bytes(2, _bytes(oneof, sub)))


def _response(r: dict[str, Any]) -> bytes:
    """``openapi_v2.ResponseValue``."""
    body = _str(1, r.get("description", ""))
    if "schema" in r:
        body += _bytes(2, _bytes(1, schema(r["schema"])))
    return _bytes(1, body)


def _operation(op: dict[str, Any]) -> bytes:
    out = [_strs(1, op.get("tags", ())), _str(2, op.get("summary", "")), _str(3, op.get("description", ""))]
    out += [
        _str(5, op.get("operationId", "")),
        _strs(6, op.get("produces", ())),
        _strs(7, op.get("consumes", ())),
    ]
    out.extend(_bytes(8, _parameter(p)) for p in op.get("parameters", ()))
    codes = b"".join(
        _bytes(1, _str(1, code) + _bytes(2, _response(r))) for code, r in op.get("responses", {}).items()
    )
    out += [_bytes(9, codes), _strs(10, op.get("schemes", ())), _bool(11, op.get("deprecated"))]
    out.append(_extensions(13, op))
    return b"".join(out)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: dict[str, Any]) -> bytes:
    out = [_bytes(_METHODS[m], _operation(item[m])) for m in _METHODS if m in item]
    out.extend(_bytes(9, _parameter(p)) for p in item.get("parameters", ()))
    out.append(_extensions(10, item))
    return b"".join(out)


def document(doc: dict[str, Any]) -> bytes:
    """``openapi_v2.Document`` for a Swagger 2.0 document as a dict."""
    info = doc.get("info", {})
    out = [
        _str(1, doc.get("swagger", "2.0")),
        _bytes(2, _str(1, info.get("title", "")) + _str(2, info.get("version", ""))),
    ]
    out += [_strs(6, doc.get("consumes", ())), _strs(7, doc.get("produces", ()))]
    paths = b"".join(
        _bytes(2, _str(1, p) + _bytes(2, _path_item(i))) for p, i in doc.get("paths", {}).items()
    )
    out.append(_bytes(8, paths))
    definitions = b"".join(
        _bytes(1, _str(1, name) + _bytes(2, schema(s))) for name, s in doc.get("definitions", {}).items()
    )
    out.append(_bytes(9, definitions))
    out.append(_extensions(16, doc))
    return b"".join(out)
