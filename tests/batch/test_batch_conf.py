from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.batch.conf import BATCH_SCHEDULER_NAME, SWITCHES
from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf, load_batch_conf
from kubesched.batch.plugins.args import get_bool, get_float, get_int
from kubesched.cli import EXIT_BAD_INPUT, main
from kubesched.errors import ConfigError, InputError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "batch" / "volcano-scheduler.conf"

# Volcano's TestLoadSchedulerConf: every switch of every plugin comes back enabled.
VOLCANO_TEST_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def conf(text: str) -> Any:
    return batch_conf_from_dict(yaml.safe_load(text), "sched.conf")


def test_volcano_load_scheduler_conf() -> None:
    c = conf(VOLCANO_TEST_CONF)
    assert c.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in c.tiers] == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder"],
    ]
    for tier in c.tiers:
        for p in tier.plugins:
            for key, attr, default in SWITCHES:
                assert p.enabled(key) is default, (p.name, key)
                assert getattr(p, attr) is default
            # Volcano leaves exactly these two unset (= off).
            assert not p.hierarchy and not p.cluster_order
            assert p.supported


def test_default_conf_is_volcanos() -> None:
    c = default_batch_conf()
    assert c.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in c.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]
    assert c.source == "<default>" and c.warnings == []
    assert load_batch_conf(None) == c
    assert BATCH_SCHEDULER_NAME == "volcano"


