"""What the controllers share (upstream ``pkg/controller/controller_utils.go``): owner references,
pods made from a template, generated names, status writes, and :class:`OwnerController`, the
reconcile loop of a controller whose objects own others."""

from __future__ import annotations

import copy
import functools
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from kubesched.api.owners import controller_ref
from kubesched.registry.admission import admit, apply_defaults
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.memory import format_timestamp
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

#: A namespaced object's key: namespace and name.
Key = tuple[str, str]

#: The letters of generated names (upstream ``utilrand``: no vowels, no look-alike digits).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def normalized(value: Any) -> Any:
    """A value with null, empty maps and empty lists left out, as Go reads them into a struct:
    upstream compares templates as Go values, where an absent field and an empty one are equal
    (what kubectl writes back on ``rollout undo`` carries ``creationTimestamp: null`` and
    ``resources: {}``)."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            n = normalized(v)
            if n is None or n == {} or n == []:
                continue
            out[k] = n
        return out
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def safe_hash(data: bytes) -> str:
    """FNV-32a of ``data``, its decimal form written in safe letters (upstream's ``ComputeHash``
    and ``HashControllerRevision`` with ``rand.SafeEncodeString``)."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHABET[ord(ch) % len(_ALPHABET)] for ch in str(h))


def timestamp(seconds: float | None = None) -> str:
    return format_timestamp(time.time() if seconds is None else seconds)


def seconds(stamp: Any) -> float | None:
    """The time a stamp such as ``creationTimestamp`` names; None if it is not one."""
    return _parse_stamp(str(stamp))


# Every Event's creation time is read as it arrives, and many share a second.
@functools.lru_cache(maxsize=256)
def _parse_stamp(stamp: str) -> float | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def generate_name(base: str) -> str:
    """``base`` with a random suffix, as the API server's generateName does."""
    return f"{base}-{''.join(random.choices(_ALPHABET, k=5))}"


def namespaced_key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace")), str(meta.get("name")))


def owner_uids(obj: Mapping[str, Any]) -> list[str]:
    """The uids of every owner ``obj`` names."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if isinstance(r, dict)]


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the owner that controls ``obj``, if one does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def sync_guarded(work: Callable[[Any], None], arg: Any, logger: logging.Logger, what: str) -> None:
    """Run one sync of a controller. A write refused because the object changed under it is left
    alone: the event of its newer version makes it due again. Anything else is logged, not raised,
    so one bad object does not stop the controller's other work."""
    try:
        work(arg)
    except (Conflict, NotFound, AlreadyExists):
        pass
    except Exception:
        logger.exception("%s: syncing %s", what, getattr(arg, "name", arg))


def owner_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    """The reference that makes ``owner`` the controller of what carries it."""
    meta = owner["metadata"]
    return controller_ref(str(owner.get("apiVersion")), str(owner.get("kind")), meta["name"], meta["uid"])


def create_pod(
    store: SqliteStore,
    owner: Obj,
    name: str,
    template: Mapping[str, Any],
    extra_labels: Mapping[str, str],
    *,
    extra_annotations: Mapping[str, str] | None = None,
    finalizers: list[str] | None = None,
    generate_from: str | None = None,
) -> None:
    """Create the pod ``template`` describes, controlled by ``owner`` (``generate_from``: the
    ``generateName`` its name was made from)."""
    tmeta = template.get("metadata") or {}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"].get("namespace"),
            "labels": {**(tmeta.get("labels") or {}), **extra_labels},
            "ownerReferences": [owner_ref(owner)],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    if tmeta.get("annotations") or extra_annotations:
        pod["metadata"]["annotations"] = {**(tmeta.get("annotations") or {}), **(extra_annotations or {})}
    if finalizers:
        pod["metadata"]["finalizers"] = list(finalizers)
    if generate_from is not None:
        pod["metadata"]["generateName"] = generate_from
    apply_defaults(pod)
    admit(store, pod)
    store.create(pod)


def write_status(store: SqliteStore, obj: Obj, status: dict[str, Any]) -> None:
    """Write ``status`` unless the object already has it."""
    if obj.get("status") == status:
        return
    store.update({**obj, "status": status})


