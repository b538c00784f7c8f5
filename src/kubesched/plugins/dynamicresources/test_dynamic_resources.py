"""DynamicResources through its extension points: upstream ``dynamicresources_test.go`` (case names
verbatim) — ``TestPlugin`` runs PreEnqueue, PreFilter, Filter per node, Reserve, Unreserve,
PreBind and PostFilter as the scheduler would and checks each step's status, the claims as stored
afterwards, the claim the assume cache holds and the allocation in flight;
``Test_isSchedulableAfterClaimChange`` and ``Test_isSchedulableAfterPodChange`` the queueing hints.

The claims live in an embedded store that the plugin writes through the ResourceClaimWriter port;
``prepare`` changes stand for another writer (a driver, a user) changing a claim between steps.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import FINALIZER, ResourceClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueueingHint
from kubesched.plugins.dynamicresources import DynamicResources, DynamicResourcesError
from kubesched.plugins.testing import build_snapshot, node_dict, node_statuses
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

Obj = dict[str, Any]

NODE = "worker"
NODE2 = "worker-2"
NODE3 = "worker-3"
DRIVER = "some-driver"
POD = "my-pod"
POD_UID = "1234"
RESOURCE = "my-resource"
RESOURCE2 = RESOURCE + "-2"
CLAIM = f"{POD}-{RESOURCE}"
CLASS = "my-resource-class"
NAMESPACE = "default"
ATTR = "healthy"  # only the devices of the second and third node have it
HOSTNAME = "kubernetes.io/hostname"

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def node(name: str) -> Node:
    return Node.from_dict(
        node_dict(name, {"cpu": "8", "memory": "16Gi", "pods": 110}, labels={HOSTNAME: name})
    )


WORKER, WORKER2, WORKER3 = node(NODE), node(NODE2), node(NODE3)


def resource_slice(node_name: str, *, healthy: bool = False, **device: Any) -> Obj:
    dev: Obj = {"name": "instance-1", **device}
    if healthy:
        dev["attributes"] = {ATTR: {"bool": True}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [dev],
        },
    }


WORKER_SLICE = resource_slice(NODE)
WORKER2_SLICE = resource_slice(NODE2, healthy=True)
WORKER3_SLICE = resource_slice(NODE3, healthy=True)

DEVICE_CLASS: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS}}
CLAIM_CEL_ERROR = f"claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: {ATTR}"
BROKEN_SELECTOR = {"cel": {"expression": f'device.attributes["{DRIVER}"].{ATTR}'}}


def pod_dict(claims: dict[str, dict[str, str]], name: str = POD, uid: str = POD_UID) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [{"name": n, **src} for n, src in claims.items()],
        },
    }


def with_claim_statuses(pod: Obj, **generated: str) -> Obj:
    pod = copy.deepcopy(pod)
    pod["status"] = {
        "resourceClaimStatuses": [{"name": n, "resourceClaimName": c} for n, c in generated.items()]
    }
    return pod


POD_WITH_CLAIM_NAME = pod_dict({RESOURCE: {"resourceClaimName": CLAIM}})
POD_WITH_CLAIM_TEMPLATE = pod_dict({RESOURCE: {"resourceClaimTemplateName": CLAIM}})
POD_WITH_CLAIM_TEMPLATE_IN_STATUS = with_claim_statuses(POD_WITH_CLAIM_TEMPLATE, **{RESOURCE: CLAIM})
POD_WITH_TWO_CLAIM_TEMPLATES = pod_dict(
    {RESOURCE: {"resourceClaimTemplateName": CLAIM}, RESOURCE2: {"resourceClaimTemplateName": CLAIM}}
)


def claim_dict(name: str = CLAIM, *, prioritized: bool = False) -> Obj:
    request: Obj = {"name": "req-1"}
    if prioritized:
        request["firstAvailable"] = [{"name": "subreq-1", "deviceClassName": CLASS}]
    else:
        request["exactly"] = {"deviceClassName": CLASS}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"devices": {"requests": [request]}},
    }


def owned(claim: Obj) -> Obj:
    claim = copy.deepcopy(claim)
    claim["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": POD_UID, "controller": True}
    ]
    return claim


def allocation(request: str = "req-1", **result: Any) -> Obj:
    return {
        "devices": {
            "results": [
                {"request": request, "driver": DRIVER, "pool": NODE, "device": "instance-1", **result}
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}
            ]
        },
    }


def allocated(claim: Obj, alloc: Obj | None = None) -> Obj:
    """The claim with an allocation and the finalizer that comes with it (upstream's builder)."""
    claim = copy.deepcopy(claim)
    claim.setdefault("status", {})["allocation"] = alloc if alloc is not None else allocation()
    claim["metadata"]["finalizers"] = [FINALIZER]
    return claim


def reserved(claim: Obj, pod: Obj = POD_WITH_CLAIM_NAME) -> Obj:
    claim = copy.deepcopy(claim)
    meta = pod["metadata"]
    claim.setdefault("status", {}).setdefault("reservedFor", []).append(
        {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}
    )
    return claim


def admin_access(claim: Obj) -> Obj:
    claim = copy.deepcopy(claim)
    for request in claim["spec"]["devices"]["requests"]:
        request["exactly"]["adminAccess"] = True
    for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", []):
        result["adminAccess"] = True
    return claim


def break_cel(claim_or_class: Obj) -> Obj:
    obj = copy.deepcopy(claim_or_class)
    if obj["kind"] == "DeviceClass":
        obj.setdefault("spec", {})["selectors"] = [BROKEN_SELECTOR]
    else:
        for request in obj["spec"]["devices"]["requests"]:
            request["exactly"]["selectors"] = [BROKEN_SELECTOR]
    return obj


def with_class(claim: Obj, class_name: str) -> Obj:
    claim = copy.deepcopy(claim)
    for request in claim["spec"]["devices"]["requests"]:
        if "exactly" in request:
            request["exactly"]["deviceClassName"] = class_name
        for sub in request.get("firstAvailable") or []:
            sub["deviceClassName"] = class_name
    return claim


def taint_devices(slice_obj: Obj) -> Obj:
    slice_obj = copy.deepcopy(slice_obj)
    for device in slice_obj["spec"]["devices"]:
        device["taints"] = [{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]
    return slice_obj


CLAIM_OBJ = claim_dict()
PENDING_CLAIM = owned(CLAIM_OBJ)
PENDING_CLAIM_WITH_PRIORITIZED_LIST = owned(claim_dict(prioritized=True))
ALLOCATED_CLAIM = allocated(PENDING_CLAIM)
ALLOCATED_CLAIM_WITH_PRIORITIZED_LIST = allocated(
    PENDING_CLAIM_WITH_PRIORITIZED_LIST, allocation("req-1/subreq-1")
)
IN_USE_CLAIM = reserved(ALLOCATED_CLAIM)
IN_USE_CLAIM_WITH_PRIORITIZED_LIST = reserved(ALLOCATED_CLAIM_WITH_PRIORITIZED_LIST)
ALLOCATED_CLAIM_WITH_WRONG_TOPOLOGY = allocated(
    PENDING_CLAIM,
    {
        "nodeSelector": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}
                    ]
                }
            ]
        }
    },
)
ALLOCATED_CLAIM_WITH_GOOD_TOPOLOGY = allocated(
    PENDING_CLAIM,
    {
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [NODE]}]}
            ]
        }
    },
)
OTHER_CLAIM = claim_dict("not-my-claim")
OTHER_ALLOCATED_CLAIM = allocated(OTHER_CLAIM)


