"""``dryRun``: a write that goes through every stage (decoding, defaulting, validation, admission)
and answers with the object it would store, storing nothing. Upstream accepts one value, ``All``, in
the query or in DeleteOptions' ``dryRun``; anything else is refused before the write begins."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.registry.errors import invalid

#: The options kind each method's dryRun belongs to (its name is in the refusal).
_OPTIONS = {
    "POST": "CreateOptions",
    "PUT": "UpdateOptions",
    "PATCH": "PatchOptions",
    "DELETE": "DeleteOptions",
}


def dry_run(method: str, values: Iterable[str]) -> bool:
    """Whether a write asks for a dry run; a value other than ``All`` is a 422, as upstream."""
    given = list(values)
    if any(v != "All" for v in given):
        shown = "[]string{" + ", ".join(f'"{v}"' for v in given) + "}"
        raise invalid(
            _OPTIONS.get(method, "CreateOptions"),
            "meta.k8s.io",
            "",
            [("FieldValueNotSupported", "dryRun", f'Unsupported value: {shown}: supported values: "All"')],
        )
    return bool(given)
