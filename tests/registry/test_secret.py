"""The Secret strategy: base64 as Go reads it, stringData folded into data, each type's required
keys, the size limit, and what an update of an immutable secret may not change."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubesched.registry.core.secret import STRATEGY, go_base64_decode
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND, NAMESPACED_KINDS


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, **fields}


def _written(body: dict[str, Any]) -> dict[str, Any]:
    STRATEGY.decode(body)
    STRATEGY.validate(body)
    return body


def _refused(body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        _written(body)
    return refused.value


def test_secret_is_served_namespaced_with_its_fields():
    assert BY_KIND["Secret"] is STRATEGY and "Secret" in NAMESPACED_KINDS
    assert {"data", "stringData", "type", "immutable"} <= STRATEGY.known_fields
    assert "spec" not in STRATEGY.known_fields
    assert [c[0] for c in STRATEGY.columns] == ["Name", "Type", "Data", "Age"]
    row = STRATEGY.row(
        {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"a": "", "b": ""}}, 0
    )
    assert row == ["s", "kubernetes.io/tls", 2, "<unknown>"]


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("", b""),
        ("YWJj", b"abc"),
        ("YWI=", b"ab"),
        ("YQ==", b"a"),
        ("YWJj\nZA==", b"abcd"),
        ("YQ==\r\n", b"a"),
    ],
)
def test_base64_is_read_as_go_reads_it(text, decoded):
    assert go_base64_decode(text) == decoded


@pytest.mark.parametrize(
    ("text", "offset"),
    [("abc", 0), ("YQ=", 3), ("YQ=x", 2), ("YQ===", 4), ("Y===", 1), ("YW!j", 2), ("YQ==x", 4), ("=abc", 0)],
)
def test_bad_base64_is_a_bad_request_naming_gos_offset(text, offset):
    refused = _refused(_secret(data={"a": text}))
    assert refused.code == 400
    assert refused.message == (
        f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte {offset}'
    )


def test_string_data_overwrites_data_and_is_not_kept():
    body = _written(_secret(data={"a": _b64("old"), "b": "Yg=="}, stringData={"a": "new", "z": "zz"}))
    assert body["data"] == {"a": _b64("new"), "b": "Yg==", "z": _b64("zz")}
    assert "stringData" not in body and body["type"] == "Opaque"
    # Values are kept in Go's encoding: newlines in the input are gone.
    assert _written(_secret(data={"k": "YWJj\nZA=="}))["data"] == {"k": "YWJjZA=="}


def test_fields_of_the_wrong_type_are_a_bad_request():
    for body, words in (
        (_secret(data={"a": 5}), "number into Go struct field Secret.data of type []uint8"),
        (_secret(data=["a"]), "array into Go struct field Secret.data of type map[string][]uint8"),
        (_secret(stringData={"a": 5}), "number into Go struct field Secret.stringData of type string"),
        (_secret(immutable="yes"), "string into Go struct field Secret.immutable of type bool"),
        (_secret(type=3), "number into Go struct field Secret.type of type v1.SecretType"),
    ):
        refused = _refused(body)
        assert refused.code == 400 and words in refused.message, refused.message


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    refused = _refused(body)
    assert refused.code == 422 and refused.reason == "Invalid"
    return [(c["field"], c["message"]) for c in refused.details["causes"]]  # type: ignore[index]


def test_each_type_requires_its_keys():
    assert _causes(_secret(type="kubernetes.io/tls", data={})) == [
        ("data[tls.crt]", "Required value"),
        ("data[tls.key]", "Required value"),
    ]
    # Upstream words these paths so.
    assert _causes(_secret(type="kubernetes.io/basic-auth")) == [
        ("data[%s][username]", "Required value"),
        ("data[%s][password]", "Required value"),
    ]
    _written(_secret(type="kubernetes.io/basic-auth", stringData={"password": ""}))
    assert _causes(_secret(type="kubernetes.io/ssh-auth")) == [("data[%s][ssh-privatekey]", "Required value")]
    assert _causes(_secret(type="kubernetes.io/service-account-token")) == [
        ("metadata.annotations[kubernetes.io/service-account.name]", "Required value")
    ]
    assert _causes(_secret(type="kubernetes.io/dockerconfigjson")) == [
        ("data[.dockerconfigjson]", "Required value")
    ]
    for content, why in (
        ("[1]", "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ("{x", "invalid character 'x' looking for beginning of object key string"),
        ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        ("{", "unexpected end of JSON input"),
    ):
        body = _secret(type="kubernetes.io/dockerconfigjson", stringData={".dockerconfigjson": content})
        assert _causes(body) == [
            ("data[.dockerconfigjson]", f'Invalid value: "<secret contents redacted>": {why}')
        ]
    _written(_secret(type="kubernetes.io/dockercfg", stringData={".dockercfg": "{}"}))
    _written(_secret(type="example.com/custom"))


def test_keys_and_size_are_checked():
    assert _causes(_secret(stringData={"bad key": "v", "..x": "v", "ok.key_1-2": "v"})) == [
        (
            "data[..x]",
            "Invalid value: \"..x\": must not start with '..'",
        ),
        (
            "data[bad key]",
            'Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '
            "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation "
            "is '[-._a-zA-Z0-9]+')",
        ),
    ]
    big = "x" * (1024 * 1024)
    _written(_secret(stringData={"a": big}))
    assert _causes(_secret(stringData={"a": big, "b": "y"})) == [
        ("data", "Too long: must have at most 1048576 bytes")
    ]


def test_an_update_keeps_the_type_and_an_immutable_secrets_data():
    old = _written(_secret(type="kubernetes.io/tls", stringData={"tls.crt": "c", "tls.key": "k"}))
    old["metadata"].update(uid="u", creationTimestamp="2024-01-01T00:00:00Z", resourceVersion="1")
    new = _written(_secret(type="Opaque", data=dict(old["data"])))
    with pytest.raises(ApiError) as refused:
        STRATEGY.prepare_for_update(old, new)
    assert refused.value.message == 'Secret "s" is invalid: type: Invalid value: "Opaque": field is immutable'

    frozen = _written(_secret(immutable=True, stringData={"a": "1"}))
    frozen["metadata"].update(uid="u")
    relabelled = _written(_secret(immutable=True, data=dict(frozen["data"])))
    relabelled["metadata"]["labels"] = {"l": "v"}
    STRATEGY.prepare_for_update(frozen, relabelled)
    changed = _written(_secret(immutable=False, stringData={"a": "2"}))
    with pytest.raises(ApiError) as refused:
        STRATEGY.prepare_for_update(frozen, changed)
    assert refused.value.message == (
        'Secret "s" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, '
        "data: Forbidden: field is immutable when `immutable` is set]"
    )
