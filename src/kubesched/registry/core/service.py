"""Services as kube-apiserver keeps them (upstream ``pkg/registry/core/service``, the v1 defaults
and ``ValidateService``): a type (``ClusterIP`` unless given), ports with a protocol and a target
port, session affinity and traffic policies, IP families, a cluster IP from the service CIDR and
node ports for ``NodePort`` and ``LoadBalancer`` Services (:mod:`.servicealloc`)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from kubesched.registry.core import servicealloc
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import ClusterStore, Obj

CLUSTER_IP = "ClusterIP"
NODE_PORT = "NodePort"
LOAD_BALANCER = "LoadBalancer"
EXTERNAL_NAME = "ExternalName"
TYPES = (CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT)
PROTOCOLS = ("SCTP", "TCP", "UDP")
NONE = "None"

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IANA_SVC_NAME = re.compile(r"[-a-z0-9]+")
_IANA_LETTER = re.compile(r".*[a-z].*")

Cause = tuple[str, str, str]


def _supported(field: str, value: Any, values: tuple[str, ...]) -> Cause:
    shown = ", ".join(f'"{v}"' for v in values)
    return ("FieldValueNotSupported", field, f'Unsupported value: "{value}": supported values: {shown}')


def needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != EXTERNAL_NAME


def needs_node_ports(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type")
    if kind == NODE_PORT:
        return True
    return kind == LOAD_BALANCER and spec.get("allocateLoadBalancerNodePorts") is not False


def set_defaults(obj: dict[str, Any]) -> None:
    """The v1 defaults of a Service (upstream ``SetDefaults_Service``), applied on every write."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("type"):
        spec["type"] = CLUSTER_IP
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = NONE
    if spec["sessionAffinity"] == "ClientIP" and not spec.get("sessionAffinityConfig"):
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    ports = spec.get("ports")
    for port in ports if isinstance(ports, list) else []:
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    if kind in (NODE_PORT, LOAD_BALANCER) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind != EXTERNAL_NAME and not spec.get("internalTrafficPolicy"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == LOAD_BALANCER and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    status = obj.get("status")
    if status is None:
        obj["status"] = {"loadBalancer": {}}
    elif isinstance(status, dict):
        status.setdefault("loadBalancer", {})


class ServiceStrategy(Strategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Type", "string", 0),
        ("Cluster-IP", "string", 0),
        ("External-IP", "string", 0),
        ("Port(s)", "string", 0),
        AGE,
        ("Selector", "string", 1),
    )

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        set_defaults(obj)

    def validate(self, body: dict[str, Any]) -> None:
        causes = validate_spec(body.get("spec") or {})
        if causes:
            raise invalid("Service", "", str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        """The cluster IPs, IP families and node ports of a Service being created (``old`` None)
        or updated, as upstream's service storage allocates them before the object is stored."""
        name = str(new["metadata"].get("name", ""))
        spec = new.setdefault("spec", {})
        old_spec: Mapping[str, Any] = (old.get("spec") or {}) if old is not None else {}
        uid = str((old or {}).get("metadata", {}).get("uid")) if old is not None else None
        if old is not None:
            _patch_allocated_values(old_spec, spec)
            _normalize_cluster_ips(old_spec, spec)
            _drop_type_dependent_fields(old_spec, spec)
        # Checked once an update has dropped what the new type has no use for.
        causes = _immutable_causes(old_spec, spec) if old is not None else []
        kind = spec.get("type")
        if kind in (CLUSTER_IP, EXTERNAL_NAME):
            causes += [
                (
                    "FieldValueForbidden",
                    f"spec.ports[{i}].nodePort",
                    f"Forbidden: may not be used when `type` is '{kind}'",
                )
                for i, port in enumerate(spec.get("ports") or [])
                if isinstance(port, dict) and port.get("nodePort")
            ]
        if causes:
            raise invalid("Service", "", name, causes)
        if needs_cluster_ip(spec):
            _allocate_cluster_ips(store, name, old_spec if old is not None else None, spec, uid)
        if needs_node_ports(spec) or spec.get("type") == LOAD_BALANCER:
            _allocate_node_ports(store, name, old_spec, spec, uid)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec = obj.get("spec") or {}
        kind = spec.get("type") or CLUSTER_IP
        selector = spec.get("selector") or {}
        return [
            meta_of(obj).get("name"),
            kind,
            spec.get("clusterIP") or "<none>",
            _external_ip(obj, kind),
            _ports(spec),
            age(meta_of(obj).get("creationTimestamp"), now),
            ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
        ]


def _external_ip(obj: Mapping[str, Any], kind: str) -> str:
    """kubectl's EXTERNAL-IP cell (upstream ``getServiceExternalIP``)."""
    spec = obj.get("spec") or {}
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if kind == EXTERNAL_NAME:
        return str(spec.get("externalName") or "<none>")
    if kind == LOAD_BALANCER:
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        found = [str(i.get("ip") or i.get("hostname")) for i in ingress if isinstance(i, dict)]
        found += external
        return ",".join(found) if found else "<pending>"
    return ",".join(external) if external else "<none>"


def _ports(spec: Mapping[str, Any]) -> str:
    out = []
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        out.append(f"{port.get('port')}{node_port}/{port.get('protocol') or 'TCP'}")
    return ",".join(out) if out else "<none>"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_spec(spec: Mapping[str, Any]) -> list[Cause]:
    """Upstream ``ValidateService``'s rules of the spec (after the v1 defaults)."""
    causes: list[Cause] = []
    kind = spec.get("type")
    cluster_ip = spec.get("clusterIP")
    headless = cluster_ip == NONE
    if kind == EXTERNAL_NAME:
        name = spec.get("externalName")
        if not name:
            causes.append(("FieldValueRequired", "spec.externalName", "Required value"))
        elif not isinstance(name, str) or _DNS_SUBDOMAIN.fullmatch(name.rstrip(".")) is None:
            causes.append(
                (
                    "FieldValueInvalid",
                    "spec.externalName",
                    f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                    "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                    "character",
                )
            )
        if cluster_ip:
            causes.append(
                (
                    "FieldValueForbidden",
                    "spec.clusterIP",
                    "Forbidden: may not be set for ExternalName services",
                )
            )
    elif cluster_ip not in (None, "", NONE) and not _valid_ip(cluster_ip):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.clusterIPs[0]",
                f'Invalid value: "{cluster_ip}": must be a valid IP address, '
                "(e.g. 10.9.8.7 or 2001:db8::ffff)",
            )
        )
    ports = spec.get("ports")
    if ports is not None and not isinstance(ports, list):
        causes.append(("FieldValueInvalid", "spec.ports", "Invalid value: must be a list"))
    if not isinstance(ports, list):
        ports = []
    if not ports and kind != EXTERNAL_NAME and not headless:
        causes.append(("FieldValueRequired", "spec.ports", "Required value"))
    names: set[str] = set()
    seen: set[tuple[str, str]] = set()
    node_ports: set[tuple[str, str]] = set()
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            causes.append(("FieldValueInvalid", path, "Invalid value: must be an object"))
            continue
        causes += _port_causes(port, path, require_name=len(ports) > 1, names=names)
        key = (repr(port.get("protocol")), repr(port.get("port")))
        if key in seen:
            causes.append(("FieldValueDuplicate", path, f"Duplicate value: {_go_service_port(port)}"))
        seen.add(key)
        node_port = port.get("nodePort")
        if node_port:
            np_key = (repr(port.get("protocol")), repr(node_port))
            if np_key in node_ports:
                causes.append(("FieldValueDuplicate", f"{path}.nodePort", f"Duplicate value: {node_port}"))
            node_ports.add(np_key)
    affinity = spec.get("sessionAffinity")
    if affinity not in ("ClientIP", NONE):
        causes.append(_supported("spec.sessionAffinity", affinity, ("ClientIP", NONE)))
    if kind not in TYPES:
        causes.append(_supported("spec.type", kind, TYPES))
    for field, values in (
        ("externalTrafficPolicy", ("Cluster", "Local")),
        ("internalTrafficPolicy", ("Cluster", "Local")),
        ("ipFamilyPolicy", ("PreferDualStack", "RequireDualStack", "SingleStack")),
    ):
        value = spec.get(field)
        if value is not None and value not in values:
            causes.append(_supported(f"spec.{field}", value, values))
    for field in ("clusterIPs", "ipFamilies", "externalIPs"):
        given = spec.get(field)
        if given is not None and (not isinstance(given, list) or not all(isinstance(v, str) for v in given)):
            causes.append(("FieldValueInvalid", f"spec.{field}", "Invalid value: must be a list of strings"))
    families = spec.get("ipFamilies") or []
    for i, family in enumerate(families if isinstance(families, list) else []):
        if family not in ("IPv4", "IPv6"):
            causes.append(_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
    return causes


def _valid_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def _port_causes(port: Mapping[str, Any], path: str, *, require_name: bool, names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = port.get("name")
    if require_name and not name:
        causes.append(("FieldValueRequired", f"{path}.name", "Required value"))
    elif name:
        if not isinstance(name, str) or len(name) > 63 or _DNS_LABEL.fullmatch(name) is None:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case '
                    "alphanumeric characters or '-', and must start and end with an alphanumeric character",
                )
            )
        elif name in names:
            causes.append(("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{name}"'))
        names.add(str(name))
    number = port.get("port")
    if not _is_int(number) or not 1 <= number <= 65535:
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.port",
                f"Invalid value: {number}: must be between 1 and 65535, inclusive",
            )
        )
    protocol = port.get("protocol")
    if protocol not in PROTOCOLS:
        causes.append(_supported(f"{path}.protocol", protocol, PROTOCOLS))
    target = port.get("targetPort")
    if _is_int(target):
        if not 1 <= target <= 65535:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.targetPort",
                    f"Invalid value: {target}: must be between 1 and 65535, inclusive",
                )
            )
    elif isinstance(target, str) and not (
        len(target) <= 15
        and _IANA_SVC_NAME.fullmatch(target)
        and _IANA_LETTER.fullmatch(target)
        and "--" not in target
        and not target.startswith("-")
        and not target.endswith("-")
    ):
        causes.append(
            ("FieldValueInvalid", f"{path}.targetPort", f'Invalid value: "{target}": must be a port name')
        )
    node_port = port.get("nodePort")
    if node_port is not None and (not _is_int(node_port) or not 0 <= node_port <= 65535):
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.nodePort",
                f"Invalid value: {node_port}: must be between 1 and 65535, inclusive",
            )
        )
    return causes


