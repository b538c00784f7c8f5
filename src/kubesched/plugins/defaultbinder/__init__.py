"""DefaultBinder: writes the Binding subresource through the binder port."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.store.base import StoreError


class DefaultBinder:
    name: ClassVar[str] = "DefaultBinder"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            self.handle.ports.binder.bind(pod.namespace, pod.name, pod.uid, node_name)
        except StoreError as exc:
            return Status.error(str(exc), plugin=self.name)
        return None