# -------------------------------------------------------------------------------------------------
# What a step is expected to do.

#: A claim as compared: name → its finalizers and status (uid, resourceVersion and the rest of the
#: metadata are the store's).
Claims = dict[str, Obj]
Change = Callable[[Obj], Obj]


def comparable(claim: Mapping[str, Any] | ResourceClaim) -> Obj:
    raw = claim.raw if isinstance(claim, ResourceClaim) else claim
    meta = raw.get("metadata") or {}
    return {"finalizers": list(meta.get("finalizers") or []), "status": dict(raw.get("status") or {})}


@dataclass
class Result:
    status: Status | None = None
    #: Applied to every stored claim (by name: the function decides), as upstream's ``changes``.
    changes: Change | None = None
    assumed_claim: Obj | None = None
    in_flight_claim: Obj | None = None


@dataclass
class Want:
    preenqueue: Result = field(default_factory=Result)
    prefilter: Result = field(default_factory=Result)
    filter: dict[str, Result] = field(default_factory=dict)
    reserve: Result = field(default_factory=Result)
    unreserve: Result = field(default_factory=Result)
    prebind: Result = field(default_factory=Result)
    postfilter: Result = field(default_factory=Result)
    unreserve_after_bind_failure: Result | None = None
    unreserve_before_pre_bind: Result | None = None


