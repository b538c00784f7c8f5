"""EndpointSlices (``discovery.k8s.io/v1``): a Service's endpoints in slices of up to 100, written
by the EndpointSlice controller, with kubectl's columns (upstream ``printEndpointSlice``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.core.endpoints import SHOWN
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import ClusterStore, Obj

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
#: Upstream's ``maxEndpoints`` of one slice's validation.
MAX_ENDPOINTS = 1000
Cause = tuple[str, str, str]


class EndpointSliceStrategy(Strategy):
    top_fields = frozenset({"addressType", "endpoints", "ports"})
    columns: tuple[Column, ...] = (
        NAME,
        ("AddressType", "string", 0),
        ("Ports", "string", 0),
        ("Endpoints", "string", 0),
        AGE,
    )

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        ports = obj.get("ports")
        for port in ports if isinstance(ports, list) else []:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"

    def validate(self, body: dict[str, Any]) -> None:
        causes: list[Cause] = []
        kind = body.get("addressType")
        if not kind:
            causes.append(("FieldValueRequired", "addressType", "Required value"))
        elif kind not in ADDRESS_TYPES:
            shown = ", ".join(f'"{t}"' for t in ADDRESS_TYPES)
            causes.append(
                (
                    "FieldValueNotSupported",
                    "addressType",
                    f'Unsupported value: "{kind}": supported values: {shown}',
                )
            )
        for field in ("endpoints", "ports"):
            if body.get(field) is not None and not isinstance(body.get(field), list):
                causes.append(("FieldValueInvalid", field, "Invalid value: must be a list"))
        given = body.get("endpoints")
        endpoints: list[Any] = given if isinstance(given, list) else []
        if len(endpoints) > MAX_ENDPOINTS:
            causes.append(
                (
                    "FieldValueTooMany",
                    "endpoints",
                    f"Too many: {len(endpoints)}: must have at most {MAX_ENDPOINTS} items",
                )
            )
        for i, endpoint in enumerate(endpoints):
            addresses = endpoint.get("addresses") if isinstance(endpoint, dict) else None
            if not isinstance(addresses, list) or not addresses:
                causes.append(
                    (
                        "FieldValueRequired",
                        f"endpoints[{i}].addresses",
                        "Required value: must contain at least 1 address",
                    )
                )
        if causes:
            raise invalid("EndpointSlice", "discovery.k8s.io", str(body["metadata"].get("name", "")), causes)

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        if old is not None and old.get("addressType") != new.get("addressType"):
            raise invalid(
                "EndpointSlice",
                "discovery.k8s.io",
                str(new["metadata"].get("name", "")),
                [
                    (
                        "FieldValueInvalid",
                        "addressType",
                        f'Invalid value: "{new.get("addressType")}": field is immutable',
                    )
                ],
            )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        return [
            meta_of(obj).get("name"),
            obj.get("addressType"),
            _ports(obj.get("ports") or []),
            _endpoints(obj.get("endpoints") or []),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


def _with_more(shown: list[str], count: int) -> str:
    text = ",".join(shown)
    if count > SHOWN:
        return f"{text} + {count - SHOWN} more..."
    return text or "<unset>"


def _ports(given: Any) -> str:
    shown = []
    ports = [p for p in given if isinstance(p, dict)] if isinstance(given, list) else []
    for port in ports[:SHOWN]:
        if port.get("port") is not None:
            shown.append(str(port["port"]))
        else:
            shown.append(str(port.get("name") or "*"))
    return _with_more(shown, len(ports))


def _endpoints(endpoints: Any) -> str:
    listed = endpoints if isinstance(endpoints, list) else []
    addresses: list[str] = []
    for endpoint in listed:
        given = endpoint.get("addresses") if isinstance(endpoint, dict) else None
        addresses += [str(a) for a in given] if isinstance(given, list) else []
    return _with_more(addresses[:SHOWN], len(addresses))


STRATEGY = EndpointSliceStrategy(
    Resource("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", True)
)