def _go_service_port(port: Mapping[str, Any]) -> str:
    """The key of a duplicate port as upstream prints it (Go's ``%#v`` of a ServicePort holding
    only the protocol and the port)."""
    return (
        f'core.ServicePort{{Name:"", Protocol:"{port.get("protocol")}", AppProtocol:(*string)(nil), '
        f'Port:{port.get("port")}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, NodePort:0}}'
    )


def _patch_allocated_values(old: Mapping[str, Any], new: dict[str, Any]) -> None:
    """What an update leaves out that was allocated before is kept (upstream
    ``patchAllocatedValues``): the cluster IPs, and each port's node port by port name."""
    if needs_cluster_ip(old) and needs_cluster_ip(new):
        if not new.get("clusterIP") and old.get("clusterIP"):
            new["clusterIP"] = old["clusterIP"]
        if not new.get("clusterIPs") and old.get("clusterIPs"):
            new["clusterIPs"] = list(old["clusterIPs"])
    if needs_node_ports(old) and needs_node_ports(new):
        used_new = {p.get("nodePort") for p in new.get("ports") or [] if isinstance(p, dict)}
        used_old = {p.get("nodePort") for p in old.get("ports") or [] if isinstance(p, dict)}
        used = used_old & used_new
        by_name = {p.get("name"): p.get("nodePort") for p in old.get("ports") or [] if isinstance(p, dict)}
        for port in new.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                was = by_name.get(port.get("name"))
                if was and was not in used:
                    port["nodePort"] = was
    if (
        old.get("healthCheckNodePort")
        and not new.get("healthCheckNodePort")
        and _needs_health_check_port(old)
        and _needs_health_check_port(new)
    ):
        new["healthCheckNodePort"] = old["healthCheckNodePort"]


