"""DefaultBinder: writes the Binding subresource through the binder port."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.bind_result import send_binding
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.store.base import StoreError


class DefaultBinder:
    name: ClassVar[str] = "DefaultBinder"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        refusal = send_binding(self.handle.ports.binder, pod, node_name)
        return Status.error(str(refusal), plugin=self.name) if refusal is not None else None

    @property
    def binds_later(self) -> bool:
        """Whether the binder port can send a Binding in the background (an API server's)."""
        return callable(getattr(self.handle.ports.binder, "bind_later", None))

    def bind_later(
        self, state: CycleState, pod: Pod, node_name: str, done: Callable[[Status | None], None]
    ) -> None:
        """:meth:`bind` without waiting for the write: ``done`` gets what it would return."""

        def finished(refusal: Exception | None) -> None:
            if refusal is None:
                done(None)
            elif isinstance(refusal, StoreError):
                done(Status.error(str(refusal), plugin=self.name))
            else:  # not a refusal of the server's: reported as a plugin that failed
                done(Status.error(str(refusal)))

        self.handle.ports.binder.bind_later(  # type: ignore[attr-defined]
            pod.namespace, pod.name, pod.uid, node_name, finished
        )
