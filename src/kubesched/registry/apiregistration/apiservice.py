"""APIServices (apiregistration.k8s.io/v1): the aggregation layer's registrations, stored, listed
and validated as kube-apiserver does. ``serve`` proxies no aggregated API: the availability
controller says why each one is not available."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.field_errors import Cause, invalid, required
from kubesched.registry.errors import invalid as invalid_error
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of

GROUP = "apiregistration.k8s.io"


def spec_causes(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    """Upstream ``ValidateAPIService``: the name is ``<version>.<group>``, the priorities are in
    range, and a service-backed registration says how to trust it."""
    causes: list[Cause] = []
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    wanted = f"{version}.{group}"
    if name != wanted:
        causes.append(invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{wanted}"'))
    if not group and version != "v1":
        why = "only v1 may have an empty group and it better be legacy kube"
        causes.append(required("spec.group", why))
    minimum = spec.get("groupPriorityMinimum") or 0
    if not isinstance(minimum, int) or not 0 < minimum <= 20000:
        causes.append(invalid("spec.groupPriorityMinimum", minimum, "must be positive and less than 20000"))
    priority = spec.get("versionPriority") or 0
    if not isinstance(priority, int) or not 0 < priority <= 1000:
        causes.append(invalid("spec.versionPriority", priority, "must be positive and less than 1000"))
    service = spec.get("service")
    ca_bundle = str(spec.get("caBundle") or "")
    insecure = bool(spec.get("insecureSkipTLSVerify"))
    if not isinstance(service, Mapping):
        if ca_bundle:
            why = "local APIServices may not have a caBundle"
            causes.append(invalid("spec.caBundle", f"{len(ca_bundle)} bytes", why))
        if insecure:
            why = "local APIServices may not have insecureSkipTLSVerify"
            causes.append(invalid("spec.insecureSkipTLSVerify", True, why))
        return causes
    if not service.get("namespace"):
        causes.append(required("spec.service.namespace", ""))
    if not service.get("name"):
        causes.append(required("spec.service.name", ""))
    if insecure and ca_bundle:
        causes.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return causes


class APIServiceStrategy(Strategy):
    columns: tuple[Column, ...] = (NAME, ("Service", "string", 0), ("Available", "string", 0), AGE)

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        service = (obj.get("spec") or {}).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443

    def validate(self, body: dict[str, Any]) -> None:
        name = str(body["metadata"].get("name", ""))
        spec = body.get("spec")
        causes = spec_causes(name, spec if isinstance(spec, Mapping) else {})
        if causes:
            raise invalid_error("APIService", GROUP, name, causes)
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        service = (obj.get("spec") or {}).get("service")
        shown = (
            f"{service.get('namespace', '')}/{service.get('name', '')}"
            if isinstance(service, Mapping)
            else "Local"
        )
        available = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == "Available"
            ),
            None,
        )
        if available is None:
            state = "Unknown"
        elif available.get("status") == "True":
            state = "True"
        else:
            state = f"{available.get('status')} ({available.get('reason', '')})"
        return [meta_of(obj).get("name"), shown, state, age(meta_of(obj).get("creationTimestamp"), now)]


STRATEGY = APIServiceStrategy(
    Resource(
        GROUP, "v1", "apiservices", "apiservice", "APIService", False, (), ("status",), ("api-extensions",)
    )
)
