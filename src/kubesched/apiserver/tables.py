"""``as=Table`` responses: the columns kubectl prints (each kind's strategy says which), computed
server-side as upstream does, with each row's object as ``includeObject`` asks (upstream's
``asTable`` in ``endpoints/handlers/response.go``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.registry.errors import bad_request
from kubesched.registry.strategy import Strategy

#: The meta.k8s.io versions a Table is served in.
TABLE_VERSIONS = ("v1", "v1beta1")
#: What a row may carry: the whole object, its metadata (the default) or nothing.
INCLUDE_OBJECT = ("Object", "Metadata", "None", "")


@dataclass(frozen=True, slots=True)
class TableOptions:
    """What a request asks of its Table: the meta.k8s.io version and upstream's ``TableOptions``."""

    version: str = "v1"
    include_object: str = "Metadata"

    @property
    def api_version(self) -> str:
        return f"meta.k8s.io/{self.version}"


def table_options(accept: str, query: Mapping[str, str]) -> TableOptions | None:
    """The Table the ``Accept`` header asks for, or None when it asks for the objects: the first
    media type the server can answer decides, as upstream's content negotiation does."""
    if "as=Table" not in accept:
        return None
    for media in accept.split(","):
        kind, _, params = media.partition(";")
        kind = kind.strip()
        values = {}
        for param in params.split(";"):
            key, _, value = param.partition("=")
            values[key.strip()] = value.strip()
        if values.get("as") == "Table":
            if values.get("g") == "meta.k8s.io" and values.get("v") in TABLE_VERSIONS:
                return TableOptions(values["v"], _include_object(query))
            continue
        if kind in ("application/json", "application/*", "*/*", "application/yaml"):
            return None
    return None


def _include_object(query: Mapping[str, str]) -> str:
    value = query.get("includeObject", "")
    if value not in INCLUDE_OBJECT:
        raise bad_request(
            "Unable to convert to Table as requested: includeObject: "
            f"Invalid value: \"{value}\": must be 'Metadata', 'Object', 'None', or empty"
        )
    return value or "Metadata"


def table(
    strategy: Strategy,
    objects: Sequence[Mapping[str, Any]],
    list_meta: Mapping[str, Any],
    options: TableOptions,
    *,
    headers: bool = True,
) -> dict[str, Any]:
    """The Table of ``objects`` (as served); ``headers=False`` leaves the column definitions out,
    as a watch does after its first event."""
    row = strategy.row
    now = time.time()
    include = options.include_object
    partial = options.api_version
    rows: list[dict[str, Any]] = []
    for obj in objects:
        cells = row(obj, now)
        if include == "Object":
            rows.append({"cells": cells, "object": obj})
        elif include == "None":
            rows.append({"cells": cells, "object": None})
        else:
            rows.append(
                {
                    "cells": cells,
                    "object": {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": partial,
                        "metadata": obj.get("metadata") or {},
                    },
                }
            )
    return {
        "kind": "Table",
        "apiVersion": options.api_version,
        "metadata": dict(list_meta),
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
            for n, t, p in strategy.columns
        ]
        if headers
        else None,
        "rows": rows,
    }