def test_every_switch_can_be_turned_off_in_either_spelling() -> None:
    for key, attr, _ in SWITCHES:
        feature = key.removeprefix("enabled").removeprefix("enable")
        for spelled in (f"enable{feature}", f"enabled{feature}"):
            c = batch_conf_from_dict(
                {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", spelled: False}]}]}
            )
            p = c.tiers[0].plugins[0]
            assert getattr(p, attr) is False, spelled
            assert p.enabled(attr) is False


def test_null_switch_means_unset() -> None:
    c = conf("actions: allocate\ntiers: [{plugins: [{name: gang, enableJobReady: null}]}]")
    assert c.tiers[0].plugins[0].job_ready is True


def test_switches_kubesched_lacks_are_accepted_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    c = conf("actions: allocate\ntiers: [{plugins: [{name: gang, enableBestNode: false}]}]")
    assert c.tiers[0].plugins[0].best_node is False
    assert len(c.warnings) == 1 and "tiers[0].plugins[0].enableBestNode" in c.warnings[0]
    assert "BestNode" in caplog.text


def test_arguments_configurations_metrics() -> None:
    c = conf(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: binpack
    arguments: {binpack.weight: 10, binpack.cpu: 2}
configurations:
- name: enqueue
  arguments: {overcommit-factor: 1.5}
metrics: {type: prometheus, interval: 30}
"""
    )
    assert c.tiers[0].plugins[0].arguments == {"binpack.weight": 10, "binpack.cpu": 2}
    assert c.action_arguments("enqueue") == {"overcommit-factor": 1.5}
    assert c.action_arguments("allocate") == {}
    assert c.metrics == {"type": "prometheus", "interval": "30"}


def test_known_but_unsupported_volcano_names_are_flagged() -> None:
    c = conf(
        "actions: enqueue, allocate, shuffle\ntiers: [{plugins: [{name: gang}, {name: tdm}, {name: sla}]}]"
    )
    assert c.unsupported_actions == ["shuffle"]
    assert c.unsupported_plugins == ["tdm", "sla"]
    assert [p.supported for p in c.tiers[0].plugins] == [True, False, False]


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("actions: 'enqueue, alocate'", "actions", "did you mean 'allocate'"),
        ("actions: 'allocate,'", "actions", "empty action name"),
        ("tiers: []", "actions", "actions is required"),
        ("actions: 7", "actions", "comma-separated"),
        (
            "actions: allocate\ntiers: [{plugins: [{name: gang}]}, {plugins: [{name: dfr}]}]",
            "tiers[1].plugins[0].name",
            "did you mean 'drf'",
        ),
        ("actions: allocate\ntiers: [{plugins: [{}]}]", "tiers[0].plugins[0].name", "name is required"),
        (
            "actions: allocate\ntiers: [{plugins: [{name: gang, enableJobOrdr: true}]}]",
            "tiers[0].plugins[0].enableJobOrdr",
            "did you mean 'enableJobOrder'",
        ),
        (
            "actions: allocate\ntiers: [{plugins: [{name: gang, enableJobOrder: 'no'}]}]",
            "tiers[0].plugins[0].enableJobOrder",
            "true or false",
        ),
        (
            "actions: allocate\n"
            "tiers: [{plugins: [{name: gang, enableJobOrder: true, enabledJobOrder: false}]}]",
            "tiers[0].plugins[0].enabledJobOrder",
            "set it once",
        ),
        (
            "actions: allocate\ntiers: [{plugins: [{name: gang, arguments: [1]}]}]",
            "tiers[0].plugins[0].arguments",
            "mapping",
        ),
        ("actions: allocate\ntiers: [{plugin: []}]", "tiers[0].plugin", "did you mean 'plugins'"),
        ("actions: allocate\ntiers: {plugins: []}", "tiers", "list"),
        ("actions: allocate\ntier: []", "tier", "did you mean 'tiers'"),
        ("actions: allocate\nconfigurations: [{name: enqeue}]", "configurations[0].name", "'enqueue'"),
        ("actions: allocate\nmetrics: {a: [1]}", "metrics.a", "scalar"),
        (
            "actions: allocate\ntiers: [{plugins: [{name: drf, enableHierarchy: true}, {name: proportion}]}]",
            "tiers[0].plugins",
            "conflict",
        ),
        ("- actions", None, "mapping"),
    ],
)
def test_validation_names_file_and_field(text: str, field: str | None, words: str) -> None:
    with pytest.raises(InputError) as info:
        conf(text)
    err = info.value
    assert err.file == "sched.conf"
    assert err.field == field
    assert words in err.message


def test_hierarchical_drf_alone_is_fine() -> None:
    c = conf(
        "actions: allocate\n"
        "tiers: [{plugins: [{name: drf, enableHierarchy: true}]}, {plugins: [{name: proportion}]}]"
    )
    assert c.tiers[0].plugins[0].hierarchy is True


@pytest.mark.parametrize(
    "tiers",
    [
        "[{plugins: [{name: capacity}, {name: proportion}]}]",
        "[{plugins: [{name: gang}, {name: proportion}]}, {plugins: [{name: capacity}]}]",
    ],
)
def test_capacity_and_proportion_load_together(tiers: str) -> None:
    """Volcano loads them side by side (its preempt tests run that way); both take part."""
    c = conf(f"actions: allocate\ntiers: {tiers}")
    assert {"capacity", "proportion"} <= set(c.plugin_names())
    assert c.warnings == []


def test_volcanos_spelling_of_the_cluster_order_switch() -> None:
    c = conf("actions: allocate\ntiers: [{plugins: [{name: gang, EnabledClusterOrder: true}]}]")
    assert c.tiers[0].plugins[0].cluster_order is True
    assert len(c.warnings) == 1 and "ClusterOrder" in c.warnings[0]


def test_hierarchical_capacity_is_supported_without_warning() -> None:
    c = conf("actions: allocate\ntiers: [{plugins: [{name: capacity, enableHierarchy: true}]}]")
    p = c.tiers[0].plugins[0]
    assert p.hierarchy is True and p.supported is True
    assert c.warnings == []


def test_load_example_and_file_errors(tmp_path: Path) -> None:
    c = load_batch_conf(EXAMPLE)
    assert c.source == str(EXAMPLE)
    assert "binpack" in c.plugin_names()
    gang = c.tiers[0].plugins[1]
    assert gang.name == "gang" and gang.preemptable is False and gang.job_ready is True

    with pytest.raises(InputError) as info:
        load_batch_conf(tmp_path / "missing.conf")
    assert "cannot read" in info.value.message

    bad = tmp_path / "bad.conf"
    bad.write_text("actions: [unclosed\n")
    with pytest.raises(InputError) as info:
        load_batch_conf(bad)
    assert info.value.file == str(bad) and "not valid YAML" in info.value.message

    typo = tmp_path / "typo.conf"
    typo.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: gangg\n")
    with pytest.raises(InputError) as info:
        load_batch_conf(typo)
    assert str(info.value).startswith(f"{typo}: field tiers[0].plugins[0].name: unknown plugin 'gangg'")


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
_keys = st.sampled_from(
    [
        "actions",
        "tiers",
        "plugins",
        "name",
        "arguments",
        "configurations",
        "metrics",
        "enableJobOrder",
        "enabledVictim",
        "gang",
        "allocate",
        "x",
    ]
) | st.text(max_size=8)
_values = st.recursive(
    _scalars | st.sampled_from(["allocate", "enqueue, allocate", "gang", "drf", "proportion"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_keys | st.integers(), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_values | st.dictionaries(_keys, _values, max_size=5))
def test_arbitrary_input_raises_only_input_error(data: Any) -> None:
    try:
        batch_conf_from_dict(data, "fuzz.conf")
    except InputError as exc:
        assert exc.file == "fuzz.conf"


@pytest.mark.parametrize(
    "body",
    [
        "actions: allocate\nconfigurations: " + "[" * 250 + "]" * 250,
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: "
        + "{a: " * 250
        + "1"
        + "}" * 250,
        "actions: " + "{a: " * 5000 + "1" + "}" * 5000,
    ],
    ids=["list-250", "arguments-250", "mapping-5000"],
)
def test_deeply_nested_conf_is_a_located_error(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.conf"
    path.write_text(body + "\n")
    with pytest.raises(ConfigError) as info:
        load_batch_conf(path)
    assert info.value.file == str(path)
    assert "nested more than 100 levels deep (line " in info.value.message


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", 5: True}]}]},
            "tiers[0].plugins[0].5",
            "unknown key",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "arguments": {1: 2}}]}]},
            "tiers[0].plugins[0].arguments",
            "keys must be strings",
        ),
        ({"actions": "allocate", 3: []}, None, "keys must be strings"),
        (
            {"actions": "allocate", "tiers": [{"plugins": [None]}]},
            "tiers[0].plugins[0]",
            "expected a mapping, got NoneType",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": {"n": 1}}]}]},
            "tiers[0].plugins[0].name",
            "must be a string",
        ),
        (
            {"actions": "allocate", "configurations": [{"name": "enqueue", "argument": {}}]},
            "configurations[0].argument",
            "did you mean 'arguments'",
        ),
    ],
)
def test_shape_errors_name_file_and_field(data: Any, field: str | None, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        batch_conf_from_dict(data, "sched.conf")
    err = info.value
    assert (err.file, err.field) == ("sched.conf", field)
    assert words in err.message and "pydantic" not in str(err)


def test_cli_exits_2_on_a_deeply_nested_batch_conf(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: '4'}}\n"
    )
    conf_path = tmp_path / "deep.conf"
    conf_path.write_text("actions: allocate\nconfigurations: " + "[" * 250 + "]" * 250 + "\n")
    code = main(["simulate", str(cluster), "--batch-conf", str(conf_path)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == ""
    assert err.startswith(f"error: {conf_path}: nested more than") and "Traceback" not in err


def test_switches_belong_to_plugins_only() -> None:
    # A switch outside a plugin entry would do nothing; it is an unknown key there.
    with pytest.raises(ConfigError) as info:
        batch_conf_from_dict(
            {"actions": "allocate", "tiers": [{"plugins": [], "enableJobOrder": False}]}, "s.conf"
        )
    assert info.value.field == "tiers[0].enableJobOrder" and "unknown key" in info.value.message


@pytest.mark.parametrize(
    ("value", "weight"),
    [(10, 10), ("10", 1), (2.5, 1), (True, 1), ("abc", 1)],
)
def test_plugin_integer_arguments_read_as_volcano_reads_them(value: Any, weight: int) -> None:
    """Volcano's ``GetInt`` takes a YAML integer only; anything else keeps the default (binpack's
    weight is 1) and the conf still runs."""
    assert get_int({"binpack.weight": value}, "binpack.weight", 1, plugin="binpack") == weight


@pytest.mark.parametrize(
    ("value", "read"),
    [(True, True), ("false", False), ("F", False), ("TRUE", True), ("fAlSe", True), ("no", True), (0, True)],
)
def test_plugin_bool_arguments_read_as_volcano_reads_them(value: Any, read: bool) -> None:
    """A bool, or a string Go's ``strconv.ParseBool`` reads; the default (true) otherwise."""
    assert get_bool({"k": value}, "k", True, plugin="predicates") is read


@pytest.mark.parametrize(("value", "factor"), [(1.5, 1.5), (2, 2.0), ("1.5", 1.2), (False, 1.2)])
def test_plugin_float_arguments_read_as_volcano_reads_them(value: Any, factor: float) -> None:
    assert get_float({"overcommit-factor": value}, "overcommit-factor", 1.2, plugin="overcommit") == factor
