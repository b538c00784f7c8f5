"""Errors inside plugin arguments name the file and the argument's full path, like every other error
from the same files: a Volcano conf's ``tiers[i].plugins[j].arguments.<key>`` and a
KubeSchedulerConfiguration's ``profiles[i].pluginConfig[j].args.<field>``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.batch.conf_loader import load_batch_conf
from kubesched.cli import EXIT_BAD_INPUT, main
from kubesched.errors import InputError
from kubesched.framework.config.load import load_config
from kubesched.plugins import default_registry

CONF_HEAD = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("plugin", "arguments", "field", "words"),
    [
        ("binpack", "{binpack.weight: heavy}", "tiers[1].plugins[3].arguments.binpack.weight", "an integer"),
        ("binpack", "{binpack.cpu: '2'}", "tiers[1].plugins[3].arguments.binpack.cpu", "an integer"),
        (
            "nodeorder",
            "{leastrequested.weight: 1.5}",
            "tiers[1].plugins[3].arguments.leastrequested.weight",
            "an integer",
        ),
        (
            "predicates",
            "{predicate.NodePortsEnable: maybe}",
            "tiers[1].plugins[3].arguments.predicate.NodePortsEnable",
            "true or false",
        ),
        (
            "overcommit",
            "{overcommit-factor: lots}",
            "tiers[1].plugins[3].arguments.overcommit-factor",
            "a number",
        ),
    ],
)
def test_unreadable_batch_argument_is_a_warning_naming_file_and_full_path(
    tmp_path: Path, plugin: str, arguments: str, field: str, words: str
) -> None:
    path = write(tmp_path, "v.conf", CONF_HEAD + f"  - name: {plugin}\n    arguments: {arguments}\n")
    conf = load_batch_conf(path)
    told = [w for w in conf.warnings if field in w]
    assert told, conf.warnings
    assert told[0].startswith(f"{path}: {field}: could not read ")
    assert told[0].endswith(f"as {words}; the default is kept")


def test_bad_batch_argument_value_is_an_error_naming_file_and_full_path(tmp_path: Path) -> None:
    path = write(
        tmp_path, "v.conf", CONF_HEAD + "  - name: gpushare\n    arguments: {gpushare.policy: Nope}\n"
    )
    with pytest.raises(InputError) as err:
        load_batch_conf(path)
    assert err.value.file == str(path)
    assert err.value.field == "tiers[1].plugins[3].arguments.gpushare.policy"
    assert str(err.value).startswith(
        f"{path}: field tiers[1].plugins[3].arguments.gpushare.policy: unknown policy 'Nope'"
    )


def test_unreadable_action_argument_is_a_warning_naming_file_and_full_path(tmp_path: Path) -> None:
    text = (
        'actions: "enqueue, allocate, preempt"\n'
        "configurations:\n"
        "- name: preempt\n"
        "  arguments: {enableTopologyAwarePreemption: maybe, minCandidateNodesAbsolute: '3'}\n"
        "- name: enqueue\n"
        "  arguments: {overcommit-factor: lots}\n"
        "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
    )
    path = write(tmp_path, "v.conf", text)
    assert load_batch_conf(path).warnings == [
        f"{path}: configurations[0].arguments.enableTopologyAwarePreemption: could not read 'maybe' as "
        "true or false; the default is kept",
        f"{path}: configurations[0].arguments.minCandidateNodesAbsolute: could not read '3' as an "
        "integer; the default is kept",
        f"{path}: configurations[1].arguments.overcommit-factor: could not read 'lots' as a number; "
        "the default is kept",
    ]


KSC = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {{}}
  - name: {plugin}
    args: {args}
"""


@pytest.mark.parametrize(
    ("plugin", "args", "field", "words"),
    [
        (
            "NodeAffinity",
            "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
            "[{matchExpressions: [{key: 'bad key', operator: In, values: [x]}]}]}}}",
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].key",
            "is not a qualified name",
        ),
        (
            "NodeAffinity",
            "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
            "[{matchExpressions: [{key: a, operator: Near, values: [x]}]}]}}}",
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator",
            "unsupported operator 'Near'",
        ),
        (
            "NodeAffinity",
            "{addedAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
            "[{weight: x, preference: {}}]}}",
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "must be an integer",
        ),
        ("NodeAffinity", "{addedAffinity: {nope: 1}}", "addedAffinity.nope", "unknown field"),
        (
            "NodeResourcesFit",
            "{scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: -1}]}}",
            "scoringStrategy.resources[0].weight",
            "must be in range (0, 100]",
        ),
        ("InterPodAffinity", "{hardPodAffinityWeight: 101}", "hardPodAffinityWeight", "must be in range"),
    ],
)
def test_ksc_args_errors_name_file_and_full_path(
    tmp_path: Path, plugin: str, args: str, field: str, words: str
) -> None:
    path = write(tmp_path, "ksc.yaml", KSC.format(plugin=plugin, args=args))
    with pytest.raises(InputError) as err:
        load_config(path, default_registry())
    assert err.value.file == str(path)
    assert err.value.field == f"profiles[0].pluginConfig[1].args.{field}"
    assert words in err.value.message


def test_cli_prints_the_located_args_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = write(
        tmp_path,
        "n.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', pods: '10'}}\n",
    )
    ksc = write(tmp_path, "ksc.yaml", KSC.format(plugin="NodeAffinity", args="{addedAffinity: {nope: 1}}"))
    assert main(["simulate", str(node), "--config", str(ksc), "-q"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{ksc}: field profiles[0].pluginConfig[1].args.addedAffinity.nope: unknown field" in err
    assert "Traceback" not in err
