"""DefaultBinder: writes the Binding subresource through the binder port."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.bind_result import send_binding
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status


class DefaultBinder:
    name: ClassVar[str] = "DefaultBinder"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        refusal = send_binding(self.handle.ports.binder, pod, node_name)
        return Status.error(str(refusal), plugin=self.name) if refusal is not None else None
