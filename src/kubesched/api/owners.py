"""Owner references: the controller reference an owner puts on what it creates, and the test that
an object is controlled by a given owner (metav1.IsControlledBy compares the uid alone)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """The reference that makes the named owner the controller of what carries it; deletion of the
    owner in the foreground waits for the dependent."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(owner_references: Iterable[Mapping[str, Any]], uid: str) -> bool:
    """Whether the controller among ``owner_references`` is the owner with ``uid``."""
    return any(ref.get("controller") is True and str(ref.get("uid") or "") == uid for ref in owner_references)
