"""KubeSchedulerConfiguration documents of the wrong shape: every one a located ConfigError (exit 2
from the CLI), never a traceback — wrong types anywhere, mappings where strings belong, and
documents nested deeper than any configuration is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.yaml_input import MAX_NESTING, yaml_nesting_problem
from kubesched.cli import EXIT_BAD_INPUT, main
from kubesched.errors import ConfigError, InputError, KubeschedError
from kubesched.framework.config import (
    API_VERSION,
    KIND,
    config_from_dict,
    load_config,
)
from kubesched.plugins import default_registry

REGISTRY = default_registry()

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n0}
status: {allocatable: {cpu: "4", memory: 8Gi}}
"""


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_mapping(depth: int) -> str:
    return "{a: " * depth + "1" + "}" * depth


SHAPE_ERRORS: list[tuple[str, Any, str | None, str]] = [
    ("apiVersion mapping", {"apiVersion": {"a": 1}, "kind": KIND}, "apiVersion", "must be the string"),
    ("apiVersion list", {"apiVersion": [API_VERSION], "kind": KIND}, "apiVersion", "got list"),
    ("kind mapping", {"apiVersion": API_VERSION, "kind": {"k": KIND}}, "kind", "got mapping"),
    ("parallelism boolean", cfg(parallelism=True), "parallelism", "must be an integer, got boolean"),
    ("backoff beyond int64", cfg(podMaxBackoffSeconds=2**64), "podMaxBackoffSeconds", "must be in range"),
    ("flag not boolean", cfg(enableProfiling="yes"), "enableProfiling", "must be true or false"),
    ("leaderElection list", cfg(leaderElection=[]), "leaderElection", "must be a mapping"),
    ("extender not a mapping", cfg(extenders=["x"]), "extenders[0]", "must be a mapping (an Extender)"),
    (
        "profile not a mapping",
        cfg(profiles=["p"]),
        "profiles[0]",
        "must be a mapping (a KubeSchedulerProfile)",
    ),
    (
        "schedulerName mapping",
        cfg(profiles=[{"schedulerName": {"a": 1}}]),
        "profiles[0].schedulerName",
        "string",
    ),
    ("plugins list", cfg(profiles=[{"plugins": []}]), "profiles[0].plugins", "must be a mapping (Plugins)"),
    (
        "plugin set list",
        cfg(profiles=[{"plugins": {"filter": []}}]),
        "profiles[0].plugins.filter",
        "must be a mapping (a PluginSet with enabled/disabled lists)",
    ),
    (
        "enabled not a list",
        cfg(profiles=[{"plugins": {"filter": {"enabled": {"name": "NodeName"}}}}]),
        "profiles[0].plugins.filter.enabled",
        "must be a list (of plugins)",
    ),
    (
        "null plugin entry",
        cfg(profiles=[{"plugins": {"filter": {"enabled": [None]}}}]),
        "profiles[0].plugins.filter.enabled[0].name",
        "a plugin name is required",
    ),
    (
        "plugin name mapping",
        cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": {"n": 1}}]}}}]),
        "profiles[0].plugins.filter.enabled[0].name",
        "must be a string",
    ),
    (
        "misspelt weight",
        cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "wieght": 2}]}}}]),
        "profiles[0].plugins.score.enabled[0].wieght",
        'unknown field "wieght" in a plugin; did you mean "weight"?',
    ),
    (
        "pluginConfig entry not a mapping",
        cfg(profiles=[{"pluginConfig": ["NodeResourcesFit"]}]),
        "profiles[0].pluginConfig[0]",
        "must be a mapping (a PluginConfig with name and args)",
    ),
    (
        "snake_case field",
        cfg(profiles=[{"scheduler_name": "x"}]),
        "profiles[0].scheduler_name",
        'unknown field "scheduler_name" in a profile; did you mean "schedulerName"?',
    ),
    (
        "deep args",
        cfg(
            profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": [[[[]]]]}}]}]
        ),
        "profiles[0].pluginConfig[0].args.scoringStrategy",
        "must be a mapping",
    ),
]


@pytest.mark.parametrize(
    ("data", "field", "message"), [c[1:] for c in SHAPE_ERRORS], ids=[c[0] for c in SHAPE_ERRORS]
)
def test_shape_errors_are_located(data: Any, field: str | None, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, REGISTRY, source="sched.yaml")
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, KubeschedError)
    assert (err.file, err.field) == ("sched.yaml", field)
    assert message in err.message
    assert "pydantic" not in str(err) and "Input should" not in str(err)


def test_null_list_items_stand_for_empty_objects() -> None:
    config = config_from_dict(cfg(profiles=[None], extenders=[None]), REGISTRY, source="sched.yaml")
    assert config.profiles[0].scheduler_name == "default-scheduler"
    assert config.extenders == [{}]


def test_outer_unknown_field_is_reported_before_inner_problems() -> None:
    data = cfg(parallelizm=2, profiles=[{"plugins": {"filter": {"enabled": "x"}}}])
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, REGISTRY, source="sched.yaml")
    assert info.value.field == "parallelizm"


@pytest.mark.parametrize(
    "body",
    [
        f"extenders: {nested_list(250)}",
        f"profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {nested_mapping(250)}",
        f"leaderElection: {nested_mapping(5000)}",
    ],
    ids=["list-250", "args-250", "mapping-5000"],
)
def test_deeply_nested_document_is_a_located_error(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(f"apiVersion: {API_VERSION}\nkind: {KIND}\n{body}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, REGISTRY)
    err = info.value
    assert err.file == str(path)
    assert f"nested more than {MAX_NESTING} levels deep (line " in err.message


def test_nesting_limit_allows_ordinary_documents() -> None:
    assert yaml_nesting_problem(f"a: {nested_list(MAX_NESTING - 1)}") is None
    assert yaml_nesting_problem(f"a: {nested_list(MAX_NESTING)}") is not None


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            "apiVersion: {group: kubescheduler.config.k8s.io}\nkind: KubeSchedulerConfiguration\n",
            "field apiVersion",
        ),
        (f"apiVersion: {API_VERSION}\nkind: {KIND}\nextenders: {nested_list(250)}\n", "nested more than"),
    ],
    ids=["apiVersion-mapping", "nested-250"],
)
def test_cli_exits_2_without_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, needle: str
) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(CLUSTER)
    config = tmp_path / "ksc.yaml"
    config.write_text(body)
    code = main(["simulate", str(cluster), "--config", str(config)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert err.startswith(f"error: {config}: ") and err.count("\n") == 1, err
    assert needle in err and "Traceback" not in err
