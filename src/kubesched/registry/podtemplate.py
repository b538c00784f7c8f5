"""The base of the workloads validated through their pod template (Deployment, Job): the template
must be a pod the schedulers accept, and the replica count a non-negative integer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubesched.api.selectors import LabelSelector
from kubesched.errors import InputError
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import Strategy
from kubesched.store.parsers import DEFAULT_PARSERS


class PodTemplateStrategy(Strategy):
    generation = True
    #: The spec field that counts the workload's pods.
    replicas_field = "replicas"

    def validate(self, body: dict[str, Any]) -> None:
        res = self.resource
        self.check_quantities(body)
        name = str(body["metadata"].get("name", ""))
        spec = body.get("spec") or {}
        replicas = spec.get(self.replicas_field)
        if replicas is not None and (
            not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0
        ):
            raise invalid(
                res.kind,
                res.group,
                name,
                [
                    (
                        "FieldValueInvalid",
                        f"spec.{self.replicas_field}",
                        f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    )
                ],
            )
        template = spec.get("template")
        if not isinstance(template, dict):
            raise invalid(
                res.kind, res.group, name, [("FieldValueRequired", "spec.template", "Required value")]
            )
        pod = {
            "kind": "Pod",
            "metadata": {"name": name, **(template.get("metadata") or {})},
            "spec": template.get("spec") or {},
        }
        self.check_parses(DEFAULT_PARSERS["Pod"], pod, name)


def _go_string_map(value: Any) -> str:
    """A label map as Go's ``%#v`` prints it in a field error (keys sorted, as Go prints maps)."""
    if value is None:
        return "map[string]string(nil)"
    if not isinstance(value, dict):
        return repr(value)
    pairs = ", ".join(f"{json.dumps(str(k))}:{json.dumps(str(v))}" for k, v in sorted(value.items()))
    return "map[string]string{" + pairs + "}"


def _go_empty_selector(selector: Mapping[str, Any]) -> str:
    labels = selector.get("matchLabels")
    exprs = selector.get("matchExpressions")
    exprs_text = "[]v1.LabelSelectorRequirement(nil)" if exprs is None else "[]v1.LabelSelectorRequirement{}"
    return f"v1.LabelSelector{{MatchLabels:{_go_string_map(labels)}, MatchExpressions:{exprs_text}}}"


def selector_causes(spec: Mapping[str, Any], kind_word: str = "deployment") -> list[tuple[str, str, str]]:
    """Upstream's selector rules of a Deployment, ReplicaSet or DaemonSet spec
    (``ValidateDeploymentSpec``, ``ValidateReplicaSetSpec``, ``ValidateDaemonSetSpec``; the
    refusal of an empty selector names ``kind_word``): a selector is required and may not be
    empty, and it must match the template's labels. A missing selector selects nothing, so it does
    not match either."""
    causes: list[tuple[str, str, str]] = []
    raw = spec.get("selector")
    template = spec.get("template")
    meta = (template.get("metadata") or {}) if isinstance(template, Mapping) else {}
    template_labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if raw is None:
        causes.append(("FieldValueRequired", "spec.selector", "Required value"))
        selector = LabelSelector.nothing()
    else:
        if not isinstance(raw, Mapping):
            return [("FieldValueInvalid", "spec.selector", f"Invalid value: {raw!r}: must be an object")]
        try:
            selector = LabelSelector.from_dict(raw, "spec.selector")
        except InputError as exc:
            return [("FieldValueInvalid", exc.field or "spec.selector", f"Invalid value: {exc.message}")]
        if not raw.get("matchLabels") and not raw.get("matchExpressions"):
            causes.append(
                (
                    "FieldValueInvalid",
                    "spec.selector",
                    f"Invalid value: {_go_empty_selector(raw)}: empty selector is invalid for {kind_word}",
                )
            )
            return causes
    if not isinstance(template, Mapping):
        return causes  # the missing template is the error to report
    labels = template_labels if isinstance(template_labels, dict) else {}
    if not selector.matches({str(k): str(v) for k, v in labels.items()}):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                f"Invalid value: {_go_string_map(template_labels)}: "
                "`selector` does not match template `labels`",
            )
        )
    return causes