@dataclass
class Prepare:
    """Changes another writer makes to the stored claims before a step."""

    reserve: Change | None = None
    prebind: Change | None = None
    postfilter: Change | None = None


@dataclass
class Case:
    pod: Obj
    claims: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    objs: list[Obj] = field(default_factory=list)
    nodes: list[Node] | None = None
    want: Want = field(default_factory=Want)
    prepare: Prepare = field(default_factory=Prepare)
    gates: dict[str, bool] = field(default_factory=dict)


def only(name: str, change: Change) -> Change:
    """A change of the claim called ``name``; others stay."""

    def apply(claim: Obj) -> Obj:
        return change(claim) if claim["metadata"]["name"] == name else claim

    return apply


def set_status(status: Obj, *, finalizers: list[str] | None = None) -> Change:
    def apply(claim: Obj) -> Obj:
        claim = copy.deepcopy(claim)
        claim["status"] = copy.deepcopy(status)
        if finalizers is not None:
            claim["metadata"]["finalizers"] = list(finalizers)
        return claim

    return only(CLAIM, apply)


def reserved_for_pod(claim: Obj) -> Obj:
    return reserved(claim)


def unschedulable(message: str) -> Status:
    return Status.unschedulable(message, unresolvable=True)


def plain_unschedulable(message: str) -> Status:
    return Status.unschedulable(message)


def error(message: str) -> Status:
    return Status.error(message)


SKIP = Status(Code.SKIP)

#: After PreBind allocated and reserved the claim (from ``with-resources``).
WITH_RESOURCES_PREBIND = Result(
    changes=set_status(IN_USE_CLAIM["status"], finalizers=[FINALIZER]),
    assumed_claim=reserved(ALLOCATED_CLAIM),
)

