"""The resolved scheduler configuration (upstream ``pkg/scheduler/apis/config/types.go``).

A :class:`SchedulerConfig` is what the scheduler runs with: every profile carries the final, ordered
plugin list of each extension point and every enabled plugin's defaulted, validated args.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel

from kubesched.framework.config.defaults import (
    DEFAULT_EXTENDER_TIMEOUT_SECONDS,
    DEFAULT_PARALLELISM,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    FEATURE_GATE_DEFAULTS,
)
from kubesched.framework.extension_points import ExtensionPoint

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"


@dataclass(frozen=True, slots=True)
class PluginRef:
    """A plugin at one extension point. ``weight`` is set (>= 1) at ``score`` and 0 elsewhere."""

    name: str
    weight: int = 0


@dataclass(slots=True)
class ProfileConfig:
    """One scheduling profile, fully resolved."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None  # profile override; None: use the global setting
    plugins: dict[ExtensionPoint, list[PluginRef]]  # every extension point, in run order
    plugin_args: dict[str, BaseModel | None]  # every enabled plugin → its args (None: takes none)


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    """``tlsConfig`` of an extender (upstream ``ExtenderTLSConfig``); the ``*Data`` fields hold PEM
    text (base64 in the document, as upstream's ``[]byte`` fields)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One HTTP extender (upstream ``config.Extender``), validated and defaulted."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


@dataclass(slots=True)
class SchedulerConfig:
    """A loaded ``KubeSchedulerConfiguration``."""

    profiles: list[ProfileConfig]
    percentage_of_nodes_to_score: int | None = None  # None (or 0 upstream): adaptive
    pod_initial_backoff_seconds: int = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: int = DEFAULT_POD_MAX_BACKOFF_SECONDS
    parallelism: int = DEFAULT_PARALLELISM
    #: The ``extenders`` entries as written (null items as empty mappings).
    extenders: list[dict[str, Any]] = field(default_factory=list)
    #: The same entries validated and defaulted, ignorable ones last (upstream buildExtenders).
    extender_configs: list[ExtenderConfig] = field(default_factory=list)
    #: Feature gates set explicitly (``featureGates`` or ``--feature-gates``); see :func:`gate_enabled`.
    feature_gates: dict[str, bool] = field(default_factory=dict)
    #: The document it was loaded from (and its source name): gates that add default plugins
    #: (GangScheduling, …) need it loaded again (:func:`~kubesched.framework.config.load.with_feature_gates`).
    document: Any = field(default=None, repr=False, compare=False)
    source: str = "<config>"

    def gate_enabled(self, name: str) -> bool:
        """Whether a feature gate is on: as set, else its default."""
        return self.feature_gates.get(name, FEATURE_GATE_DEFAULTS[name])

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        """The profile with that ``schedulerName``, if any."""
        for prof in self.profiles:
            if prof.scheduler_name == scheduler_name:
                return prof
        return None
