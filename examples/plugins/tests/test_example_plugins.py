"""The example plugins on an embedded cluster: run with ``pytest examples/plugins`` once the package
(or its ``src``) and kubesched are importable."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubesched_example_plugins import MaxPodsPerNode, PreferNodeLabel

from kubesched.api.manifests import load_manifests
from kubesched.errors import ConfigError
from kubesched.framework.config import load_config
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.sim.simulation import Simulation

DEMO = Path(__file__).resolve().parent.parent / "demo"


def registry():
    reg = plugin_registry(use_entry_points=False)
    register(reg, PreferNodeLabel)
    register(reg, MaxPodsPerNode)
    return reg


def placements(config_path: Path | None) -> dict[str, str | None]:
    reg = registry()
    config = load_config(config_path, reg) if config_path else None
    sim = Simulation(config, reg, seed=0)
    sim.load(load_manifests([str(DEMO / "cluster.yaml")]))
    result = sim.run()
    return {o.name: o.node for o in result.outcomes}


def test_demo_prefers_the_fast_node_up_to_two_pods() -> None:
    placed = placements(DEMO / "scheduler-config.yaml")
    assert [placed["web-1"], placed["web-2"]] == ["fast-1", "fast-1"]
    assert sorted([placed["web-3"], placed["web-4"]]) == ["slow-1", "slow-2"]


def test_without_the_plugins_pods_spread_evenly() -> None:
    placed = placements(None)
    assert sorted(placed.values()).count("fast-1") <= 2
    assert len(set(placed.values())) == 3


def test_args_are_validated_by_the_plugin_model(tmp_path: Path) -> None:
    bad = (DEMO / "scheduler-config.yaml").read_text().replace("{maxPods: 2}", "{maxPod: 2}")
    path = tmp_path / "config.yaml"
    path.write_text(bad)
    with pytest.raises(ConfigError) as info:
        load_config(path, registry())
    assert info.value.field is not None and info.value.field.endswith("pluginConfig[1].args.maxPod")
    assert "unknown field" in info.value.message
