"""The base of the workloads validated through their pod template (Deployment, Job): the template
must be a pod the schedulers accept, and the replica count a non-negative integer."""

from __future__ import annotations

from typing import Any

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