CASES: dict[str, Case] = {
    "empty": Case(
        pod={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "foo", "namespace": "default", "uid": "foo"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
        want=Want(
            prefilter=Result(SKIP), postfilter=Result(plain_unschedulable("no new claims to deallocate"))
        ),
    ),
    "claim-reference": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[ALLOCATED_CLAIM, OTHER_CLAIM],
        want=Want(prebind=Result(changes=only(CLAIM, reserved_for_pod))),
    ),
    "claim-template": Case(
        pod=POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        claims=[ALLOCATED_CLAIM, OTHER_CLAIM],
        want=Want(prebind=Result(changes=only(CLAIM, reserved_for_pod))),
    ),
    "missing-claim": Case(
        pod=POD_WITH_CLAIM_TEMPLATE,
        claims=[ALLOCATED_CLAIM, OTHER_CLAIM],
        want=Want(preenqueue=Result(unschedulable('pod "default/my-pod": ResourceClaim not created yet'))),
    ),
    "deleted-claim": Case(
        pod=POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        claims=[
            {
                **ALLOCATED_CLAIM,
                "metadata": {**ALLOCATED_CLAIM["metadata"], "deletionTimestamp": "2025-01-01T00:00:00Z"},
            }
        ],
        want=Want(preenqueue=Result(unschedulable('resourceclaim "my-pod-my-resource" is being deleted'))),
    ),
    "wrong-claim": Case(
        pod=POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        claims=[
            {
                **ALLOCATED_CLAIM,
                "metadata": {
                    **ALLOCATED_CLAIM["metadata"],
                    "ownerReferences": [
                        {**ALLOCATED_CLAIM["metadata"]["ownerReferences"][0], "uid": POD_UID + "123"}
                    ],
                },
            }
        ],
        want=Want(
            preenqueue=Result(
                unschedulable(
                    "ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod "
                    "(pod is not owner)"
                )
            )
        ),
    ),
    "no-resources": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        want=Want(
            filter={NODE: Result(unschedulable("cannot allocate all claims"))},
            postfilter=Result(plain_unschedulable("still not schedulable")),
        ),
    ),
    "with-resources": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "with-resources-has-finalizer": Case(
        # As before, but the finalizer is already set (the scheduler may have been interrupted).
        pod=POD_WITH_CLAIM_NAME,
        claims=[{**PENDING_CLAIM, "metadata": {**PENDING_CLAIM["metadata"], "finalizers": [FINALIZER]}}],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "with-resources-finalizer-gets-removed": Case(
        # The finalizer is set, then removed before PreBind: the write meets a conflict, reads the
        # claim again and adds the finalizer back.
        pod=POD_WITH_CLAIM_NAME,
        claims=[{**PENDING_CLAIM, "metadata": {**PENDING_CLAIM["metadata"], "finalizers": [FINALIZER]}}],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        prepare=Prepare(prebind=lambda c: {**c, "metadata": {**c["metadata"], "finalizers": []}}),
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "with-resources-finalizer-gets-added": Case(
        # No finalizer at first, added before PreBind.
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        prepare=Prepare(prebind=lambda c: {**c, "metadata": {**c["metadata"], "finalizers": [FINALIZER]}}),
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "skip-bind": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), unreserve_before_pre_bind=Result()),
    ),
    "exhausted-resources": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM, OTHER_ALLOCATED_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(
            filter={NODE: Result(unschedulable("cannot allocate all claims"))},
            postfilter=Result(plain_unschedulable("still not schedulable")),
        ),
    ),
    # Device taints only check that the gate reaches the allocator.
    "tainted-device-disabled": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[taint_devices(WORKER_SLICE)],
        gates={"DRADeviceTaints": False},
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "tainted-device-enabled": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[taint_devices(WORKER_SLICE)],
        gates={"DRADeviceTaints": True},
        want=Want(
            filter={NODE: Result(unschedulable("cannot allocate all claims"))},
            postfilter=Result(plain_unschedulable("still not schedulable")),
        ),
    ),
    "request-admin-access-with-DRAAdminAccess-featuregate": Case(
        # The pending claim asks for admin access: allocation succeeds although the device is taken.
        pod=POD_WITH_CLAIM_NAME,
        claims=[admin_access(PENDING_CLAIM), OTHER_ALLOCATED_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        gates={"DRAAdminAccess": True},
        want=Want(
            reserve=Result(in_flight_claim=admin_access(ALLOCATED_CLAIM)),
            prebind=Result(
                changes=set_status(admin_access(IN_USE_CLAIM)["status"], finalizers=[FINALIZER]),
                assumed_claim=reserved(admin_access(ALLOCATED_CLAIM)),
            ),
        ),
    ),
    "request-admin-access-without-DRAAdminAccess-featuregate": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[admin_access(PENDING_CLAIM), OTHER_ALLOCATED_CLAIM],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        gates={"DRAAdminAccess": False},
        want=Want(
            filter={
                NODE: Result(
                    error(
                        "claim default/my-pod-my-resource, request req-1: admin access is requested, but the "
                        "feature is disabled"
                    )
                )
            }
        ),
    ),
    "structured-ignore-allocated-admin-access": Case(
        # The allocated claim uses admin access: a second claim may take the same device.
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM, admin_access(OTHER_ALLOCATED_CLAIM)],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(reserve=Result(in_flight_claim=ALLOCATED_CLAIM), prebind=WITH_RESOURCES_PREBIND),
    ),
    "claim-parameters-CEL-runtime-error": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[break_cel(PENDING_CLAIM)],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        want=Want(filter={NODE: Result(error(CLAIM_CEL_ERROR))}),
    ),
    "class-parameters-CEL-runtime-error": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        classes=[break_cel(DEVICE_CLASS)],
        objs=[WORKER_SLICE],
        want=Want(
            filter={
                NODE: Result(
                    error(f"class my-resource-class: selector #0: CEL runtime error: no such key: {ATTR}")
                )
            }
        ),
    ),
    # A CEL runtime error on one node keeps the pod pending even though another node would do:
    # something is wrong with the claim, and scheduling the pod would hide it.
    "CEL-runtime-error-for-one-of-two-nodes": Case(
        nodes=[WORKER, WORKER2],
        pod=POD_WITH_CLAIM_NAME,
        claims=[break_cel(PENDING_CLAIM)],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE, WORKER2_SLICE],
        want=Want(filter={NODE: Result(error(CLAIM_CEL_ERROR))}),
    ),
    "missing-class": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM],
        want=Want(
            prefilter=Result(unschedulable(f"request req-1: device class {CLASS} does not exist")),
            postfilter=Result(plain_unschedulable("no new claims to deallocate")),
        ),
    ),
    "wrong-topology": Case(
        # PostFilter deallocates the claim so that the next attempt may allocate it elsewhere.
        pod=POD_WITH_CLAIM_NAME,
        claims=[ALLOCATED_CLAIM_WITH_WRONG_TOPOLOGY],
        want=Want(
            filter={NODE: Result(unschedulable("resourceclaim not available on the node"))},
            postfilter=Result(
                plain_unschedulable("deallocation of ResourceClaim completed"),
                changes=set_status({}, finalizers=[FINALIZER]),
            ),
        ),
    ),
    "good-topology": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[ALLOCATED_CLAIM_WITH_GOOD_TOPOLOGY],
        want=Want(prebind=Result(changes=only(CLAIM, reserved_for_pod))),
    ),
    "bind-failure": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[ALLOCATED_CLAIM_WITH_GOOD_TOPOLOGY],
        want=Want(
            prebind=Result(changes=only(CLAIM, reserved_for_pod)),
            unreserve_after_bind_failure=Result(
                changes=only(CLAIM, lambda c: {**c, "status": {**c["status"], "reservedFor": []}})
            ),
        ),
    ),
    "reserved-okay": Case(pod=POD_WITH_CLAIM_NAME, claims=[IN_USE_CLAIM]),
    "DRA-disabled": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[IN_USE_CLAIM],
        gates={"DynamicResourceAllocation": False},
        want=Want(prefilter=Result(SKIP), postfilter=Result(plain_unschedulable("plugin disabled"))),
    ),
    "claim-with-request-with-unknown-device-class": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[with_class(CLAIM_OBJ, "does-not-exist")],
        want=Want(
            prefilter=Result(unschedulable("request req-1: device class does-not-exist does not exist")),
            postfilter=Result(plain_unschedulable("no new claims to deallocate")),
        ),
    ),
    "claim-with-prioritized-list-feature-disabled": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[claim_dict(prioritized=True)],
        classes=[DEVICE_CLASS],
        gates={"DRAPrioritizedList": False},
        want=Want(
            prefilter=Result(
                unschedulable(
                    "resource claim default/my-pod-my-resource, request req-1: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            ),
            postfilter=Result(plain_unschedulable("no new claims to deallocate")),
        ),
    ),
    "claim-with-prioritized-list-unknown-device-class": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[with_class(claim_dict(prioritized=True), "does-not-exist")],
        gates={"DRAPrioritizedList": True},
        want=Want(
            prefilter=Result(
                unschedulable("request req-1/subreq-1: device class does-not-exist does not exist")
            ),
            postfilter=Result(plain_unschedulable("no new claims to deallocate")),
        ),
    ),
    "claim-with-prioritized-list": Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[PENDING_CLAIM_WITH_PRIORITIZED_LIST],
        classes=[DEVICE_CLASS],
        objs=[WORKER_SLICE],
        gates={"DRAPrioritizedList": True},
        want=Want(
            reserve=Result(in_flight_claim=ALLOCATED_CLAIM_WITH_PRIORITIZED_LIST),
            prebind=Result(
                changes=set_status(IN_USE_CLAIM_WITH_PRIORITIZED_LIST["status"], finalizers=[FINALIZER]),
                assumed_claim=reserved(ALLOCATED_CLAIM_WITH_PRIORITIZED_LIST),
            ),
        ),
    ),
}