class OwnerController:
    """A controller of one kind whose objects own others of ``dependent_kind``.

    The informers say what changed: an object of ``kind`` and the owners of a dependent that
    changed are due for :meth:`reconcile` at the next :meth:`sync`. What reconcile is given is
    read from the store when it runs, so its writes name the latest resourceVersion. Every write it
    makes changes the object or one of its dependents, so it runs again until a pass changes
    nothing. A pass that fails part way (the object changed under it) is retried once anything in
    the store changed (:meth:`requeue_failed`)."""

    kind: ClassVar[str]
    dependent_kind: ClassVar[str] = "Pod"

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        #: The objects of ``kind`` by uid.
        self._keys: dict[str, Key] = {}
        #: Per owner uid, its dependents, in the order the store made them.
        self._dependents: dict[str, dict[Key, None]] = {}
        #: Per dependent, the owners it is filed under.
        self._owners: dict[Key, tuple[str, ...]] = {}
        self._due: dict[Key, None] = {}
        self._failed: dict[Key, None] = {}
        informers.informer(self.kind).add_handler(self._on_object)
        informers.informer(self.dependent_kind).add_handler(self._on_dependent)

    def owners_of(self, dependent: Obj) -> Iterable[str]:
        """The uids whose reconcile reads ``dependent``: its controller's."""
        uid = controller_uid(dependent)
        return (uid,) if uid else ()

    def reconcile(self, obj: Obj, dependents: list[Obj]) -> None:
        raise NotImplementedError

    # -- informer handlers -----------------------------------------------------------------------
    def _on_object(self, change: Change[Any]) -> None:
        uid = str((change.obj.get("metadata") or {}).get("uid"))
        if change.type == EventType.DELETED:
            self._keys.pop(uid, None)
            for dependent in self._dependents.pop(uid, {}):
                rest = tuple(u for u in self._owners.pop(dependent, ()) if u != uid)
                if rest:
                    self._owners[dependent] = rest
            return
        key = namespaced_key(change.obj)
        self._keys[uid] = key
        self._due[key] = None

    def _on_dependent(self, change: Change[Any]) -> None:
        obj = change.obj
        owned = bool((obj.get("metadata") or {}).get("ownerReferences"))
        if not owned:
            # Most pods have no owner: unless one just lost its owners, nothing is filed for it.
            was = change.old
            if change.type != EventType.MODIFIED or (
                was is not None and not (was.get("metadata") or {}).get("ownerReferences")
            ):
                return
        key = namespaced_key(obj)
        old = self._owners.get(key, ())
        if change.type == EventType.DELETED or not owned:
            new: tuple[str, ...] = ()
        else:
            new = tuple(u for u in self.owners_of(obj) if u in self._keys)
        if not old and not new:
            return
        if old != new:
            for uid in old:
                if uid not in new and (filed := self._dependents.get(uid)) is not None:
                    filed.pop(key, None)
            for uid in new:
                if uid not in old:
                    self._dependents.setdefault(uid, {})[key] = None
            if new:
                self._owners[key] = new
            else:
                del self._owners[key]
        for uid in (*old, *new):
            owner = self._keys.get(uid)
            if owner is not None:
                self._due[owner] = None

    # -- due work --------------------------------------------------------------------------------
    def requeue_failed(self) -> None:
        self._due.update(self._failed)
        self._failed.clear()

    def sync(self) -> None:
        if not self._due:
            return
        due, self._due = self._due, {}
        for key in due:
            obj = self.store.get(self.kind, *key)
            if obj is None:
                continue
            try:
                self.reconcile(obj, self._dependents_of(obj))
            except (Conflict, NotFound, AlreadyExists):
                self._failed[key] = None  # changed under us: the next pass sees the newer state
            except Exception:
                log.exception("reconciling %s %s", self.kind, obj.get("metadata", {}).get("name"))
                self._failed[key] = None

    def _dependents_of(self, obj: Obj) -> list[Obj]:
        uid = str(obj["metadata"]["uid"])
        out: list[Obj] = []
        for namespace, name in list(self._dependents.get(uid, ())):
            dependent = self.store.get(self.dependent_kind, namespace, name)
            if dependent is not None and uid in self.owners_of(dependent):
                out.append(dependent)
        return out
