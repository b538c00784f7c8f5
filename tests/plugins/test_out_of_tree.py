"""Out-of-tree plugins: registered by entry point or ``module:Class``, enabled by name, args validated
by the plugin's own model, per-node methods adapted; a misbehaving plugin fails only its pod's cycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from kubesched.cli import main
from kubesched.errors import ConfigError, InputError
from kubesched.framework.config import config_from_dict
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.out_of_tree import adapt, plugin_spec
from kubesched.plugins import api
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.sim.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugins"
API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def run(plugins: list[type], enabled: list[dict[str, Any]], *pods: str, args: Any = None) -> dict[str, Any]:
    registry = plugin_registry(use_entry_points=False)
    for cls in plugins:
        register(registry, cls)
    profile: dict[str, Any] = {"plugins": {"multiPoint": {"enabled": enabled}}}
    if args is not None:
        profile["pluginConfig"] = args
    sim = Simulation(config_from_dict({**API, "profiles": [profile]}, registry), registry, seed=0)
    for name, labels in (("a", {"tier": "slow"}), ("b", {"tier": "fast"}), ("c", {"tier": "slow"})):
        sim.store.create(node(name, **labels))
    for p in pods:
        sim.store.create(pod(p))
    sim.run()
    return {o.name: o for o in sim.outcomes()}


# --------------------------------------------------------------------------------------------------
# Per-node and vectorized styles


class OnlyFast:
    """Per-node filter and score."""

    name = "OnlyFast"
    calls: ClassVar[int] = 0

    def filter(self, state: api.CycleState, pod: api.Pod, info: api.NodeInfo) -> api.Status | None:
        assert info.node is not None
        if info.node.labels.get("tier") != "fast":
            return api.Status.unschedulable("node(s) are not fast", unresolvable=True)
        return None

    def score(self, state: api.CycleState, pod: api.Pod, info: api.NodeInfo) -> int:
        return 7


class FastScore:
    """Vectorized score, with args."""

    name = "FastScore"

    class Args(api.PluginArgs):
        tier_value: str = "fast"

    def __init__(self, args: FastScore.Args, handle: api.Handle) -> None:
        self.value = args.tier_value
        self.handle = handle

    def score_nodes(
        self, state: api.CycleState, pod: api.Pod, table: api.NodeTable, slots: api.IntArray
    ) -> api.IntArray:
        col = table.labels.get("tier")
        code = col.vocab.get(self.value, -2) if col is not None else -2
        if col is None:
            return np.zeros(len(slots), dtype=np.int64)
        return np.where(col.codes[slots] == code, 100, 0).astype(np.int64)


def test_per_node_methods_are_adapted_to_the_vectorized_protocol() -> None:
    adapted = adapt(OnlyFast)
    assert issubclass(adapted, OnlyFast) and callable(adapted.filter_nodes) and callable(adapted.score_nodes)
    spec = plugin_spec(OnlyFast)
    assert spec.extension_points == {ExtensionPoint.FILTER, ExtensionPoint.SCORE}
    assert adapt(FastScore) is FastScore  # already vectorized


def test_per_node_filter_decides_placement_and_reports_its_reason() -> None:
    out = run([OnlyFast], [{"name": "OnlyFast"}], "p1", "p2")
    assert out["p1"].node == out["p2"].node == "b"
    registry = plugin_registry(use_entry_points=False)
    register(registry, OnlyFast)
    sim = Simulation(
        config_from_dict(
            {**API, "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "OnlyFast"}]}}}]}, registry
        ),
        registry,
    )
    sim.store.create(node("a", tier="slow"))
    sim.store.create(pod("p"))
    sim.run()
    assert sim.outcomes()[0].message == (
        "0/1 nodes are available: 1 node(s) are not fast. no new claims to deallocate,"
        " preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )


def test_vectorized_score_with_args_from_the_config() -> None:
    out = run([FastScore], [{"name": "FastScore", "weight": 50}], "p1")
    assert out["p1"].node == "b"
    out = run(
        [FastScore],
        [{"name": "FastScore", "weight": 50}],
        "p1",
        args=[{"name": "FastScore", "args": {"tierValue": "none"}}],
    )
    assert out["p1"].node in {"a", "b", "c"}


def test_plugin_args_are_validated_by_its_model() -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, FastScore)
    doc = {
        **API,
        "profiles": [
            {
                "plugins": {"multiPoint": {"enabled": [{"name": "FastScore"}]}},
                "pluginConfig": [{"name": "FastScore", "args": {"tierValue": 3}}],
            }
        ],
    }
    with pytest.raises(ConfigError) as info:
        config_from_dict(doc, registry, source="c.yaml")
    assert info.value.field == "profiles[0].pluginConfig[0].args.tierValue"


def test_misspelt_out_of_tree_plugin_name_gets_a_hint() -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, FastScore)
    doc = {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "FastScor"}]}}}]}
    with pytest.raises(ConfigError, match='did you mean "FastScore"'):
        config_from_dict(doc, registry)


# --------------------------------------------------------------------------------------------------
# Misbehaving plugins fail their pod's cycle, name themselves, and the scheduler goes on


def _bad(kind: str) -> type:
    class Bad:
        name = "Bad"

        def filter_nodes(self, state: Any, pod: api.Pod, table: api.NodeTable) -> Any:
            if pod.name != "bad" or not kind.startswith("filter"):
                return api.FilterResult.all_pass(table.capacity)
            if kind == "filter-raises":
                raise RuntimeError("disk on fire")
            if kind == "filter-shape":
                return api.FilterResult(np.ones(3, dtype=np.bool_))
            return "yes"

        def score_nodes(self, state: Any, pod: api.Pod, table: api.NodeTable, slots: api.IntArray) -> Any:
            if pod.name != "bad" or not kind.startswith("score"):
                return np.zeros(len(slots), dtype=np.int64)
            if kind == "score-shape":
                return np.zeros(len(slots) + 1, dtype=np.int64)
            return np.full(len(slots), 1000, dtype=np.int64)

    return Bad


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("filter-raises", 'running "Bad" filter plugin: disk on fire'),
        (
            "filter-shape",
            'running "Bad" filter plugin: returned a FilterResult whose passed mask has shape (3,)',
        ),
        ("filter-type", 'running "Bad" filter plugin: returned str, not a FilterResult'),
        ("score-shape", 'plugin "Bad" failed with: returned scores of shape (4,), expected (3,)'),
        ("score-range", 'plugin "Bad" returns an invalid score 1000'),
    ],
)
def test_misbehaving_plugin_fails_only_its_pods_cycle(kind: str, message: str) -> None:
    out = run([_bad(kind)], [{"name": "Bad"}], "bad", "good")
    assert out["good"].status == "Scheduled"
    assert out["bad"].status == "Pending" and out["bad"].node is None
    assert message in out["bad"].message


class PerNodeRaises:
    name = "PerNodeRaises"

    def score(self, state: Any, pod: api.Pod, info: api.NodeInfo) -> Any:
        return "high" if pod.name == "bad" else 1


def test_per_node_score_of_the_wrong_type_is_a_plugin_error() -> None:
    out = run([PerNodeRaises], [{"name": "PerNodeRaises"}], "bad", "good")
    assert out["good"].status == "Scheduled"
    assert 'plugin "PerNodeRaises" failed with: score for node' in out["bad"].message


# --------------------------------------------------------------------------------------------------
# Registration


def test_registration_errors() -> None:
    registry = plugin_registry(use_entry_points=False)

    class NoName:
        def filter(self, *a: Any) -> None: ...

    class Nothing:
        name = "Nothing"

    with pytest.raises(InputError, match="needs a non-empty str `name`"):
        register(registry, NoName)
    with pytest.raises(InputError, match="implements no extension point"):
        register(registry, Nothing)
    with pytest.raises(InputError, match="already registered"):
        register(registry, type("X", (), {"name": "NodeName", "filter": lambda self, *a: None}))
    with pytest.raises(InputError, match="must look like module:Class"):
        plugin_registry(["nocolon"], use_entry_points=False)
    with pytest.raises(InputError, match="cannot import module"):
        plugin_registry(["no_such_module_xyz:Thing"], use_entry_points=False)


def test_cli_plugin_flag_registers_a_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myplugins.py").write_text(
        textwrap.dedent(
            """
            from kubesched.plugins import api

            class AvoidA:
                name = "AvoidA"

                def filter(self, state, pod, info):
                    if info.node.name == "a":
                        return api.Status.unschedulable("node(s) are a")
                    return None
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cluster.yaml").write_text("\n---\n".join(json.dumps(o) for o in (node("a"), pod("p"))))
    (tmp_path / "config.yaml").write_text(
        json.dumps({**API, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "AvoidA"}]}}}]})
    )
    argv = [
        "simulate",
        str(tmp_path / "cluster.yaml"),
        "--config",
        str(tmp_path / "config.yaml"),
        "-o",
        "json",
    ]
    assert main([*argv, "--plugin", "myplugins:AvoidA"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pods"][0]["message"].startswith("0/1 nodes are available: 1 node(s) are a.")
    assert main(argv) == 2  # not registered without the flag
    assert 'unknown plugin "AvoidA"' in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# The example package, installed with pip into a temporary target


def test_example_package_installs_with_pip_and_changes_placements(tmp_path: Path) -> None:
    target = tmp_path / "site"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stderr
    assert (target / "kubesched_example_plugins").is_dir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT / "src")])}
    demo = EXAMPLE / "demo"

    def simulate(*extra: str) -> dict[str, str | None]:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubesched.cli",
                "simulate",
                str(demo / "cluster.yaml"),
                "-o",
                "json",
                *extra,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return {p["name"]: p["node"] for p in json.loads(proc.stdout)["pods"]}

    # Found through the entry point: enabled by name in the config, no --plugin needed.
    placed = simulate("--config", str(demo / "scheduler-config.yaml"))
    assert [placed["web-1"], placed["web-2"]] == ["fast-1", "fast-1"]
    assert sorted([placed["web-3"], placed["web-4"]]) == ["slow-1", "slow-2"]
    default = simulate()  # without the config: spread over the three nodes
    assert len(set(default.values())) == 3 and [default["web-1"], default["web-2"]] != ["fast-1", "fast-1"]
    # The package's own tests pass against the installed copy.
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