# -------------------------------------------------------------------------------------------------
# Running a case.


class Run:
    def __init__(self, case: Case) -> None:
        self.store = MemoryStore()
        for obj in [*case.classes, *case.claims, *case.objs]:
            self.store.create(copy.deepcopy(obj))
        self.snapshot = build_snapshot(case.nodes if case.nodes is not None else [WORKER])
        self.handle = Handle(
            informer_factory(self.store),
            StorePorts(self.store).ports(),
            self.snapshot,
            lambda: 0.0,
            feature_gates=case.gates,
        )
        self.plugin = DynamicResources(None, self.handle)
        self.handle.informers.pump()
        self.state = CycleState()

    def claims(self) -> Claims:
        return {c["metadata"]["name"]: comparable(c) for c in self.store.list("ResourceClaim")}

    def raw_claims(self) -> dict[str, Mapping[str, Any]]:
        return {c["metadata"]["name"]: c for c in self.store.list("ResourceClaim")}

    def prepare(self, change: Change | None) -> None:
        if change is None:
            return
        for claim in self.store.list("ResourceClaim"):
            updated = change(copy.deepcopy(dict(claim)))
            if comparable(updated) != comparable(claim) or updated["metadata"] != claim["metadata"]:
                self.store.update(updated)
        self.handle.informers.pump()

    def assumed(self) -> list[Obj]:
        manager = self.plugin.manager
        if manager is None:
            return []
        out = []
        for claim in manager.list_claims():
            if manager.claims.get(claim.key) is not manager.claims.get_api_obj(claim.key):
                out.append(comparable(claim))
        return out

    def in_flight(self) -> list[Obj]:
        manager = self.plugin.manager
        if manager is None:
            return []
        return [comparable(c) for c in manager.in_flight_claims()]

    def verify(
        self, step: str, want: Result, before: dict[str, Mapping[str, Any]], status: Status | None
    ) -> None:
        got = _normalized(status)
        assert got == _normalized(want.status), f"{step}: status {got} != {_normalized(want.status)}"
        expected = {
            name: comparable(want.changes(copy.deepcopy(dict(obj))) if want.changes else obj)
            for name, obj in before.items()
        }
        assert self.claims() == expected, f"{step}: stored claims"
        assert self.assumed() == ([comparable(want.assumed_claim)] if want.assumed_claim else []), (
            f"{step}: assumed claims"
        )
        assert self.in_flight() == ([comparable(want.in_flight_claim)] if want.in_flight_claim else []), (
            f"{step}: in-flight claims"
        )


