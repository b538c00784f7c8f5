"""DaemonSets: upstream's defaults (a ``RollingUpdate`` strategy with ``maxUnavailable: 1`` and
``maxSurge: 0``, ``revisionHistoryLimit: 10``), ``ValidateDaemonSetSpec``'s rules and kubectl's
columns."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import PodTemplateStrategy, selector_causes
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of

Cause = tuple[str, str, str]
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
_PERCENT = re.compile(r"[0-9]+%")


def set_defaults(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = ROLLING_UPDATE
    if strategy["type"] == ROLLING_UPDATE:
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    # The counts v1 always writes (they are not omitted when zero).
    status = obj.get("status")
    if status is None or isinstance(status, dict):
        obj["status"] = {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
            **(status or {}),
        }
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod = template["spec"]
        pod.setdefault("restartPolicy", "Always")
        pod.setdefault("terminationGracePeriodSeconds", 30)
        pod.setdefault("dnsPolicy", "ClusterFirst")
        pod.setdefault("schedulerName", "default-scheduler")


def int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """An ``IntOrString`` scaled against ``total`` (``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        scaled = int(value[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


def _int_or_percent_causes(value: Any, field: str) -> list[Cause]:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return [("FieldValueInvalid", field, f"Invalid value: {value!r}: must be an integer or percentage")]
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            return [
                (
                    "FieldValueInvalid",
                    field,
                    f'Invalid value: "{value}": a valid percent string must be a numeric string followed by '
                    "an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )
            ]
        if int(value[:-1]) > 100:
            return [("FieldValueInvalid", field, f'Invalid value: "{value}": must not be greater than 100%')]
    elif value < 0:
        return [("FieldValueInvalid", field, f"Invalid value: {value}: must be greater than or equal to 0")]
    return []


def spec_causes(spec: Mapping[str, Any]) -> list[Cause]:
    """``ValidateDaemonSetSpec`` beyond the pod template itself."""
    causes = selector_causes(spec, "daemonset")
    template = spec.get("template")
    pod = (template.get("spec") or {}) if isinstance(template, Mapping) else {}
    policy = pod.get("restartPolicy", "Always") if isinstance(pod, Mapping) else "Always"
    if isinstance(template, Mapping) and policy != "Always":
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{policy}": supported values: "Always"',
            )
        )
    for field in ("minReadySeconds", "revisionHistoryLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"spec.{field}",
                    f"Invalid value: {value}: must be greater than or equal to 0",
                )
            )
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind not in (ROLLING_UPDATE, ON_DELETE):
        # Upstream names the whole strategy, printed as Go prints the struct.
        rolling_shown = (
            "(*apps.RollingUpdateDaemonSet)(nil)"
            if not strategy.get("rollingUpdate")
            else "(*apps.RollingUpdateDaemonSet)"
        )
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.updateStrategy",
                f'Unsupported value: apps.DaemonSetUpdateStrategy{{Type:"{kind}", '
                f'RollingUpdate:{rolling_shown}}}: supported values: "RollingUpdate", "OnDelete"',
            )
        )
    elif kind == ROLLING_UPDATE:
        rolling = strategy.get("rollingUpdate") or {}
        path = "spec.updateStrategy.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        causes += _int_or_percent_causes(unavailable, f"{path}.maxUnavailable")
        causes += _int_or_percent_causes(surge, f"{path}.maxSurge")
        if int_or_percent(unavailable, 100, True) == 0 and int_or_percent(surge, 100, True) == 0:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.maxUnavailable",
                    f"Invalid value: {_shown(unavailable)}: may not be 0 when `maxSurge` is 0",
                )
            )
    return causes


def _shown(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


class DaemonSetStrategy(PodTemplateStrategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Desired", "integer", 0),
        ("Current", "integer", 0),
        ("Ready", "integer", 0),
        ("Up-to-date", "integer", 0),
        ("Available", "integer", 0),
        ("Node Selector", "string", 0),
        AGE,
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    )

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        set_defaults(obj)

    def validate(self, body: dict[str, Any]) -> None:
        causes = spec_causes(body.get("spec") or {})
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        pod = (spec.get("template") or {}).get("spec") or {}
        node_selector = pod.get("nodeSelector") or {}
        containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
        return [
            meta_of(obj).get("name"),
            status.get("desiredNumberScheduled", 0),
            status.get("currentNumberScheduled", 0),
            status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0),
            status.get("numberAvailable", 0),
            ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
            age(meta_of(obj).get("creationTimestamp"), now),
            ",".join(str(c.get("name")) for c in containers),
            ",".join(str(c.get("image")) for c in containers),
            label_selector_text(spec.get("selector") or {}),
        ]


def label_selector_text(selector: Mapping[str, Any]) -> str:
    """A label selector as kubectl prints it (``metav1.FormatLabelSelector``)."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or "<none>"


STRATEGY = DaemonSetStrategy(
    Resource("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, ("ds",), ("status",), ("all",))
)
