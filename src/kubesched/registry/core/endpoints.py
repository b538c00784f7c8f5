"""Endpoints: the addresses behind a Service, written by the endpoints controller (or by hand for a
Service without a selector), with kubectl's ENDPOINTS column (upstream ``formatEndpoints``)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of

PROTOCOLS = ("SCTP", "TCP", "UDP")
Cause = tuple[str, str, str]

#: How many addresses the ENDPOINTS and EndpointSlice columns show before "+ N more...".
SHOWN = 3


class EndpointsStrategy(Strategy):
    top_fields = frozenset({"subsets"})
    columns: tuple[Column, ...] = (NAME, ("Endpoints", "string", 0), AGE)

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        for subset in _list(obj.get("subsets")):
            for port in _list(subset.get("ports")) if isinstance(subset, dict) else []:
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"

    def validate(self, body: dict[str, Any]) -> None:
        causes: list[Cause] = []
        subsets = body.get("subsets")
        if subsets is not None and not isinstance(subsets, list):
            causes.append(("FieldValueInvalid", "subsets", "Invalid value: must be a list"))
        for i, subset in enumerate(_list(subsets)):
            path = f"subsets[{i}]"
            if not isinstance(subset, dict):
                causes.append(("FieldValueInvalid", path, "Invalid value: must be an object"))
                continue
            for part in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(_list(subset.get(part))):
                    ip = address.get("ip") if isinstance(address, dict) else None
                    if not _valid_ip(ip):
                        causes.append(
                            (
                                "FieldValueInvalid",
                                f"{path}.{part}[{j}].ip",
                                f'Invalid value: "{ip}": must be a valid IP address',
                            )
                        )
            ports = _list(subset.get("ports"))
            for j, port in enumerate(ports):
                if not isinstance(port, dict):
                    causes.append(
                        ("FieldValueInvalid", f"{path}.ports[{j}]", "Invalid value: must be an object")
                    )
                    continue
                if len(ports) > 1 and not port.get("name"):
                    causes.append(("FieldValueRequired", f"{path}.ports[{j}].name", "Required value"))
                number = port.get("port")
                if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"{path}.ports[{j}].port",
                            f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                        )
                    )
                if port.get("protocol") not in PROTOCOLS:
                    shown = ", ".join(f'"{p}"' for p in PROTOCOLS)
                    causes.append(
                        (
                            "FieldValueNotSupported",
                            f"{path}.ports[{j}].protocol",
                            f'Unsupported value: "{port.get("protocol")}": supported values: {shown}',
                        )
                    )
        if causes:
            raise invalid("Endpoints", "", str(body["metadata"].get("name", "")), causes)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        return [
            meta_of(obj).get("name"),
            format_endpoints(obj),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _valid_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def format_endpoints(obj: Mapping[str, Any]) -> str:
    """``ip:port`` for each ready address and port, the first three and how many more."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in _list(subsets):
        if not isinstance(subset, dict):
            continue
        addresses = [a.get("ip") for a in _list(subset.get("addresses")) if isinstance(a, dict)]
        ports = [p for p in _list(subset.get("ports")) if isinstance(p, dict)]
        if not ports:
            count += len(addresses)
            shown += [str(ip) for ip in addresses][: max(0, SHOWN - len(shown))]
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(shown) < SHOWN:
                    host = f"[{ip}]" if ":" in str(ip) else str(ip)
                    shown.append(f"{host}:{port.get('port')}")
    text = ",".join(shown)
    return f"{text} + {count - SHOWN} more..." if count > SHOWN else text


STRATEGY = EndpointsStrategy(Resource("", "v1", "endpoints", "endpoints", "Endpoints", True, ("ep",)))