def _normalized(status: Status | None) -> tuple[Code, str] | None:
    if status is None or status.code == Code.SUCCESS:
        return None
    return status.code, status.message


def run_case(case: Case) -> None:
    run = Run(case)
    pod = Pod.from_dict(case.pod)
    want = case.want
    plugin = run.plugin

    before = run.raw_claims()
    status = plugin.pre_enqueue(pod)
    run.verify("PreEnqueue", want.preenqueue, before, status)
    if status is not None and not status.ok:
        return

    before = run.raw_claims()
    _, status = plugin.pre_filter(run.state, pod, run.snapshot)
    run.verify("PreFilter", want.prefilter, before, status)
    unschedulable = status is not None and not status.ok

    potential: list[str] = []
    if not unschedulable:
        before = run.raw_claims()
        try:
            statuses = node_statuses(plugin.filter_nodes(run.state, pod, run.snapshot.table), run.snapshot)
        except DynamicResourcesError as exc:
            # The framework reports the plugin's error; upstream stops at the first node.
            first = run.snapshot.table.names[int(run.snapshot.table.order[0])]
            run.verify(f"Filter/{first}", want.filter.get(first, Result()), before, Status.error(str(exc)))
            return
        for name, node_status in statuses.items():
            run.verify(f"Filter/{name}", want.filter.get(name, Result()), before, node_status)
            if node_status is None:
                potential.append(name)
        unschedulable = not potential

    selected = potential[0] if potential and not unschedulable else None
    if selected is not None:
        run.prepare(case.prepare.reserve)
        before = run.raw_claims()
        status = plugin.reserve(run.state, pod, selected)
        run.verify("Reserve", want.reserve, before, status)
        unschedulable = status is not None and not status.ok
        if unschedulable:
            before = run.raw_claims()
            plugin.unreserve(run.state, pod, selected)
            run.verify("Unreserve", want.unreserve, before, None)
            return
        if want.unreserve_before_pre_bind is not None:
            before = run.raw_claims()
            plugin.unreserve(run.state, pod, selected)
            run.verify("Unreserve before PreBind", want.unreserve_before_pre_bind, before, None)
            return
        run.prepare(case.prepare.prebind)
        before = run.raw_claims()
        status = plugin.pre_bind(run.state, pod, selected)
        run.handle.informers.pump()
        run.verify("PreBind", want.prebind, before, status)
        if want.unreserve_after_bind_failure is not None:
            before = run.raw_claims()
            plugin.unreserve(run.state, pod, selected)
            run.verify("Unreserve after bind failure", want.unreserve_after_bind_failure, before, None)
    elif not potential:
        run.prepare(case.prepare.postfilter)
        before = run.raw_claims()
        diagnosis = Diagnosis(len(run.snapshot.table.order))
        _, status = plugin.post_filter(run.state, pod, diagnosis)
        run.verify("PostFilter", want.postfilter, before, status)


