"""Request bodies: the size limit, and decoding by content type (JSON, YAML, protobuf)."""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesched.apiserver import protobuf
from kubesched.registry.errors import bad_request, too_large

#: Upstream's limit on a request body (3 MiB).
MAX_BODY = 3 * 1024 * 1024


async def raw_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    return await request.read()


async def body(request: web.Request) -> Any:
    raw = await raw_body(request)
    if not raw.strip():
        raise bad_request("the request body is empty")
    return decode(raw, request.headers.get("Content-Type", ""))


def decode(raw: bytes, content_type: str) -> Any:
    try:
        if "protobuf" in content_type:
            return protobuf.decode(raw)
        if "yaml" in content_type:
            doc = yaml.safe_load(raw.decode("utf-8"))
            # YAML escapes can make strings JSON cannot carry (a lone surrogate): refused here,
            # as a JSON body with one is.
            orjson.dumps(doc)
            return doc
        return orjson.loads(raw)
    except (
        orjson.JSONDecodeError,
        yaml.YAMLError,
        UnicodeDecodeError,
        RecursionError,
        ValueError,
        TypeError,
    ) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise bad_request(f"the body of the request could not be decoded: {text}") from None
