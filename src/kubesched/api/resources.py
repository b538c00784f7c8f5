"""Resource names and the upstream rules for what a pod requests.

A pod's effective request follows upstream ``resourcehelper.PodRequests``:

* regular containers run together, so their requests add up;
* restartable init containers (sidecars, ``restartPolicy: Always``) keep running, so they add to the
  regular containers and to every later init container;
* ordinary init containers run one at a time, so the pod needs the largest of them (plus the sidecars
  started before it);
* the pod needs ``max(containers + sidecars, largest init step)`` per resource, plus ``spec.overhead``;
* pod-level ``spec.resources.requests`` (PodLevelResources, beta and on in v1.34) replace the
  container aggregate for the resources they name.

For scoring, upstream counts a container that does not say how much CPU or memory it wants as
100m / 200Mi ("non-zero requests"), so empty pods do not all pile onto one node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity, resource_amount
from kubesched.api.selectors import qualified_name_error
from kubesched.errors import InputError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

#: Largest amount a column of the node table holds; sums beyond it saturate there.
INT64_MAX = 2**63 - 1

#: Upstream defaults for containers without a CPU / memory request, used only for scoring.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

ResourceList = dict[str, int]


def is_extended_resource(name: str) -> bool:
    """Extended resources are domain-qualified names outside kubernetes.io (e.g. nvidia.com/gpu)."""
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or domain == "requests")


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def parse_resource_list(data: Any, field: str) -> ResourceList:
    """Parse a ``{name: quantity}`` mapping into canonical integers (milli-CPU, bytes, counts)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InputError(
            f"expected a mapping of resource name to quantity, got {type(data).__name__}", field=field
        )
    out: ResourceList = {}
    for name, value in data.items():
        if not isinstance(name, str) or not name:
            raise InputError("resource names must be non-empty strings", field=field)
        try:
            out[name] = resource_amount(name, value)
        except QuantityError as exc:
            # QuantityError's message already names the value: "invalid quantity 'abc': ..."
            raise InputError(str(exc), field=f"{field}.{name}") from None
    return out


def add_into(total: ResourceList, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        total[name] = total.get(name, 0) + value


def max_into(total: ResourceList, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if name not in total or value > total[name]:
            total[name] = value


#: Resources a container may name without a domain (upstream ``standardContainerResources``).
STANDARD_CONTAINER_RESOURCES = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE))


def container_resource_name_error(name: str) -> str | None:
    """Why a container may not request ``name`` (upstream ``validateContainerResourceName``), or None.

    ``pods`` in particular is a node capacity, never a container request.
    """
    if name in STANDARD_CONTAINER_RESOURCES:
        return None
    if "/" not in name:
        if is_hugepages(name):
            return None
        return (
            f"{name!r} is not a resource a container can request; use cpu, memory, ephemeral-storage, "
            "hugepages-<size> or a domain-qualified extended resource such as nvidia.com/gpu"
        )
    if (why := qualified_name_error(name)) is not None:
        return f"{name!r}: {why}"
    if "kubernetes.io/" in name:  # native resources under the kubernetes.io domain
        return None
    if name.startswith("requests.") or qualified_name_error(f"requests.{name}") is not None:
        return f"{name!r} doesn't follow the extended resource name standard"
    return None


def _check_container_resources(
    raw_requests: Mapping[str, Any], raw_limits: Mapping[str, Any], field: str
) -> None:
    """What the API server checks of a container's requests and limits beyond each quantity: resource
    names, whole numbers for extended resources and no request above its limit."""
    for kind, raw in (("requests", raw_requests), ("limits", raw_limits)):
        for name, value in raw.items():
            where = f"{field}.resources.{kind}.{name}"
            if (why := container_resource_name_error(name)) is not None:
                raise InputError(why, field=where)
            if is_extended_resource(name) and parse_quantity(value).denominator != 1:
                raise InputError(f"must be an integer, got {value!r}", field=where)
    for name, value in raw_requests.items():
        if name in raw_limits and parse_quantity(value) > parse_quantity(raw_limits[name]):
            raise InputError(
                f"must be less than or equal to the {name} limit of {raw_limits[name]}",
                field=f"{field}.resources.requests.{name}",
            )


def _container_requests(container: Mapping[str, Any], field: str) -> ResourceList:
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InputError("expected a mapping", field=f"{field}.resources")
    requests = parse_resource_list(resources.get("requests"), f"{field}.resources.requests")
    # Like the API server: a limit without a request defaults the request to the limit.
    limits = parse_resource_list(resources.get("limits"), f"{field}.resources.limits")
    if requests or limits:
        _check_container_resources(resources.get("requests") or {}, resources.get("limits") or {}, field)
    for name, value in limits.items():
        requests.setdefault(name, value)
    return requests


def _with_defaults(requests: ResourceList, defaults: Mapping[str, int]) -> ResourceList:
    out = dict(requests)
    for name, value in defaults.items():
        out.setdefault(name, value)
    return out


def _aggregate(
    containers: Iterable[ResourceList],
    init_containers: Iterable[tuple[ResourceList, bool]],
) -> ResourceList:
    total: ResourceList = {}
    for req in containers:
        add_into(total, req)
    sidecars: ResourceList = {}
    largest_init: ResourceList = {}
    for req, restartable in init_containers:
        if restartable:
            add_into(total, req)
            add_into(sidecars, req)
            step = dict(sidecars)
        else:
            step = dict(req)
            add_into(step, sidecars)
        max_into(largest_init, step)
    max_into(total, largest_init)
    return total


