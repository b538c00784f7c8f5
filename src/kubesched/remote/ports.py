"""The side-effect ports over a real API server.

Both schedulers call these synchronously, from the driver's thread (or a binding worker's); each
call is a coroutine run on the client's event loop (:class:`~kubesched.remote.loop.LoopThread`) and
waited for, except events, which are queued and sent in the background so that scheduling never
waits on them.

What each port writes, as kube-scheduler and Volcano write it:

- bind: ``POST pods/{name}/binding`` (a ``v1`` Binding to the Node, with the pod's uid as a
  precondition so that a pod deleted and recreated under the same name is not bound). The server
  refuses with Conflict or NotFound; those propagate as the store's exceptions and the scheduler
  forgets the assumed pod and requeues it. Nothing is retried here.
- pod conditions: a strategic merge patch of ``pods/{name}/status`` (upstream ``PatchPodStatus``),
  skipped when the condition and nomination are already as wanted; ``lastTransitionTime`` moves only
  when the condition's status changes.
- evictions: the ``DisruptionTarget`` condition first (as upstream preemption), then the Eviction
  API (``policy/v1``, or ``policy/v1beta1`` on servers without it). A disruption budget that
  blocks it (429) or a pod already gone leaves the pod where it is and returns False.
- events: ``events.k8s.io/v1`` Events, or core ``v1`` Events on servers without that group.
- PodGroups (``scheduling.volcano.sh/v1beta1``): status by a JSON merge patch of the status
  subresource (of the object where the CRD has none); create, taking an existing one as it is.
- pod annotations: a JSON merge patch of the pod.
- volumes (upstream ``bindAPIUpdate``): a ``PUT`` of the whole PersistentVolume or
  PersistentVolumeClaim, carrying the resourceVersion it was read at; a stale one is refused with
  Conflict, a missing object with NotFound, and both propagate as the store's exceptions.
- ResourceClaims (``resource.k8s.io/v1``, as DynamicResources writes them): a ``PUT`` of the claim
  (the finalizer) or of its ``status`` subresource (allocation, ``reservedFor``), with the same
  Conflict and NotFound; a ``POST`` for the claim of extended resources; a ``DELETE`` with the uid
  as a precondition.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, WORKLOAD_API_VERSION, with_condition
from kubesched.remote.client import RemoteNotFound
from kubesched.store.base import AlreadyExists, Conflict, NotFound, Obj, StoreError
from kubesched.store.ports import DISRUPTION_TARGET, Ports

log = logging.getLogger(__name__)

T = TypeVar("T")

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
VOLCANO = "scheduling.volcano.sh/v1beta1"
RESOURCE = "resource.k8s.io/v1"
#: Volcano's ``PodGroupStatus`` fields.
POD_GROUP_STATUS_FIELDS = frozenset({"phase", "conditions", "running", "succeeded", "failed"})
#: events.k8s.io/v1 refuses a note longer than this (upstream ``maxNoteLength``).
MAX_NOTE = 1024


class Api(Protocol):
    """What the ports need of :class:`kubesched.remote.client.ApiClient`."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> Any: ...


class Loop(Protocol):
    """What the ports need of :class:`kubesched.remote.loop.LoopThread`."""

    loop: asyncio.AbstractEventLoop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T: ...

    def call_soon_batched(self, call: Callable[[], None]) -> None: ...


@dataclass(frozen=True, slots=True)
class ApiFeatures:
    """Which versions of the APIs the ports write the server serves (from discovery)."""

    #: The group/version of the Eviction subresource: ``policy/v1`` or ``policy/v1beta1``.
    eviction: str = "policy/v1"
    #: Whether ``events.k8s.io/v1`` is served (otherwise core ``v1`` Events are written).
    events_v1: bool = True
    #: Whether PodGroups have a status subresource.
    pod_group_status: bool = True
    #: Whether Volcano's Queues are served (their status is written only then).
    queues: bool = True
    #: Whether scheduling.k8s.io serves PodGroups (GenericWorkload on): their conditions are
    #: written only then.
    workload_pod_groups: bool = False


