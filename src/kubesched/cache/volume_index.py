"""Which pods the cache holds use which volumes, kept up to date by the cache, so the volume plugins
never scan every pod.

Two aggregates, both over the pods the cache has on nodes (bound or assumed):

* **Claim users** — per ``(namespace, claimName)`` of a ``persistentVolumeClaim`` volume, how many
  pods use it on each node slot (upstream's ``NodeInfo.PVCRefCounts``, summed by the snapshot into
  ``StorageInfos().IsPVCUsedByPods``).
* **Inline disk pods** — the pods with a GCE PD, AWS EBS, RBD or iSCSI volume of their own (the
  sources a second read-write mount on one node conflicts with), and their slots.

Pods without volumes cost one attribute check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from kubesched.api.objects import Pod

__all__ = ["INLINE_DISK_KINDS", "VolumeIndex"]

#: Volume sources whose use by two pods of one node may conflict (upstream ``needsRestrictionsCheck``).
INLINE_DISK_KINDS: Final = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi"})

ClaimKey = tuple[str, str]


def _claims_of(pod: Pod) -> list[ClaimKey]:
    return [(pod.namespace, v.claim_name) for v in pod.volumes if v.source_kind == "persistentVolumeClaim"]


def _has_inline_disk(pod: Pod) -> bool:
    return any(v.source_kind in INLINE_DISK_KINDS for v in pod.volumes)


class VolumeIndex:
    """Claim users and inline-disk pods per node slot, maintained by the scheduler cache."""

    def __init__(self) -> None:
        #: uid → (slot, pod) of every indexed pod (those with volumes).
        self._entries: dict[str, tuple[int, Pod]] = {}
        self._claims: dict[ClaimKey, dict[int, int]] = {}
        self._disk_pods: dict[str, tuple[int, Pod]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    # -- pod changes (called by the cache) ---------------------------------------------------------
    def add(self, pod: Pod, slot: int) -> None:
        if not pod.volumes:
            return
        if pod.uid in self._entries:
            self.remove(pod)
        self._entries[pod.uid] = (slot, pod)
        for key in _claims_of(pod):
            per_slot = self._claims.setdefault(key, {})
            per_slot[slot] = per_slot.get(slot, 0) + 1
        if _has_inline_disk(pod):
            self._disk_pods[pod.uid] = (slot, pod)

    def remove(self, pod: Pod) -> None:
        entry = self._entries.pop(pod.uid, None)
        if entry is None:
            return
        slot, old = entry
        for key in _claims_of(old):
            per_slot = self._claims.get(key)
            if per_slot is None:
                continue
            left = per_slot.get(slot, 0) - 1
            if left > 0:
                per_slot[slot] = left
            else:
                per_slot.pop(slot, None)
                if not per_slot:
                    del self._claims[key]
        self._disk_pods.pop(pod.uid, None)

    def update(self, pod: Pod, slot: int) -> None:
        """The pod changed (or was confirmed) on the node in ``slot``; its volumes cannot change."""
        entry = self._entries.get(pod.uid)
        if entry is None:
            if pod.volumes:
                self.add(pod, slot)
            return
        if entry[0] == slot:
            self._entries[pod.uid] = (slot, pod)
            if pod.uid in self._disk_pods:
                self._disk_pods[pod.uid] = (slot, pod)
            return
        self.remove(pod)
        self.add(pod, slot)

    # -- queries ---------------------------------------------------------------------------------
    def claim_users(self, namespace: str, claim: str) -> Mapping[int, int]:
        """Per node slot, how many pods there use the claim (read-only; empty when none)."""
        return self._claims.get((namespace, claim), {})

    def disk_pods(self) -> Iterable[tuple[int, Pod]]:
        """(slot, pod) of every pod with an inline GCE PD, AWS EBS, RBD or iSCSI volume."""
        return self._disk_pods.values()