@pytest.mark.parametrize("name", list(CASES))
def test_plugin(name: str) -> None:
    run_case(CASES[name])


# -------------------------------------------------------------------------------------------------
# Queueing hints.


def hint_run(claims: list[Obj]) -> Run:
    return Run(Case(pod=POD_WITH_CLAIM_NAME, claims=claims))


def stored_view(run: Run, obj: Obj, *, old: Obj | None) -> ResourceClaim:
    """Write ``obj`` (created, or updated over ``old``) and return it as the informer parsed it."""
    if old is None:
        written = run.store.create(copy.deepcopy(obj))
    else:
        held = run.store.get("ResourceClaim", NAMESPACE, obj["metadata"]["name"])
        assert held is not None
        written = run.store.update(
            {**copy.deepcopy(obj), "metadata": {**obj["metadata"], "uid": held["metadata"]["uid"]}}
        )
    run.handle.informers.pump()
    return ResourceClaim.from_dict(written)


def _with(claim: Obj, **meta: Any) -> Obj:
    claim = copy.deepcopy(claim)
    claim["metadata"].update(meta)
    return claim


CLAIM_HINT_CASES: dict[str, tuple[Obj, list[Obj], Obj | None, Any, QueueingHint]] = {
    # name: (pod, claims stored first, old, new, hint); old/new "claims" are written as the change.
    "skip-wrong-claim": (
        POD_WITH_CLAIM_TEMPLATE,
        [],
        None,
        _with(
            ALLOCATED_CLAIM,
            ownerReferences=[{**ALLOCATED_CLAIM["metadata"]["ownerReferences"][0], "uid": POD_UID + "123"}],
        ),
        QueueingHint.QUEUE_SKIP,
    ),
    "skip-unrelated-claim": (
        POD_WITH_CLAIM_TEMPLATE,
        [ALLOCATED_CLAIM],
        None,
        _with(ALLOCATED_CLAIM, name=CLAIM + "-foo"),
        QueueingHint.QUEUE_SKIP,
    ),
    "queue-on-add": (POD_WITH_CLAIM_NAME, [], None, PENDING_CLAIM, QueueingHint.QUEUE),
    "skip-adding-finalizer": (
        POD_WITH_CLAIM_NAME,
        [PENDING_CLAIM],
        PENDING_CLAIM,
        _with(PENDING_CLAIM, finalizers=["foo"]),
        QueueingHint.QUEUE_SKIP,
    ),
    "queue-on-status-change": (
        POD_WITH_CLAIM_NAME,
        [PENDING_CLAIM],
        PENDING_CLAIM,
        {**PENDING_CLAIM, "status": {"allocation": allocation()}},
        QueueingHint.QUEUE,
    ),
    "claim-deallocate": (
        POD_WITH_CLAIM_NAME,
        [PENDING_CLAIM, OTHER_ALLOCATED_CLAIM],
        OTHER_ALLOCATED_CLAIM,
        {**OTHER_ALLOCATED_CLAIM, "status": {}},
        QueueingHint.QUEUE,
    ),
}