class RemoteError(StoreError):
    """A write the server did not answer (connection lost, timed out)."""


class NotLeading(RemoteError):
    """A write not sent: this replica no longer holds the leader's Lease."""


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def _retryable(exc: BaseException) -> bool:
    """A write the server did not answer, or answered with a failure of its own (5xx) or a request
    to slow down (429): worth trying again later, unlike a refusal of the write itself."""
    code = _code(exc)
    return code is None or code >= 500 or code == 429


def _pod_path(namespace: str, name: str, sub: str | None = None) -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def _pod_group_path(namespace: str, name: str | None = None, sub: str | None = None) -> str:
    path = f"/apis/{VOLCANO}/namespaces/{quote(namespace, safe='')}/podgroups"
    if name is not None:
        path += f"/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def _workload_pod_group_path(namespace: str, name: str, sub: str | None = None) -> str:
    ns, pg = quote(namespace, safe=""), quote(name, safe="")
    path = f"/apis/{WORKLOAD_API_VERSION}/namespaces/{ns}/podgroups/{pg}"
    return f"{path}/{sub}" if sub else path


def _volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{quote(name, safe='')}"


def _claim_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/persistentvolumeclaims/{quote(name, safe='')}"


def _resource_claim_path(namespace: str, name: str | None = None, sub: str | None = None) -> str:
    path = f"/apis/{RESOURCE}/namespaces/{quote(namespace, safe='')}/resourceclaims"
    if name is not None:
        path += f"/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def _queue_path(name: str, sub: str | None = None) -> str:
    path = f"/apis/{VOLCANO}/queues/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def _time(t: datetime.datetime) -> str:
    """metav1.Time: seconds, UTC."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(t: datetime.datetime) -> str:
    """metav1.MicroTime: microseconds, UTC."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class RemotePorts:
    """Every port of :mod:`kubesched.store.ports`, written to an API server.

    ``current`` looks an object up in the scheduler's own view of the cluster (the mirror store): a
    condition write compares with it, as upstream compares with its informer's copy of the pod.
    """

    def __init__(
        self,
        client: Api,
        loop: Loop,
        *,
        features: ApiFeatures | None = None,
        current: Callable[[str, str | None, str], Obj | None] | None = None,
        events_client: Api | None = None,
        identity: str | None = None,
        timeout: float = 60.0,
        event_queue: int = 1000,
        now: Callable[[], datetime.datetime] = _utcnow,
        retry_interval: tuple[float, float] = (0.5, 10.0),
    ) -> None:
        self.client = client
        self.loop = loop
        self.features = features or ApiFeatures()
        self.current = current
        self.timeout = timeout
        self.now = now
        #: Where events come from (upstream ``reportingInstance`` is the controller and this).
        self.identity = identity or socket.gethostname()
        self.events = EventSink(events_client or client, loop, capacity=event_queue)
        #: Kinds whose CRD has no status subresource (their status is patched on the object).
        self._without_status_subresource: set[str] = set() if self.features.pod_group_status else {"PodGroup"}
        #: The first and the longest pause between tries of the condition writes not yet taken.
        self.retry_interval = retry_interval
        # Condition writes the server did not take (unreachable, 5xx, 429), by (namespace, name,
        # condition type): the condition, the nomination and the pod's uid when it was written.
        self._unwritten: dict[tuple[str, str, str], tuple[Mapping[str, Any], str | None, str]] = {}
        self._writing: set[tuple[str, str, str]] = set()
        self._retries = threading.Condition()
        self._retrier: threading.Thread | None = None
        self._closed = False
        #: Whether this replica may still decide (None: always). Binds, evictions and the other
        #: writes that carry a scheduling decision are not sent once it says no: a standby may have
        #: taken over and placed the same pods with the same capacity.
        self.fence: Callable[[], bool] | None = None

    def _check_fence(self, what: str) -> None:
        if self.fence is not None and not self.fence():
            raise NotLeading(f"{what}: not sent, this replica no longer holds the leader's Lease")

    def _run(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        """Run a request on the loop and wait for it. The client raises ``StoreError``s (refusals
        and lost connections alike); a request that outlives ``timeout`` becomes one too."""
        try:
            return self.loop.run(coro, self.timeout)
        except TimeoutError as exc:
            raise RemoteError(f"{what}: no answer within {self.timeout:g}s") from exc

    # -- Binder ----------------------------------------------------------------------------------
    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        what = f"binding pod {namespace}/{name} to node {node_name}"
        self._check_fence(what)
        self._run(
            self.client.request(
                "POST",
                _pod_path(namespace, name, "binding"),
                body=_binding(namespace, name, uid, node_name),
                decode=False,
            ),
            what,
        )

    def bind_later(
        self, namespace: str, name: str, uid: str, node_name: str, done: Callable[[Exception | None], None]
    ) -> None:
        """:meth:`bind` as a task on the client's loop, without waiting: ``done`` is called on the
        loop with None once the Binding is written, or with the ``StoreError`` that refused it."""
        what = f"binding pod {namespace}/{name} to node {node_name}"
        try:
            self._check_fence(what)
        except NotLeading as exc:
            done(exc)
            return
        request = self.client.request
        path = _pod_path(namespace, name, "binding")
        body = _binding(namespace, name, uid, node_name)

        def finished(task: asyncio.Future[Any]) -> None:
            if task.cancelled():
                done(RemoteError(f"{what}: not sent, the client is stopping"))
                return
            exc = task.exception()
            if exc is None:
                done(None)
            else:
                done(exc if isinstance(exc, StoreError) else RemoteError(f"{what}: {exc}"))

        def start() -> None:
            task = asyncio.ensure_future(request("POST", path, body=body, decode=False))
            task.add_done_callback(finished)

        try:
            self.loop.call_soon_batched(start)
        except RuntimeError as exc:
            done(RemoteError(f"{what}: {exc}"))

    # -- PodStatusWriter -------------------------------------------------------------------------
    def set_pod_condition(
        self,
        namespace: str,
        name: str,
        condition: Mapping[str, Any],
        nominated_node: str | None = None,
    ) -> Obj | None:
        """A write the server did not take for want of an answer (unreachable, 5xx, 429) is logged,
        as upstream's, and tried again in the background until it is written, a newer write of the
        same condition replaces it, or the pod is gone or bound: the reason a pod waits reaches it
        even when the pod is not tried again for minutes."""
        key = (namespace, name, str(condition.get("type")))
        with self._retries:
            # After a retry of the same condition under way: it may have put itself back.
            self._retries.wait_for(lambda: key not in self._writing)
            self._unwritten.pop(key, None)
            self._writing.add(key)
        try:
            return self._patch_condition(namespace, name, condition, nominated_node)
        except NotFound:
            return None
        except StoreError as exc:
            log.warning("updating the %s condition of pod %s/%s: %s", key[2], namespace, name, exc)
            if _retryable(exc):
                held = self.current("Pod", namespace, name) if self.current is not None else None
                uid = str(((held or {}).get("metadata") or {}).get("uid") or "")
                self._retry_later(key, (dict(condition), nominated_node, uid))
            return None
        finally:
            with self._retries:
                self._writing.discard(key)
                self._retries.notify_all()

    def _retry_later(
        self, key: tuple[str, str, str], entry: tuple[Mapping[str, Any], str | None, str]
    ) -> None:
        with self._retries:
            if self._closed:
                return
            self._unwritten[key] = entry
            if self._retrier is None:
                self._retrier = threading.Thread(
                    target=self._retry_unwritten, name="pod-status-retries", daemon=True
                )
                self._retrier.start()
            self._retries.notify_all()

    def _retry_unwritten(self) -> None:
        """The background writer of :attr:`_unwritten`: a pause (doubling while the server keeps
        refusing), then every condition still unwritten, oldest first."""
        first, longest = self.retry_interval
        pause = first
        while True:
            with self._retries:
                self._retries.wait_for(lambda: self._closed or bool(self._unwritten))
                # The whole pause, however often other writes wake the condition meanwhile.
                deadline = time.monotonic() + pause
                while not self._closed and (left := deadline - time.monotonic()) > 0:
                    self._retries.wait(left)
                if self._closed:
                    return
                todo = list(self._unwritten.items())
            failed = False
            for key, entry in todo:
                with self._retries:
                    if self._unwritten.get(key) is not entry or key in self._writing:
                        continue  # replaced by a newer write meanwhile
                    del self._unwritten[key]
                    self._writing.add(key)
                try:
                    if not self._stale(key, entry):
                        self._patch_condition(key[0], key[1], entry[0], entry[1])
                except NotFound:
                    pass
                except StoreError as exc:
                    if _retryable(exc):
                        failed = True
                        with self._retries:
                            self._unwritten.setdefault(key, entry)
                    else:
                        log.warning("updating the %s condition of pod %s/%s: %s", key[2], key[0], key[1], exc)
                finally:
                    with self._retries:
                        self._writing.discard(key)
                        self._retries.notify_all()
            pause = min(longest, pause * 2) if failed else first

    def _stale(self, key: tuple[str, str, str], entry: tuple[Mapping[str, Any], str | None, str]) -> bool:
        """Whether an unwritten condition no longer applies: the pod gone or replaced, or bound since
        (a PodScheduled=False would contradict its binding)."""
        if self.current is None:
            return False
        pod = self.current("Pod", key[0], key[1])
        if pod is None:
            return True
        uid = (pod.get("metadata") or {}).get("uid")
        if entry[2] and uid != entry[2]:
            return True
        return (
            key[2] == "PodScheduled"
            and entry[0].get("status") == "False"
            and bool((pod.get("spec") or {}).get("nodeName"))
        )

    def _patch_condition(
        self,
        namespace: str,
        name: str,
        condition: Mapping[str, Any],
        nominated_node: str | None,
    ) -> Obj | None:
        """Upstream ``updatePod``: nothing is written when the condition (status, reason, message)
        and the nomination already are as wanted."""
        pod = self.current("Pod", namespace, name) if self.current is not None else None
        status = (pod.get("status") or {}) if pod is not None else {}
        old = next(
            (c for c in status.get("conditions") or [] if c.get("type") == condition.get("type")), None
        )
        new = {k: v for k, v in condition.items() if v is not None}
        if (
            old is not None
            and old.get("status") == new.get("status")
            and "lastTransitionTime" not in new
            and old.get("lastTransitionTime")
        ):
            new["lastTransitionTime"] = old["lastTransitionTime"]
        new.setdefault("lastTransitionTime", _time(self.now()))
        nominate = nominated_node is not None and (status.get("nominatedNodeName") or "") != nominated_node
        keys = ("status", "reason", "message", "lastTransitionTime")
        unchanged = old is not None and all(old.get(k) == new.get(k) for k in keys)
        if pod is not None and unchanged and not nominate:
            return pod
        patch_status: dict[str, Any] = {"conditions": [new]}
        if nominated_node is not None and (pod is None or nominate):
            patch_status["nominatedNodeName"] = nominated_node or None
        result = self._run(
            self.client.request(
                "PATCH",
                _pod_path(namespace, name, "status"),
                body={"status": patch_status},
                content_type=STRATEGIC_MERGE,
            ),
            f"patching the status of pod {namespace}/{name}",
        )
        return result if isinstance(result, Mapping) else None

    # -- Evictor ---------------------------------------------------------------------------------
    def evict(self, namespace: str, name: str, reason: str, message: str) -> bool:
        if self.fence is not None and not self.fence():
            log.warning(
                "not evicting pod %s/%s: this replica no longer holds the leader's Lease", namespace, name
            )
            return False
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": reason, "message": message}
        try:
            marked = self._patch_condition(namespace, name, condition, None)
        except NotFound:
            return False
        except StoreError as exc:
            log.warning("evicting pod %s/%s: marking it a disruption target: %s", namespace, name, exc)
            return False
        if marked is None:
            return False
        group_version = self.features.eviction
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        body: dict[str, Any] = {"apiVersion": group_version, "kind": "Eviction", "metadata": meta}
        uid = (marked.get("metadata") or {}).get("uid")
        if uid:
            # The pod marked above, not one recreated under its name since.
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        try:
            self._run(
                self.client.request("POST", _pod_path(namespace, name, "eviction"), body=body),
                f"evicting pod {namespace}/{name}",
            )
        except NotFound:
            return False
        except StoreError as exc:
            if _code(exc) == 429:
                log.info("evicting pod %s/%s: refused: %s", namespace, name, exc)
                self._unmark(namespace, name, str(exc))
            elif isinstance(exc, Conflict):
                log.info("evicting pod %s/%s: the pod was replaced: %s", namespace, name, exc)
            else:
                log.warning("evicting pod %s/%s: %s", namespace, name, exc)
            return False
        return True

    def _unmark(self, namespace: str, name: str, why: str) -> None:
        """The eviction was refused: the pod stays, and is no disruption target any more (what
        upstream's disruption controller does to such a condition after a while)."""
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "False",
            "reason": "EvictionRefused",
            "message": _note(why),
        }
        self.set_pod_condition(namespace, name, condition)

    # -- PodGroupStatusWriter --------------------------------------------------------------------
    def update_pod_group_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Obj | None:
        patch_status: dict[str, Any] = dict(status)
        # A merge patch keeps what it does not name: what the new status leaves out is removed.
        held = self.current("PodGroup", namespace, name) if self.current is not None else None
        fields = set(POD_GROUP_STATUS_FIELDS)
        if held is not None:
            fields |= (held.get("status") or {}).keys()
        for key in fields:
            patch_status.setdefault(key, None)
        return self._patch_status(
            "PodGroup",
            lambda sub: _pod_group_path(namespace, name, sub),
            {"status": patch_status},
            f"updating the status of PodGroup {namespace}/{name}",
        )

    # -- PodGroupConditionWriter ----------------------------------------------------------------
    def set_pod_group_condition(self, namespace: str, name: str, condition: Mapping[str, Any]) -> Obj | None:
        """A merge patch replaces a list whole: the conditions are the held ones with this one set."""
        held = self.current(POD_GROUP_STORE_KIND, namespace, name) if self.current is not None else None
        held_conditions = ((held or {}).get("status") or {}).get("conditions")
        conditions = with_condition(held_conditions, condition, _time(self.now()))
        if conditions is None:
            return held
        return self._patch_status(
            POD_GROUP_STORE_KIND,
            lambda sub: _workload_pod_group_path(namespace, name, sub),
            {"status": {"conditions": conditions}},
            f"setting the {condition.get('type')} condition of PodGroup {namespace}/{name}",
        )

    def _patch_status(self, kind: str, path: Callable[[str | None], str], body: Any, what: str) -> Obj | None:
        """A merge patch of the ``status`` subresource; where the kind's CRD has none (the object
        tells: the subresource is 404 while the object is not), of the object, from then on. None
        when the object is gone."""
        try:
            if kind not in self._without_status_subresource:
                try:
                    return self._merge_patch(path("status"), body, what)
                except NotFound:
                    updated = self._merge_patch(path(None), body, what)
                    self._without_status_subresource.add(kind)
                    log.info("%ss have no status subresource: patching the objects' status", kind)
                    return updated
            return self._merge_patch(path(None), body, what)
        except NotFound:
            return None

    def _merge_patch(self, path: str, body: Any, what: str) -> Obj | None:
        result = self._run(self.client.request("PATCH", path, body=body, content_type=MERGE_PATCH), what)
        return result if isinstance(result, Mapping) else None

    def create_pod_group(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name"))
        body = {**obj, "apiVersion": VOLCANO, "kind": "PodGroup"}
        try:
            created = self._run(
                self.client.request("POST", _pod_group_path(namespace), body=body),
                f"creating PodGroup {namespace}/{name}",
            )
        except RemoteNotFound as exc:
            if exc.reason:
                raise
            # A plain "404 page not found" (no Status): the path itself is not served.
            raise RemoteError(
                f"creating PodGroup {namespace}/{name}: {VOLCANO} podgroups is not served by this API "
                "server (are Volcano's CRDs installed?)"
            ) from exc
        except AlreadyExists:
            created = self._run(
                self.client.request("GET", _pod_group_path(namespace, name)),
                f"reading PodGroup {namespace}/{name}",
            )
        if not isinstance(created, Mapping):
            raise RemoteError(f"creating PodGroup {namespace}/{name}: the server answered no object")
        return created

    # -- QueueStatusWriter -----------------------------------------------------------------------
    def update_queue_status(self, name: str, status: Mapping[str, Any]) -> Obj | None:
        """A JSON merge patch of the Queue's status (the fields not named are the queue
        controller's and stay as they are)."""
        return self._patch_status(
            "Queue",
            lambda sub: _queue_path(name, sub),
            {"status": dict(status)},
            f"updating the status of Queue {name}",
        )

    # -- PodAnnotationWriter ---------------------------------------------------------------------
    def set_pod_annotations(self, namespace: str, name: str, annotations: Mapping[str, str]) -> Obj | None:
        self._check_fence(f"annotating pod {namespace}/{name}")
        try:
            return self._merge_patch(
                _pod_path(namespace, name),
                {"metadata": {"annotations": dict(annotations)}},
                f"annotating pod {namespace}/{name}",
            )
        except NotFound:
            return None

    # -- VolumeWriter ----------------------------------------------------------------------------
    def update_persistent_volume(self, obj: Obj) -> Obj:
        name = str((obj.get("metadata") or {}).get("name") or "")
        body = {**obj, "apiVersion": "v1", "kind": "PersistentVolume"}
        self._check_fence(f"updating PersistentVolume {name}")
        return self._put(_volume_path(name), body, f"updating PersistentVolume {name}")

    def update_persistent_volume_claim(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        body = {**obj, "apiVersion": "v1", "kind": "PersistentVolumeClaim"}
        self._check_fence(f"updating PersistentVolumeClaim {namespace}/{name}")
        return self._put(
            _claim_path(namespace, name), body, f"updating PersistentVolumeClaim {namespace}/{name}"
        )

    # -- ResourceClaimWriter ---------------------------------------------------------------------
    def get_resource_claim(self, namespace: str, name: str) -> Obj | None:
        try:
            got = self._run(
                self.client.request("GET", _resource_claim_path(namespace, name)),
                f"reading ResourceClaim {namespace}/{name}",
            )
        except NotFound:
            return None
        return got if isinstance(got, Mapping) else None

    @staticmethod
    def _claim_ref(obj: Obj) -> tuple[str, str, Obj]:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        return namespace, name, {**obj, "apiVersion": RESOURCE, "kind": "ResourceClaim"}

    def update_resource_claim(self, obj: Obj) -> Obj:
        namespace, name, body = self._claim_ref(obj)
        return self._put(
            _resource_claim_path(namespace, name), body, f"updating ResourceClaim {namespace}/{name}"
        )

    def update_resource_claim_status(self, obj: Obj) -> Obj:
        namespace, name, body = self._claim_ref(obj)
        return self._put(
            _resource_claim_path(namespace, name, "status"),
            body,
            f"updating the status of ResourceClaim {namespace}/{name}",
        )

    def create_resource_claim(self, obj: Obj) -> Obj:
        namespace, name, body = self._claim_ref(obj)
        created = self._run(
            self.client.request("POST", _resource_claim_path(namespace), body=body),
            f"creating ResourceClaim {namespace}/{name or (obj.get('metadata') or {}).get('generateName')}",
        )
        if not isinstance(created, Mapping):
            raise RemoteError(f"creating ResourceClaim in {namespace}: the server answered no object")
        return created

    def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        with contextlib.suppress(NotFound):
            self._run(
                self.client.request("DELETE", _resource_claim_path(namespace, name), body=body),
                f"deleting ResourceClaim {namespace}/{name}",
            )

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> Obj | None:
        try:
            return self._merge_patch(
                _pod_path(namespace, name, "status"),
                {"status": {"extendedResourceClaimStatus": dict(status)}},
                f"patching the status of pod {namespace}/{name}",
            )
        except NotFound:
            return None

    def _put(self, path: str, body: Obj, what: str) -> Obj:
        """Replace an object; the server's refusals (Conflict, NotFound, Invalid) propagate."""
        written = self._run(self.client.request("PUT", path, body=body), what)
        if not isinstance(written, Mapping):
            raise RemoteError(f"{what}: the server answered no object")
        return written

    # -- EventRecorder ---------------------------------------------------------------------------
    def record(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        """Queue the event and return at once (dropped, and counted, when the queue is full)."""
        if self.features.events_v1:
            path, event = self.event_v1(regarding, event_type, reason, action, note, reporter)
        else:
            path, event = self.core_event(regarding, event_type, reason, action, note, reporter)
        self.events.send(path, event)

    def event_v1(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> tuple[str, dict[str, Any]]:
        """An ``events.k8s.io/v1`` Event as upstream's event recorder makes it. An event about a
        cluster-scoped object goes in ``kube-system``: every server version accepts that (upstream's
        recorder uses ``default``, which servers before v1.22 refuse for these events)."""
        ref, namespace = _reference(regarding, "kube-system")
        now = self.now()
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": _event_name(ref["name"]), "namespace": namespace},
            "eventTime": _micro_time(now),
            "reportingController": reporter,
            "reportingInstance": f"{reporter}-{self.identity}"[:128],
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": _note(note),
            "type": event_type,
        }
        return f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events", event

    def core_event(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> tuple[str, dict[str, Any]]:
        """The same event as a core ``v1`` Event (servers without ``events.k8s.io/v1``)."""
        ref, namespace = _reference(regarding, "default")
        now = self.now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": _event_name(ref["name"]), "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": _note(note),
            "source": {"component": reporter, "host": self.identity},
            "firstTimestamp": _time(now),
            "lastTimestamp": _time(now),
            "count": 1,
            "type": event_type,
            "action": action,
            "reportingComponent": reporter,
            "reportingInstance": f"{reporter}-{self.identity}"[:128],
        }
        return f"/api/v1/namespaces/{quote(namespace, safe='')}/events", event

    # -- all of them -----------------------------------------------------------------------------
    def ports(self) -> Ports:
        return Ports(
            self,
            self,
            self,
            self,
            self,
            self,
            self if self.features.queues else None,
            volumes=self,
            resource_claims=self,
            pod_group_conditions=self if self.features.workload_pod_groups else None,
        )

    def close(self, timeout: float = 5.0) -> None:
        """Send the events still queued (for at most ``timeout`` seconds), then stop sending; condition
        writes still unwritten are dropped."""
        with self._retries:
            self._closed = True
            self._unwritten.clear()
            self._retries.notify_all()
        self.events.close(timeout)


def _binding(namespace: str, name: str, uid: str, node_name: str) -> dict[str, Any]:
    """A ``v1`` Binding of the pod to the node, with the pod's uid as a precondition."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def _reference(regarding: Obj, cluster_scoped_in: str) -> tuple[dict[str, Any], str]:
    """The object reference an event is about, and the namespace the event goes in: the object's,
    or ``cluster_scoped_in`` for a cluster-scoped object."""
    meta = regarding.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    kind = str(regarding.get("kind") or "")
    api_version = regarding.get("apiVersion")
    if not api_version:
        api_version = VOLCANO if kind in ("PodGroup", "Queue") else "v1"
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": str(meta.get("name") or "")}
    if namespace:
        ref["namespace"] = namespace
    for src, dst in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(src):
            ref[dst] = meta[src]
    return ref, namespace or cluster_scoped_in


def _event_name(name: str) -> str:
    """Upstream: the object's name and the time in nanoseconds, in hex."""
    return f"{name}.{time.time_ns():x}"


def _note(text: str) -> str:
    """Upstream ``truncateMessage``: a note longer than the API allows ends in " ..."."""
    if len(text) <= MAX_NOTE:
        return text
    return text[: MAX_NOTE - 4] + " ..."


class EventSink:
    """Events sent in the background on the client's loop, each as soon as it is recorded (as
    client-go's events broadcaster starts one goroutine per event, paced only by the client's rate
    limiter): recording one never waits on the server. At most ``capacity`` events wait on the
    server at once; past that an event is dropped, counted in :attr:`dropped` and logged (the first,
    then every hundredth)."""

    def __init__(self, client: Api, loop: Loop, *, capacity: int = 1000) -> None:
        self.client = client
        self.loop = loop
        self.capacity = capacity
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._lock = threading.Lock()
        #: The events on their way, touched only on the client's loop.
        self._sending: set[asyncio.Task[None]] = set()
        self._closed = False

    def send(self, path: str, event: dict[str, Any]) -> None:
        if self._closed:
            return
        # Events (and binds) handed over while the loop has not yet taken the earlier ones go with
        # them: one wake-up of the loop for all, each still sent on its own at once.
        try:
            self.loop.call_soon_batched(functools.partial(self._start, path, event))
        except RuntimeError:
            self._drop("the client's event loop is closed")

    def _start(self, path: str, event: dict[str, Any]) -> None:
        """On the loop: send the event, or drop it while ``capacity`` are on their way."""
        if len(self._sending) >= self.capacity:
            self._drop(f"{self.capacity} events are waiting to be sent")
            return
        task = asyncio.create_task(self._send(path, event))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _drop(self, why: str) -> None:
        with self._lock:
            self.dropped += 1
            dropped = self.dropped
        if dropped == 1 or dropped % 100 == 0:
            log.warning("dropping an event (%d dropped so far): %s", dropped, why)

    async def _send(self, path: str, event: dict[str, Any]) -> None:
        try:
            await self.client.request("POST", path, body=event, decode=False)
            self.sent += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Upstream drops an event the server refuses: it is not worth a retry loop.
            self.failed += 1
            meta = event.get("metadata") or {}
            log.info("event %s/%s not recorded: %s", meta.get("namespace"), meta.get("name"), exc)

    async def _drain(self, timeout: float) -> None:
        if not self._sending:
            return
        _, unsent = await asyncio.wait(set(self._sending), timeout=timeout)
        if unsent:
            log.warning("%d event(s) not sent before stopping", len(unsent))
            for task in unsent:
                task.cancel()
            await asyncio.gather(*unsent, return_exceptions=True)

    @property
    def pending(self) -> int:
        return len(self._sending)

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds), then stop the workers."""
        if self._closed:
            return
        self._closed = True
        try:
            self.loop.run(self._drain(timeout), timeout + 5.0)
        except (RuntimeError, TimeoutError) as exc:
            log.warning("stopping the event workers: %s", exc)
