"""Reading a ``KubeSchedulerConfiguration``: from a YAML or JSON file, from plain data, or the defaults
kube-scheduler runs with when given none; and ``--feature-gates``.

YAML is decoded strictly (duplicate keys are errors, as upstream), the document's shape checked by the
v1 models, then defaulted and validated by :class:`ConfigValidator`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.yaml_input import BoundedSafeLoader, yaml_nesting_problem
from kubesched.errors import ConfigError, InputError
from kubesched.framework.config.defaults import FEATURE_GATE_DEFAULTS
from kubesched.framework.config.types import API_VERSION, KIND, SchedulerConfig
from kubesched.framework.config.validation import ConfigValidator
from kubesched.framework.registry import Registry


def default_config(registry: Registry) -> SchedulerConfig:
    """The configuration kube-scheduler runs with when given none, restricted to *registry*."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, registry, source="<defaults>")


def load_config(path: str | Path, registry: Registry) -> SchedulerConfig:
    """Read a YAML or JSON ``KubeSchedulerConfiguration`` file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", file=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {exc}", file=source) from None
    return config_from_text(text, registry, source)


def config_from_text(text: str, registry: Registry, source: str = "<config>") -> SchedulerConfig:
    """Decode, default and validate a ``KubeSchedulerConfiguration`` given as YAML or JSON text."""
    try:
        too_deep = yaml_nesting_problem(text)
        if too_deep is not None:
            raise ConfigError(too_deep, file=source)
        documents = [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark is not None else ""
        raise ConfigError(f"not valid YAML or JSON{where}: {exc.problem}", file=source) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML or JSON: {exc}", file=source) from None
    if not documents:
        raise ConfigError(f"file is empty; expected a {KIND}", file=source)
    if len(documents) > 1:
        raise ConfigError(
            f"expected one {KIND} document, found {len(documents)}; split the file or keep one", file=source
        )
    return config_from_dict(documents[0], registry, source=source)


def config_from_dict(
    data: Mapping[str, Any], registry: Registry, source: str = "<config>"
) -> SchedulerConfig:
    """Decode, default and validate a ``KubeSchedulerConfiguration`` given as plain data."""
    config = ConfigValidator(registry, source).load(data)
    config.document, config.source = data, source
    return config


def with_feature_gates(
    config: SchedulerConfig, gates: Mapping[str, bool], registry: Registry
) -> SchedulerConfig:
    """``config`` with ``gates`` over its ``featureGates``, loaded again from its document: some
    gates change the default plugins (upstream applies them before merging a profile's plugins)."""
    if not gates:
        return config
    merged = {**config.feature_gates, **gates}
    if config.document is None:
        return dataclasses.replace(config, feature_gates=merged)
    return config_from_dict({**config.document, "featureGates": merged}, registry, config.source)


class _StrictLoader(BoundedSafeLoader):
    """SafeLoader that rejects duplicate keys (upstream decodes strictly)."""


def _construct_mapping_strict(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}; give each field once", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping_strict)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates`` as kube-scheduler takes it: ``Name=true,Other=false``."""
    gates: dict[str, bool] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise InputError(f"--feature-gates: expected Name=true|false, got {part!r}")
        if name not in FEATURE_GATE_DEFAULTS:
            known = ", ".join(sorted(FEATURE_GATE_DEFAULTS))
            raise InputError(f"--feature-gates: unknown feature gate {name!r}; known: {known}")
        gates[name] = value == "true"
    return gates
