"""ServiceCIDRs (``networking.k8s.io/v1``): the ranges Services' cluster IPs come from. The API
server makes the one named ``kubernetes`` from ``--service-cluster-ip-range``; its CIDRs do not
change (upstream ``ValidateServiceCIDRUpdate`` allows only adding a second family)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import ClusterStore, Obj

Cause = tuple[str, str, str]


class ServiceCIDRStrategy(Strategy):
    columns: tuple[Column, ...] = (NAME, ("CIDRs", "string", 0), AGE)

    def validate(self, body: dict[str, Any]) -> None:
        cidrs = (body.get("spec") or {}).get("cidrs")
        causes: list[Cause] = []
        if not isinstance(cidrs, list) or not cidrs:
            causes.append(("FieldValueRequired", "spec.cidrs", "Required value"))
        elif len(cidrs) > 2:
            causes.append(
                ("FieldValueTooMany", "spec.cidrs", f"Too many: {len(cidrs)}: must have at most 2 items")
            )
        else:
            versions = []
            for i, text in enumerate(cidrs):
                try:
                    net = ipaddress.ip_network(str(text), strict=True)
                except ValueError:
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"spec.cidrs[{i}]",
                            f'Invalid value: "{text}": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                            "2001:db8::/64)",
                        )
                    )
                    continue
                versions.append(net.version)
            if len(versions) == 2 and versions[0] == versions[1]:
                causes.append(
                    (
                        "FieldValueInvalid",
                        "spec.cidrs",
                        f"Invalid value: {_go_strings(cidrs)}: "
                        "may specify no more than one IP for each IP family, "
                        "i.e 192.168.0.0/24 and 2001:db8::/64",
                    )
                )
        if causes:
            raise invalid("ServiceCIDR", "networking.k8s.io", str(body["metadata"].get("name", "")), causes)

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        if old is None:
            return
        was = list((old.get("spec") or {}).get("cidrs") or [])
        now = list((new.get("spec") or {}).get("cidrs") or [])
        if now != was and not (len(was) == 1 and len(now) == 2 and now[0] == was[0]):
            raise invalid(
                "ServiceCIDR",
                "networking.k8s.io",
                str(new["metadata"].get("name", "")),
                [
                    (
                        "FieldValueInvalid",
                        "spec.cidrs",
                        f"Invalid value: {_go_strings(now)}: field is immutable",
                    )
                ],
            )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        cidrs = (obj.get("spec") or {}).get("cidrs") or []
        return [
            meta_of(obj).get("name"),
            ",".join(str(c) for c in cidrs),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


def _go_strings(values: list[Any]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def default_service_cidr(cidr: str, now: str) -> dict[str, Any]:
    """The ServiceCIDR the API server makes from its flag, Ready from the start."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": [cidr]},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "",
                    "message": "Kubernetes Service CIDR is ready",
                    "lastTransitionTime": now,
                }
            ]
        },
    }


STRATEGY = ServiceCIDRStrategy(
    Resource("networking.k8s.io", "v1", "servicecidrs", "servicecidr", "ServiceCIDR", False, (), ("status",))
)
