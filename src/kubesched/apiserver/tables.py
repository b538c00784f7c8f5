"""``as=Table`` responses: the columns kubectl prints (each kind's strategy says which), computed
server-side as upstream does."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.registry.strategy import Strategy


def table(
    strategy: Strategy, objects: Sequence[Mapping[str, Any]], list_meta: Mapping[str, Any]
) -> dict[str, Any]:
    row = strategy.row
    now = time.time()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
            for n, t, p in strategy.columns
        ],
        "rows": [
            {
                "cells": row(obj, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata") or {},
                },
            }
            for obj in objects
        ],
    }
