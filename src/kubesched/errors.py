"""Errors that reach users, all under one root: :class:`KubeschedError`.

- :class:`InputError`: bad user input, located by file, document, object and field, so the CLI can
  print one clear line and exit 2 instead of a traceback; :class:`ConfigError` for configuration
  files (``KubeSchedulerConfiguration``, the batch conf).
- :class:`FrameworkError`: the scheduling framework could not run a cycle; :class:`PluginError` when
  a plugin failed, naming the plugin and the extension point. The scheduler turns these into a
  ``SchedulerError`` condition on the pod and keeps running.
- ``StoreError`` (in :mod:`kubesched.store.base`): the cluster store refused a request.
"""

from __future__ import annotations

from dataclasses import dataclass


class KubeschedError(Exception):
    """Base class for errors kubesched reports to users."""


@dataclass
class InputError(KubeschedError):
    """Bad user input: a malformed manifest, quantity, configuration or plugin name."""

    message: str
    file: str | None = None
    document: int | None = None  # 1-based position of the document inside a multi-document file
    obj: str | None = None  # "Kind namespace/name" or "Kind name"
    field: str | None = None  # dotted path such as spec.containers[0].resources.requests.cpu

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def located(
        self,
        *,
        file: str | None = None,
        document: int | None = None,
        obj: str | None = None,
        field_prefix: str | None = None,
    ) -> InputError:
        """Return a copy (of the same class) with missing location parts filled in (inner parts win)."""
        field = self.field
        if field_prefix:
            field = f"{field_prefix}.{field}" if field else field_prefix
        return type(self)(
            self.message,
            file=self.file or file,
            document=self.document if self.document is not None else document,
            obj=self.obj or obj,
            field=field,
        )

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            parts.append(self.file)
        if self.document is not None:
            parts.append(f"document {self.document}")
        if self.obj:
            parts.append(self.obj)
        if self.field:
            parts.append(f"field {self.field}")
        where = ": ".join(parts)
        return f"{where}: {self.message}" if where else self.message


class ConfigError(InputError):
    """An invalid scheduler configuration file or document."""


class FrameworkError(KubeschedError):
    """A scheduling cycle could not be run: a plugin failed or the framework's contract was broken."""


class PluginError(FrameworkError):
    """A plugin failed (it raised, or returned an Error status) at one extension point.

    ``message`` is the whole user-facing text, worded like upstream's framework runtime
    (``running "NodeAffinity" filter plugin: ...``); it names the plugin and the extension point.
    """

    def __init__(self, plugin: str, extension_point: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.extension_point = extension_point
        self.message = message


def yaml_error_detail(exc: Exception) -> str:
    """`` (line L, column C): problem`` for a PyYAML parse error, for messages that name the spot."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{where}: {problem}"
