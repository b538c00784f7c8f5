"""Protobuf request bodies decode to the JSON a client would have sent."""

from __future__ import annotations

import pytest

from kubesched.apiserver.protobuf import MAGIC, ProtobufError, decode


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return MAGIC + _field(1, _field(1, api_version.encode()) + _field(2, kind.encode())) + _field(2, raw)


def test_deployment_with_zero_replicas_and_empty_fields():
    labels = _field(11, _field(1, b"app") + _field(2, b"web"))
    meta = _field(1, b"web") + _field(2, b"") + _field(7, 0) + labels
    container = (
        _field(1, b"nginx")
        + _field(2, b"nginx")
        + _field(16, 0)
        + _field(8, _field(2, _field(1, b"cpu") + _field(2, _field(1, b"100m"))))
    )
    template = _field(1, labels) + _field(2, _field(2, container) + _field(3, b""))
    spec = _field(1, 0) + _field(2, _field(1, _field(1, b"app") + _field(2, b"web"))) + _field(3, template)
    body = _envelope("apps/v1", "Deployment", _field(1, meta) + _field(2, spec) + _field(3, b""))
    assert decode(body) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        },
    }


def test_refused_bodies():
    with pytest.raises(ProtobufError):
        decode(b"{}")
    with pytest.raises(ProtobufError):
        decode(_envelope("v1", "Node", b""))  # a kind no kubectl command sends in protobuf
    with pytest.raises(ProtobufError):
        decode(MAGIC + b"\x0a\xff")
