"""Node taints and pod tolerations with the exact Kubernetes matching rules.

A taint repels pods; a toleration lets a pod ignore matching taints. Matching follows
``Toleration.ToleratesTaint`` in ``k8s.io/api/core/v1``: an empty toleration effect matches every
effect, an empty key (only valid with ``Exists``) matches every key, ``Exists`` ignores the value
and ``Equal`` (the default) compares values exactly. Validation follows the API server, so a
manifest the real cluster would reject is an :class:`~kubesched.errors.InputError` here too.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kubesched.api.fields import INT64_MAX, INT64_MIN, as_int
from kubesched.api.selectors import label_value_error, qualified_name_error
from kubesched.errors import InputError

__all__ = [
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_EFFECTS",
    "TOLERATION_OPERATORS",
    "Taint",
    "Toleration",
    "find_untolerated_taint",
    "tolerates_any",
]

NO_SCHEDULE: Final = "NoSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
NO_EXECUTE: Final = "NoExecute"
TAINT_EFFECTS: Final[tuple[str, ...]] = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)

EQUAL: Final = "Equal"
EXISTS: Final = "Exists"
TOLERATION_OPERATORS: Final[tuple[str, ...]] = (EQUAL, EXISTS)


def _join(field: str, child: str) -> str:
    return f"{field}.{child}" if field else child


def _mapping(data: object, field: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise InputError(f"must be a mapping, not {type(data).__name__}", field=field)
    return data


def _reject_unknown(data: Mapping[str, object], allowed: Sequence[str], field: str) -> None:
    for key in data:
        if key not in allowed:
            raise InputError(
                f"unknown field {key!r} (expected one of: {', '.join(allowed)})", field=_join(field, str(key))
            )


def _string(data: Mapping[str, object], key: str, field: str) -> str:
    value = data.get(key)
    if value is None:  # absent and null both mean the zero value, as in the Go API types
        return ""
    if not isinstance(value, str):
        raise InputError(f"must be a string, not {type(value).__name__}", field=_join(field, key))
    return value


def _check_effect(effect: str, field: str) -> None:
    if effect not in TAINT_EFFECTS:
        raise InputError(
            f"unsupported effect {effect!r} (supported: {', '.join(TAINT_EFFECTS)})", field=field
        )


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint ``key=value:effect``; hashable so node tables can group nodes by taint set."""

    key: str
    value: str
    effect: str

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> Taint:
        """Parse and validate one ``spec.taints[i]`` entry (``timeAdded`` is accepted and ignored)."""
        taint = _mapping(data, field)
        _reject_unknown(taint, ("key", "value", "effect", "timeAdded"), field)
        key = _string(taint, "key", field)
        if not key:
            raise InputError("is required", field=_join(field, "key"))
        if (why := qualified_name_error(key)) is not None:
            raise InputError(why, field=_join(field, "key"))
        value = _string(taint, "value", field)
        if (why := label_value_error(value)) is not None:
            raise InputError(why, field=_join(field, "value"))
        effect = _string(taint, "effect", field)
        if not effect:
            raise InputError("is required", field=_join(field, "effect"))
        _check_effect(effect, _join(field, "effect"))
        return cls(key, value, effect)

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; ``effect=""`` tolerates every effect, ``key=""`` (with Exists) every key."""

    key: str = ""
    operator: str = EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None  # only meaningful for NoExecute (eviction delay)

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration matches ``taint`` (``Toleration.ToleratesTaint``)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", EQUAL):  # the API defaults an empty operator to Equal
            return self.value == taint.value
        # Unknown operators cannot come from from_dict; upstream treats them as not tolerating.
        return self.operator == EXISTS

    @classmethod
    def from_dict(cls, data: Mapping[str, object], field: str) -> Toleration:
        """Parse and validate one ``spec.tolerations[i]`` entry like the API server does."""
        tol = _mapping(data, field)
        _reject_unknown(tol, ("key", "operator", "value", "effect", "tolerationSeconds"), field)
        key = _string(tol, "key", field)
        if key and (why := qualified_name_error(key)) is not None:
            raise InputError(why, field=_join(field, "key"))
        operator = _string(tol, "operator", field) or EQUAL
        operator_field = _join(field, "operator")
        if operator not in TOLERATION_OPERATORS:
            raise InputError(
                f"unsupported operator {operator!r} (supported: {', '.join(TOLERATION_OPERATORS)})",
                field=operator_field,
            )
        if not key and operator != EXISTS:
            raise InputError(
                "operator must be 'Exists' when key is empty (which means: match all keys and values)",
                field=operator_field,
            )
        value = _string(tol, "value", field)
        if operator == EXISTS and value:
            raise InputError("value must be empty when operator is 'Exists'", field=_join(field, "value"))
        if (why := label_value_error(value)) is not None:
            raise InputError(why, field=_join(field, "value"))
        effect = _string(tol, "effect", field)
        if effect:
            _check_effect(effect, _join(field, "effect"))
        seconds = tol.get("tolerationSeconds")
        if seconds is not None:
            seconds_field = _join(field, "tolerationSeconds")
            seconds = as_int(seconds, seconds_field, minimum=INT64_MIN, maximum=INT64_MAX)
            if effect != NO_EXECUTE:
                raise InputError(
                    "effect must be 'NoExecute' when tolerationSeconds is set", field=_join(field, "effect")
                )
        return cls(key, operator, value, effect, seconds)


def tolerates_any(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether at least one toleration matches ``taint``."""
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    effects: Container[str] | None = None,
) -> Taint | None:
    """First taint, in node order, that no toleration matches (``FindMatchingUntoleratedTaint``).

    ``effects`` restricts which taints are considered (e.g. ``{NoSchedule, NoExecute}`` for the
    TaintToleration filter); ``None`` considers all. The first one is reported because that is
    the taint kube-scheduler names in its "untolerated taint" message.
    """
    for taint in taints:
        if effects is not None and taint.effect not in effects:
            continue
        if not tolerates_any(tolerations, taint):
            return taint
    return None
