"""``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``), laid out as upstream's
``pkg/scheduler/apis/config``.

- :mod:`.types`: the resolved :class:`SchedulerConfig` the scheduler runs with;
- :mod:`.defaults`: upstream v1 defaults, default plugins and the plugin-set merge;
- :mod:`.v1`: the document's shape as pydantic models (field names, types, ranges);
- :mod:`.validation`: defaulting, merging and validation of a shape-checked document;
- :mod:`.load`: reading a file or plain data, and ``--feature-gates``.

Every problem is a :class:`~kubesched.errors.ConfigError` naming the file and the full field path,
with a did-you-mean hint for misspelt fields and plugin names.
"""

from kubesched.framework.config.defaults import FEATURE_GATE_DEFAULTS
from kubesched.framework.config.load import (
    config_from_dict,
    config_from_text,
    default_config,
    load_config,
    parse_feature_gates,
    with_feature_gates,
)
from kubesched.framework.config.types import (
    API_VERSION,
    KIND,
    ExtenderConfig,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    PluginRef,
    ProfileConfig,
    SchedulerConfig,
)

__all__ = [
    "API_VERSION",
    "FEATURE_GATE_DEFAULTS",
    "KIND",
    "ExtenderConfig",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "PluginRef",
    "ProfileConfig",
    "SchedulerConfig",
    "config_from_dict",
    "config_from_text",
    "default_config",
    "load_config",
    "parse_feature_gates",
    "with_feature_gates",
]