#: Requests worked out before, by the content they were worked out from (:func:`_requests_key`). The
#: pods of a workload repeat the same few container resources thousands of times, and the checks,
#: quantities and sums cost several times what the key does. Only results are kept: bad input is
#: parsed (and refused) afresh every time, so its error names the field it was read as.
_REQUESTS_MEMO: dict[tuple[Any, ...], tuple[ResourceList, ResourceList]] = {}
_REQUESTS_MEMO_SIZE = 4096


def _list_key(data: Any) -> tuple[Any, ...] | None:
    """A resource list's names and quantities as they were written, or None where the key could not
    tell apart two lists that parse differently: something other than a dict, or a name or quantity
    other than a plain str or int (``1 == 1.0 == True``)."""
    if data is None:
        return ()
    if type(data) is not dict:
        return None
    items = tuple(data.items())
    for name, value in items:
        if type(name) is not str or (type(value) is not str and type(value) is not int):
            return None
    return items


def _containers_key(containers: Any, init: bool) -> tuple[Any, ...] | None:
    """What :func:`pod_requests` reads of a container list: each container's requests and limits
    (and, for init containers, whether it restarts), or None where that is not plain data."""
    if containers is None:
        return ()
    if type(containers) is not list:
        return None
    key: list[Any] = []
    for c in containers:
        if type(c) is not dict:
            return None
        resources = c.get("resources")
        if resources is None:
            requests: tuple[Any, ...] | None = ()
            limits: tuple[Any, ...] | None = ()
        elif type(resources) is dict:
            requests = _list_key(resources.get("requests"))
            limits = _list_key(resources.get("limits"))
            if requests is None or limits is None:
                return None
        else:
            return None
        key.append(requests)
        key.append(limits)
        if init:
            key.append(c.get("restartPolicy") == "Always")
    return tuple(key)


def _requests_key(spec: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """Everything :func:`pod_requests` reads of ``spec``, hashable; None: not memoized."""
    containers = _containers_key(spec.get("containers"), False)
    if containers is None:
        return None
    inits = _containers_key(spec.get("initContainers"), True)
    if inits is None:
        return None
    pod_level = spec.get("resources")
    if pod_level is None:
        level: tuple[Any, ...] | None = ()
    elif type(pod_level) is dict:
        level = _list_key(pod_level.get("requests"))
        if level is None:
            return None
    else:
        return None
    overhead = _list_key(spec.get("overhead"))
    if overhead is None:
        return None
    return (containers, inits, level, overhead)


def pod_requests(
    spec: Mapping[str, Any], field: str = "spec", *, shared: bool = False
) -> tuple[ResourceList, ResourceList]:
    """Return ``(requests, nonzero_requests)`` of a pod spec, following upstream rules.

    ``nonzero_requests`` holds only cpu and memory, with the per-container scoring defaults applied.
    Both are the caller's own dicts, unless ``shared``: then pods of one shape get the same dicts,
    which nobody may change (a pod view keeps its requests for its life, and a cluster's pods are
    mostly a few shapes, so sharing saves a dict per pod).
    """
    key = _requests_key(spec)
    if key is not None:
        known = _REQUESTS_MEMO.get(key)
        if known is not None:
            return known if shared else (dict(known[0]), dict(known[1]))
    requests, nonzero = _pod_requests(spec, field)
    if key is not None:
        if len(_REQUESTS_MEMO) >= _REQUESTS_MEMO_SIZE:
            _REQUESTS_MEMO.clear()
        _REQUESTS_MEMO[key] = (dict(requests), dict(nonzero))
        if shared:
            return _REQUESTS_MEMO[key]
    return requests, nonzero


def _pod_requests(spec: Mapping[str, Any], field: str) -> tuple[ResourceList, ResourceList]:
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    if not isinstance(containers, list):
        raise InputError("expected a list", field=f"{field}.containers")
    if not isinstance(init_containers, list):
        raise InputError("expected a list", field=f"{field}.initContainers")
    regular: list[ResourceList] = []
    for i, c in enumerate(containers):
        if not isinstance(c, Mapping):
            raise InputError("expected a container mapping", field=f"{field}.containers[{i}]")
        regular.append(_container_requests(c, f"{field}.containers[{i}]"))
    inits: list[tuple[ResourceList, bool]] = []
    for i, c in enumerate(init_containers):
        if not isinstance(c, Mapping):
            raise InputError("expected a container mapping", field=f"{field}.initContainers[{i}]")
        inits.append(
            (_container_requests(c, f"{field}.initContainers[{i}]"), c.get("restartPolicy") == "Always")
        )

    requests = _aggregate(regular, inits)
    pod_level = spec.get("resources") or {}
    if not isinstance(pod_level, Mapping):
        raise InputError("expected a mapping", field=f"{field}.resources")
    level = parse_resource_list(pod_level.get("requests"), f"{field}.resources.requests")
    level = {name: value for name, value in level.items() if name in (CPU, MEMORY)}
    for name, value in level.items():
        requests[name] = value
    overhead = parse_resource_list(spec.get("overhead"), f"{field}.overhead")
    add_into(requests, overhead)

    # Upstream ``calculateResource``: without pod-level requests every container lacking a cpu /
    # memory request counts as 100m / 200Mi; with them, the defaults apply only to a resource that
    # neither the pod level nor any container (nor the overhead) names.
    defaults = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    if level:
        defaults = {name: value for name, value in defaults.items() if name not in requests}
    nonzero = _aggregate(
        (_with_defaults(r, defaults) for r in regular),
        ((_with_defaults(r, defaults), restartable) for r, restartable in inits),
    )
    for name, value in level.items():
        nonzero[name] = value
    add_into(nonzero, overhead)
    requests = {k: v for k, v in requests.items() if v != 0 or k in (CPU, MEMORY)}
    return requests, {CPU: nonzero.get(CPU, 0), MEMORY: nonzero.get(MEMORY, 0)}