@pytest.mark.parametrize("name", list(CLAIM_HINT_CASES))
def test_is_schedulable_after_claim_change(name: str) -> None:
    pod, stored, old, new, want = CLAIM_HINT_CASES[name]
    run = hint_run(stored)
    old_view = None
    if old is not None:
        manager = run.plugin.manager
        assert manager is not None
        old_view = manager.get_claim(NAMESPACE, old["metadata"]["name"])
    new_view = stored_view(run, new, old=old)
    assert run.plugin.is_schedulable_after_claim_change(Pod.from_dict(pod), old_view, new_view) == want


POD_HINT_CASES: dict[str, tuple[list[Obj], Obj, Obj, QueueingHint]] = {
    # name: (stored claims, the waiting pod, its update, hint)
    "complete": (
        [PENDING_CLAIM],
        POD_WITH_CLAIM_TEMPLATE,
        POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        QueueingHint.QUEUE,
    ),
    "wrong-pod": (
        [PENDING_CLAIM],
        {
            **POD_WITH_CLAIM_TEMPLATE,
            "metadata": {**POD_WITH_CLAIM_TEMPLATE["metadata"], "name": POD + "2", "uid": POD_UID + "2"},
        },
        POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        QueueingHint.QUEUE_SKIP,
    ),
    "missing-claim": (
        [],
        POD_WITH_CLAIM_TEMPLATE,
        POD_WITH_CLAIM_TEMPLATE_IN_STATUS,
        QueueingHint.QUEUE_SKIP,
    ),
    "incomplete": (
        [PENDING_CLAIM],
        POD_WITH_TWO_CLAIM_TEMPLATES,
        # Only one of two claims created.
        with_claim_statuses(POD_WITH_TWO_CLAIM_TEMPLATES, **{RESOURCE: CLAIM}),
        QueueingHint.QUEUE_SKIP,
    ),
}


@pytest.mark.parametrize("name", list(POD_HINT_CASES))
def test_is_schedulable_after_pod_change(name: str) -> None:
    stored, pod, updated, want = POD_HINT_CASES[name]
    run = hint_run(stored)
    hint = run.plugin.is_schedulable_after_pod_change(Pod.from_dict(pod), None, Pod.from_dict(updated))
    assert hint == want


def test_pods_with_claims_are_not_signable() -> None:
    run = hint_run([])
    _, status = run.plugin.sign_pod(Pod.from_dict(POD_WITH_CLAIM_NAME))
    assert status is not None and not status.ok
    _, status = run.plugin.sign_pod(Pod.from_dict(CASES["empty"].pod))
    assert status is None