def _normalize_cluster_ips(old: Mapping[str, Any], new: dict[str, Any]) -> None:
    """An update that changed only one of ``clusterIP`` and ``clusterIPs`` changes the other to
    match (upstream ``NormalizeClusterIPs``)."""
    ip_changed = new.get("clusterIP") != old.get("clusterIP")
    ips_changed = new.get("clusterIPs") != old.get("clusterIPs")
    if ip_changed and not ips_changed:
        if not new.get("clusterIP"):
            new.pop("clusterIPs", None)
        elif new.get("clusterIPs"):
            new["clusterIPs"] = [new["clusterIP"], *new["clusterIPs"][1:]]
    elif ips_changed and not ip_changed:
        ips = new.get("clusterIPs") or []
        if ips:
            new["clusterIP"] = ips[0]
        else:
            new.pop("clusterIP", None)


def _needs_health_check_port(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == LOAD_BALANCER and spec.get("externalTrafficPolicy") == "Local"


def _drop_type_dependent_fields(old: Mapping[str, Any], new: dict[str, Any]) -> None:
    """A type change drops what the new type has no use for, when the update left it as it was
    (upstream ``dropTypeDependentFields``): the cluster IPs and families of an ExternalName
    Service, the node ports of a ClusterIP one, the traffic policy and health check port of a
    Service that is no longer exposed on nodes."""
    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if new.get(field) == old.get(field):
                new.pop(field, None)
    if needs_node_ports(old) and not needs_node_ports(new):
        old_ports = [p.get("nodePort") for p in old.get("ports") or [] if isinstance(p, dict)]
        new_ports = [p.get("nodePort") for p in new.get("ports") or [] if isinstance(p, dict)]
        if old_ports == new_ports:
            for port in new.get("ports") or []:
                if isinstance(port, dict):
                    port.pop("nodePort", None)
    if new.get("type") not in (NODE_PORT, LOAD_BALANCER) and new.get("externalTrafficPolicy") == old.get(
        "externalTrafficPolicy"
    ):
        new.pop("externalTrafficPolicy", None)
    if not _needs_health_check_port(new) and new.get("healthCheckNodePort") == old.get("healthCheckNodePort"):
        new.pop("healthCheckNodePort", None)
    if new.get("type") != LOAD_BALANCER and new.get("allocateLoadBalancerNodePorts") == old.get(
        "allocateLoadBalancerNodePorts"
    ):
        new.pop("allocateLoadBalancerNodePorts", None)


def _immutable_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    """A Service keeps its cluster IP while it has one (upstream ``ValidateServiceUpdate``)."""
    if not needs_cluster_ip(old) or not needs_cluster_ip(new):
        return []
    was, now = old.get("clusterIP"), new.get("clusterIP")
    if was and now != was:
        return [
            (
                "FieldValueInvalid",
                "spec.clusterIPs[0]",
                f"Invalid value: {_go_strings(new)}: may not change once set",
            )
        ]
    return []


def _go_strings(spec: Mapping[str, Any]) -> str:
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return "[]string{" + ", ".join(f'"{ip}"' for ip in ips) + "}"


def _allocate_cluster_ips(
    store: ClusterStore,
    name: str,
    old: Mapping[str, Any] | None,
    spec: dict[str, Any],
    uid: str | None,
) -> None:
    """``clusterIP``/``clusterIPs`` in step, the IP family policy and families (upstream
    ``initIPFamilyFields``), then an address for a Service that has none."""
    cidrs = servicealloc.service_cidrs(store)
    configured = sorted({c.version for c in cidrs}, key=lambda v: [c.version for c in cidrs].index(v))
    default_family = configured[0]
    ip, ips = spec.get("clusterIP"), spec.get("clusterIPs")
    if ip and not ips:
        spec["clusterIPs"] = [ip]
    elif ips and not ip:
        spec["clusterIP"] = ips[0]
    elif ip and ips and ips[0] != ip:
        raise invalid(
            "Service",
            "",
            name,
            [
                (
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    f"Invalid value: {_go_strings(spec)}: element [0] must match clusterIP",
                )
            ],
        )
    headless = spec.get("clusterIP") == NONE
    selectorless = not spec.get("selector")
    if spec.get("ipFamilyPolicy") is None:
        if old is not None and old.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        elif headless and selectorless:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    policy = spec["ipFamilyPolicy"]
    families: list[str] = list(spec.get("ipFamilies") or [])
    names = {4: "IPv4", 6: "IPv6"}
    for i, given in enumerate(spec.get("clusterIPs") or []):
        if given == NONE or not _valid_ip(given):
            break
        family = names[ipaddress.ip_address(given).version]
        if i >= len(families):
            families.append(family)
    if headless and selectorless:
        if not families:
            families = [names[default_family]]
        if len(families) < 2 and policy != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        return
    causes: list[Cause] = []
    if policy == "RequireDualStack" and len(configured) < 2:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.ipFamilyPolicy",
                f'Invalid value: "{policy}": this cluster is not configured for dual-stack services',
            )
        )
    for i, family in enumerate(families):
        if family not in (names[v] for v in configured):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"spec.ipFamilies[{i}]",
                    f'Invalid value: "{family}": not configured on this cluster',
                )
            )
    if causes:
        raise invalid("Service", "", name, causes)
    if not families:
        families = [names[default_family]]
    spec["ipFamilies"] = families
    if headless:
        return
    wanted = spec.get("clusterIP") or ""
    if old is not None and wanted and wanted == old.get("clusterIP"):
        return  # kept from before
    taken = servicealloc.taken_ips(store, uid)
    family_version = 4 if families[0] == "IPv4" else 6
    if not wanted:
        allocated = servicealloc.allocate_ip(cidrs, family_version, taken)
        spec["clusterIP"] = allocated
        spec["clusterIPs"] = [allocated]
        return
    why = servicealloc.check_ip(wanted, cidrs, taken)
    if why is not None:
        raise invalid(
            "Service",
            "",
            name,
            [
                (
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    f"Invalid value: {_go_strings(spec)}: failed to allocate IP {wanted}: {why}",
                )
            ],
        )


def _allocate_node_ports(
    store: ClusterStore, name: str, old: Mapping[str, Any], spec: dict[str, Any], uid: str | None
) -> None:
    """Node ports for the ports that have none, and a check of those asked for by value; a port
    number served over two protocols shares one node port, as upstream allocates them."""
    taken = servicealloc.taken_node_ports(store, uid)
    kept = {p.get("nodePort") for p in old.get("ports") or [] if isinstance(p, dict) and p.get("nodePort")}
    causes: list[Cause] = []
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    mine: dict[int, int] = {}  # node port → how many of this Service's ports use it
    by_port: dict[Any, int] = {}
    for i, port in enumerate(ports):
        wanted = port.get("nodePort")
        if not wanted:
            continue
        by_port.setdefault(port.get("port"), wanted)
        if wanted in kept or wanted in mine:
            mine[wanted] = mine.get(wanted, 0) + 1
            continue
        why = servicealloc.check_node_port(wanted, taken)
        if why is not None:
            causes.append(
                ("FieldValueInvalid", f"spec.ports[{i}].nodePort", f"Invalid value: {wanted}: {why}")
            )
        mine[wanted] = 1
    if causes:
        raise invalid("Service", "", name, causes)
    if not needs_node_ports(spec):
        return
    taken |= set(mine)
    for port in ports:
        if port.get("nodePort"):
            continue
        shared = by_port.get(port.get("port"))
        if shared is not None:
            port["nodePort"] = shared
            continue
        allocated = servicealloc.allocate_node_port(taken)
        taken.add(allocated)
        port["nodePort"] = allocated
        by_port[port.get("port")] = allocated
    if _needs_health_check_port(spec) and not spec.get("healthCheckNodePort"):
        allocated = servicealloc.allocate_node_port(taken)
        spec["healthCheckNodePort"] = allocated


STRATEGY = ServiceStrategy(
    Resource("", "v1", "services", "service", "Service", True, ("svc",), ("status",), ("all",))
)
