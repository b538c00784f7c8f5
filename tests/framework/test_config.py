"""KubeSchedulerConfiguration loading: defaults, merge, multiPoint expansion, args, validation.

The tables mirror upstream's default_plugins_test.go (TestMergePlugins), framework_test.go
(TestNewFrameworkMultiPointExpansion), defaults_test.go and validation_test.go.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from kubesched.errors import InputError
from kubesched.framework.config import (
    API_VERSION,
    KIND,
    PluginRef,
    config_from_dict,
    default_config,
    load_config,
)
from kubesched.framework.config.defaults import PluginEntry, PluginSet, merge_plugin_set
from kubesched.framework.extension_points import ExtensionPoint as EP
from kubesched.framework.plugin_args import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    VolumeBindingArgs,
)
from kubesched.framework.registry import PluginSpec, Registry

# Real extension points of the upstream v1.34 in-tree plugins.
UPSTREAM_POINTS: dict[str, tuple[EP, ...]] = {
    "SchedulingGates": (EP.PRE_ENQUEUE,),
    "PrioritySort": (EP.QUEUE_SORT,),
    "NodeUnschedulable": (EP.FILTER,),
    "NodeName": (EP.FILTER,),
    "TaintToleration": (EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "NodeAffinity": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "NodePorts": (EP.PRE_FILTER, EP.FILTER),
    "NodeResourcesFit": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "VolumeRestrictions": (EP.PRE_FILTER, EP.FILTER),
    "NodeVolumeLimits": (EP.PRE_FILTER, EP.FILTER),
    "VolumeBinding": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE, EP.RESERVE, EP.PRE_BIND),
    "VolumeZone": (EP.PRE_FILTER, EP.FILTER),
    "PodTopologySpread": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "InterPodAffinity": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "DynamicResources": (EP.PRE_ENQUEUE, EP.PRE_FILTER, EP.FILTER, EP.POST_FILTER, EP.RESERVE, EP.PRE_BIND),
    "DefaultPreemption": (EP.PRE_ENQUEUE, EP.POST_FILTER),
    "NodeResourcesBalancedAllocation": (EP.PRE_SCORE, EP.SCORE),
    "ImageLocality": (EP.SCORE,),
    "DefaultBinder": (EP.BIND,),
}
KUBESCHED_NOW = (
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeResourcesFit",
    "DefaultBinder",
)

# Plugins of upstream's framework_test.go.
ALL_BUT_PRE_ENQUEUE = tuple(p for p in EP if p is not EP.PRE_ENQUEUE)
TEST_POINTS: dict[str, tuple[EP, ...]] = {
    "TestPlugin": ALL_BUT_PRE_ENQUEUE,
    "ScorePlugin1": (EP.PRE_SCORE, EP.SCORE),
    "ScorePlugin2": (EP.SCORE,),
    "ScoreWithNormalizePlugin1": (EP.SCORE,),
    "QueueSortPlugin": (EP.QUEUE_SORT,),
    "BindPlugin": (EP.BIND,),
}


def _factory(args: Any, handle: Any) -> None:
    return None


def make_registry(points: Mapping[str, Iterable[EP]], only: Iterable[str] | None = None) -> Registry:
    registry = Registry()
    wanted = set(points if only is None else only)
    for name, eps in points.items():
        if name in wanted:
            registry.register(PluginSpec(name, _factory, frozenset(eps)))
    return registry


FULL = make_registry(UPSTREAM_POINTS)
NOW = make_registry(UPSTREAM_POINTS, KUBESCHED_NOW)
TEST = make_registry(TEST_POINTS)


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def one_profile(**profile: Any) -> dict[str, Any]:
    return cfg(profiles=[profile])


def names(refs: list[PluginRef]) -> list[str]:
    return [r.name for r in refs]


def summary(plugins: dict[EP, list[PluginRef]]) -> dict[str, list[Any]]:
    """Non-empty points, score entries as (name, weight)."""
    out: dict[str, list[Any]] = {}
    for point, refs in plugins.items():
        if refs:
            out[point.value] = [(r.name, r.weight) for r in refs] if point is EP.SCORE else names(refs)
    return out


# --------------------------------------------------------------------------------------------------
# Defaults


EXPANDED_DEFAULTS_V1: dict[str, list[Any]] = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
}


def test_defaults_with_every_upstream_plugin_match_upstream_expanded_v1() -> None:
    config = default_config(FULL)
    assert len(config.profiles) == 1
    profile = config.profiles[0]
    assert profile.scheduler_name == "default-scheduler"
    assert profile.percentage_of_nodes_to_score is None
    assert set(profile.plugins) == set(EP)
    assert summary(profile.plugins) == EXPANDED_DEFAULTS_V1


def test_default_plugin_args_match_upstream_plugin_configs_v1() -> None:
    args = default_config(FULL).profiles[0].plugin_args
    assert list(args) == [
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
    ]
    cpu_mem = [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]
    assert args["DefaultPreemption"] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    )
    assert args["InterPodAffinity"] == InterPodAffinityArgs(hard_pod_affinity_weight=1)
    assert args["NodeAffinity"] == NodeAffinityArgs()
    assert isinstance(args["NodeResourcesBalancedAllocation"], NodeResourcesBalancedAllocationArgs)
    assert args["NodeResourcesBalancedAllocation"].resources == cpu_mem
    fit = args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"
    assert fit.scoring_strategy.resources == cpu_mem
    assert fit.scoring_strategy.requested_to_capacity_ratio is None
    assert args["PodTopologySpread"] == PodTopologySpreadArgs(defaulting_type="System")
    assert args["VolumeBinding"] == VolumeBindingArgs(bind_timeout_seconds=600)
    assert args["PrioritySort"] is None and args["DefaultBinder"] is None


def test_defaults_drop_plugins_kubesched_does_not_implement() -> None:
    profile = default_config(NOW).profiles[0]
    assert summary(profile.plugins) == {
        "queueSort": ["PrioritySort"],
        "preFilter": ["NodeResourcesFit"],
        "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit"],
        "preScore": ["TaintToleration", "NodeResourcesFit"],
        "score": [("TaintToleration", 3), ("NodeResourcesFit", 1)],
        "bind": ["DefaultBinder"],
    }
    assert list(profile.plugin_args) == list(KUBESCHED_NOW)


def test_top_level_defaults() -> None:
    config = default_config(NOW)
    assert config.parallelism == 16
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.percentage_of_nodes_to_score is None
    assert config.extenders == []
    assert config_from_dict(cfg(profiles=[]), NOW).profiles[0].scheduler_name == "default-scheduler"


def test_top_level_values_are_taken() -> None:
    config = config_from_dict(
        cfg(
            parallelism=4,
            percentageOfNodesToScore=30,
            podInitialBackoffSeconds=2,
            podMaxBackoffSeconds=2,
            extenders=[{"urlPrefix": "http://127.0.0.1:1"}],
            leaderElection={"leaderElect": False},
            enableProfiling=False,
            profiles=[
                {"schedulerName": "a", "percentageOfNodesToScore": 0},
                {"schedulerName": "b", "percentageOfNodesToScore": 50},
                {"schedulerName": "c"},
            ],
        ),
        NOW,
    )
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (4, 30)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 2)
    assert config.extenders == [{"urlPrefix": "http://127.0.0.1:1"}]
    assert [p.scheduler_name for p in config.profiles] == ["a", "b", "c"]
    assert [p.percentage_of_nodes_to_score for p in config.profiles] == [0, 50, None]
    assert config.profile("b") is config.profiles[1]
    assert config.profile("nope") is None
    # global 0 means adaptive, like unset
    assert config_from_dict(cfg(percentageOfNodesToScore=0), NOW).percentage_of_nodes_to_score is None


# --------------------------------------------------------------------------------------------------
# mergePluginSet (upstream TestMergePlugins)


def _set(enabled: Iterable[str | tuple[str, int]] = (), disabled: Iterable[str] = ()) -> PluginSet:
    entries = [
        PluginEntry(e, None, "") if isinstance(e, str) else PluginEntry(e[0], e[1], "") for e in enabled
    ]
    return PluginSet(enabled=entries, disabled=list(disabled))


def _flat(ps: PluginSet) -> tuple[list[str | tuple[str, int]], list[str]]:
    enabled: list[str | tuple[str, int]] = [
        e.name if e.weight is None else (e.name, e.weight) for e in ps.enabled
    ]
    return enabled, ps.disabled


MERGE_CASES = [
    ("AppendCustomPlugin", ["D1", "D2"], [], ["Custom"], [], ["D1", "D2", "Custom"], []),
    (
        "InsertAfterDefaultPlugins2",
        ["D1", "D2"],
        [],
        ["Custom", "D2"],
        ["D2"],
        ["D1", "Custom", "D2"],
        ["D2"],
    ),
    (
        "InsertBeforeAllPlugins",
        ["D1", "D2"],
        [],
        ["Custom", "D1", "D2"],
        ["*"],
        ["Custom", "D1", "D2"],
        ["*"],
    ),
    ("ReorderDefaultPlugins", ["D1", "D2"], [], ["D2", "D1"], ["*"], ["D2", "D1"], ["*"]),
    ("ApplyEmptyCustom", ["D1", "D2"], [], [], [], ["D1", "D2"], []),
    (
        "CustomPluginOverrideDefaultPlugin",
        ["P1", "P2", "P3"],
        [],
        [("P1", 2), ("P3", 3)],
        [],
        [("P1", 2), "P2", ("P3", 3)],
        [],
    ),
    (
        "OrderPreserveAfterOverride",
        ["P1", "P2", "P3"],
        [],
        [("P2", 2), ("P1", 1)],
        [],
        [("P1", 1), ("P2", 2), "P3"],
        [],
    ),
    (
        "RepeatedCustomPlugin",
        ["P1", "P2", "P3"],
        [],
        ["P1", ("P2", 2), "P3", ("P2", 4)],
        [],
        ["P1", ("P2", 4), "P3", ("P2", 2)],
        [],
    ),
    ("override default with custom weight", ["D"], [], [("D", 5)], [], [("D", 5)], []),
    ("disabled in default set", ["D"], ["D2"], ["Custom"], [], ["D", "Custom"], ["D2"]),
    ("only disabled gets merged", ["D"], [], [], ["D"], [], ["D"]),
    (
        "Append disabled Multipoint plugins",
        ["D1", "D2"],
        [],
        ["C1", "C2"],
        ["D2"],
        ["D1", "C1", "C2"],
        ["D2"],
    ),
]


@pytest.mark.parametrize(
    (
        "default_enabled",
        "default_disabled",
        "custom_enabled",
        "custom_disabled",
        "want_enabled",
        "want_disabled",
    ),
    [case[1:] for case in MERGE_CASES],
    ids=[case[0] for case in MERGE_CASES],
)
def test_merge_plugin_set(
    default_enabled: list[Any],
    default_disabled: list[str],
    custom_enabled: list[Any],
    custom_disabled: list[str],
    want_enabled: list[Any],
    want_disabled: list[str],
) -> None:
    merged = merge_plugin_set(_set(default_enabled, default_disabled), _set(custom_enabled, custom_disabled))
    assert _flat(merged) == (want_enabled, want_disabled)


# --------------------------------------------------------------------------------------------------
# multiPoint expansion (upstream TestNewFrameworkMultiPointExpansion); TEST has no default plugins


def _all_test_plugin(**override: Any) -> dict[str, list[Any]]:
    base: dict[str, list[Any]] = {p.value: ["TestPlugin"] for p in ALL_BUT_PRE_ENQUEUE}
    base["score"] = [("TestPlugin", 1)]
    base.update(override)
    return {k: v for k, v in base.items() if v}


EXPANSION_CASES: list[tuple[str, dict[str, Any], dict[str, list[Any]]]] = [
    (
        "plugin expansion",
        {"multiPoint": {"enabled": [{"name": "TestPlugin", "weight": 5}]}},
        _all_test_plugin(score=[("TestPlugin", 5)]),
    ),
    (
        "disable MultiPoint plugin at some extension points",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}]},
            "preScore": {"disabled": [{"name": "TestPlugin"}]},
            "score": {"disabled": [{"name": "TestPlugin"}]},
        },
        _all_test_plugin(preScore=[], score=[]),
    ),
    (
        "Multiple MultiPoint plugins",
        {"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]}},
        _all_test_plugin(
            preScore=["TestPlugin", "ScorePlugin1"], score=[("TestPlugin", 1), ("ScorePlugin1", 1)]
        ),
    ),
    (
        "disable MultiPoint extension",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "preScore": {"disabled": [{"name": "*"}]},
        },
        _all_test_plugin(preScore=[], score=[("TestPlugin", 1), ("ScorePlugin1", 1)]),
    ),
    (
        "Reorder MultiPoint plugins (specified extension takes precedence)",
        {
            "multiPoint": {
                "enabled": [
                    {"name": "ScoreWithNormalizePlugin1"},
                    {"name": "TestPlugin"},
                    {"name": "ScorePlugin1"},
                ]
            },
            "score": {"enabled": [{"name": "ScorePlugin1"}, {"name": "TestPlugin"}]},
        },
        _all_test_plugin(
            preScore=["TestPlugin", "ScorePlugin1"],
            score=[("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)],
        ),
    ),
    (
        "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [
                    {"name": "ScoreWithNormalizePlugin1"},
                    {"name": "ScorePlugin1"},
                    {"name": "TestPlugin"},
                ]
            },
        },
        _all_test_plugin(
            preScore=["TestPlugin", "ScorePlugin1"],
            score=[("ScorePlugin1", 1), ("TestPlugin", 1), ("ScoreWithNormalizePlugin1", 1)],
        ),
    ),
    (
        "Override MultiPoint plugins weights",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [{"name": "ScorePlugin1", "weight": 5}, {"name": "TestPlugin", "weight": 3}]
            },
        },
        _all_test_plugin(
            preScore=["TestPlugin", "ScorePlugin1"], score=[("ScorePlugin1", 5), ("TestPlugin", 3)]
        ),
    ),
    (
        "disable and enable MultiPoint plugins with '*'",
        {
            "multiPoint": {
                "enabled": [{"name": "QueueSortPlugin"}, {"name": "BindPlugin"}, {"name": "ScorePlugin1"}],
                "disabled": [{"name": "*"}],
            }
        },
        {
            "queueSort": ["QueueSortPlugin"],
            "preScore": ["ScorePlugin1"],
            "score": [("ScorePlugin1", 1)],
            "bind": ["BindPlugin"],
        },
    ),
    (
        "disable and enable MultiPoint plugin by name",
        {
            "multiPoint": {
                "enabled": [{"name": "BindPlugin"}, {"name": "QueueSortPlugin"}, {"name": "ScorePlugin1"}],
                "disabled": [{"name": "ScorePlugin1"}],
            }
        },
        {
            "queueSort": ["QueueSortPlugin"],
            "preScore": ["ScorePlugin1"],
            "score": [("ScorePlugin1", 1)],
            "bind": ["BindPlugin"],
        },
    ),
    (
        "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "ScorePlugin1"}]},
            "score": {
                "enabled": [
                    {"name": "ScorePlugin1", "weight": 5},
                    {"name": "ScorePlugin2", "weight": 5},
                    {"name": "TestPlugin", "weight": 3},
                ]
            },
        },
        _all_test_plugin(
            preScore=["TestPlugin", "ScorePlugin1"],
            score=[("ScorePlugin1", 5), ("TestPlugin", 3), ("ScorePlugin2", 5)],
        ),
    ),
    (
        "specific point only, weight 0 means 1",
        {
            "queueSort": {"enabled": [{"name": "QueueSortPlugin"}]},
            "score": {"enabled": [{"name": "ScorePlugin2", "weight": 0}]},
            "bind": {"enabled": [{"name": "BindPlugin"}]},
        },
        {"queueSort": ["QueueSortPlugin"], "score": [("ScorePlugin2", 1)], "bind": ["BindPlugin"]},
    ),
    (
        "specific-point-only plugins follow the multiPoint ones",
        {
            "multiPoint": {"enabled": [{"name": "TestPlugin"}]},
            "score": {"enabled": [{"name": "ScorePlugin2", "weight": 7}]},
        },
        _all_test_plugin(score=[("TestPlugin", 1), ("ScorePlugin2", 7)]),
    ),
]


@pytest.mark.parametrize(
    ("plugins", "want"), [c[1:] for c in EXPANSION_CASES], ids=[c[0] for c in EXPANSION_CASES]
)
def test_multi_point_expansion(plugins: dict[str, Any], want: dict[str, list[Any]]) -> None:
    profile = config_from_dict(one_profile(plugins=plugins), TEST).profiles[0]
    assert summary(profile.plugins) == want


def test_multi_point_double_registration_is_an_error() -> None:
    data = one_profile(plugins={"multiPoint": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}})
    with pytest.raises(InputError, match="enabled twice under multiPoint") as info:
        config_from_dict(data, TEST, source="s.yaml")
    assert info.value.field == "profiles[0].plugins.multiPoint.enabled[1]"


# --------------------------------------------------------------------------------------------------
# User plugin sets merged into the v1 defaults, end to end


def test_reenabled_default_keeps_position_with_new_weight() -> None:
    plugins = {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 7}]}}
    profile = config_from_dict(one_profile(plugins=plugins), FULL).profiles[0]
    score = profile.plugins[EP.SCORE]
    assert score[0] == PluginRef("TaintToleration", 7)
    assert names(score) == [n for n, _ in EXPANDED_DEFAULTS_V1["score"]]


def test_reenabled_default_without_weight_falls_back_to_one() -> None:
    plugins = {"multiPoint": {"enabled": [{"name": "TaintToleration"}]}}
    score = config_from_dict(one_profile(plugins=plugins), NOW).profiles[0].plugins[EP.SCORE]
    assert score == [PluginRef("TaintToleration", 1), PluginRef("NodeResourcesFit", 1)]


def test_score_specific_entry_overrides_default_weight_and_moves_first() -> None:
    plugins = {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]}}
    score = config_from_dict(one_profile(plugins=plugins), NOW).profiles[0].plugins[EP.SCORE]
    assert score == [PluginRef("NodeResourcesFit", 5), PluginRef("TaintToleration", 3)]


def test_disable_all_scoring() -> None:
    plugins = {"preScore": {"disabled": [{"name": "*"}]}, "score": {"disabled": [{"name": "*"}]}}
    profile = config_from_dict(one_profile(plugins=plugins), FULL).profiles[0]
    assert profile.plugins[EP.PRE_SCORE] == [] and profile.plugins[EP.SCORE] == []
    assert names(profile.plugins[EP.FILTER]) == EXPANDED_DEFAULTS_V1["filter"]
    # the plugin stays enabled elsewhere, so it keeps its args
    assert "ImageLocality" in profile.plugin_args


def test_disable_one_plugin_at_one_point() -> None:
    plugins = {"filter": {"disabled": [{"name": "NodeName"}]}}
    profile = config_from_dict(one_profile(plugins=plugins), NOW).profiles[0]
    assert names(profile.plugins[EP.FILTER]) == ["NodeUnschedulable", "TaintToleration", "NodeResourcesFit"]


def test_disable_default_in_multi_point_removes_it_everywhere() -> None:
    plugins = {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}
    profile = config_from_dict(one_profile(plugins=plugins), NOW).profiles[0]
    assert all("NodeResourcesFit" not in names(refs) for refs in profile.plugins.values())
    assert "NodeResourcesFit" not in profile.plugin_args


def test_multi_point_star_replaces_all_defaults() -> None:
    plugins = {
        "multiPoint": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "DefaultBinder"}, {"name": "PrioritySort"}, {"name": "NodeName"}],
        }
    }
    profile = config_from_dict(one_profile(plugins=plugins), NOW).profiles[0]
    assert summary(profile.plugins) == {
        "queueSort": ["PrioritySort"],
        "filter": ["NodeName"],
        "bind": ["DefaultBinder"],
    }
    assert list(profile.plugin_args) == ["DefaultBinder", "PrioritySort", "NodeName"]


def test_specific_point_plugin_appended_after_defaults() -> None:
    registry = make_registry({**UPSTREAM_POINTS, "MyFilter": (EP.FILTER,)}, (*KUBESCHED_NOW, "MyFilter"))
    plugins = {"filter": {"enabled": [{"name": "MyFilter"}]}}
    profile = config_from_dict(one_profile(plugins=plugins), registry).profiles[0]
    assert names(profile.plugins[EP.FILTER])[-1] == "MyFilter"
    assert profile.plugin_args["MyFilter"] is None


def test_known_but_unimplemented_plugin_may_be_disabled_or_configured() -> None:
    data = one_profile(
        plugins={"multiPoint": {"disabled": [{"name": "InterPodAffinity"}, {"name": "EBSLimits"}]}},
        pluginConfig=[
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}},
            {"name": "DynamicResources", "args": {"filterTimeout": "10s"}},
        ],
    )
    profile = config_from_dict(data, NOW).profiles[0]
    assert "InterPodAffinity" not in profile.plugin_args


def test_out_of_tree_plugin_with_args_model() -> None:
    registry = make_registry(UPSTREAM_POINTS, KUBESCHED_NOW)
    registry.register(PluginSpec("MyScore", _factory, frozenset({EP.SCORE}), args_model=InterPodAffinityArgs))
    data = one_profile(
        plugins={"multiPoint": {"enabled": [{"name": "MyScore", "weight": 4}]}},
        pluginConfig=[{"name": "MyScore", "args": {"hardPodAffinityWeight": 9}}],
    )
    profile = config_from_dict(data, registry).profiles[0]
    assert profile.plugins[EP.SCORE][-1] == PluginRef("MyScore", 4)
    assert profile.plugin_args["MyScore"] == InterPodAffinityArgs(hard_pod_affinity_weight=9)


# --------------------------------------------------------------------------------------------------
# Plugin args


def test_plugin_config_args_are_defaulted_and_kept() -> None:
    data = one_profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "apiVersion": API_VERSION,
                    "kind": "NodeResourcesFitArgs",
                    "ignoredResources": ["example.com/foo"],
                    "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]},
                },
            }
        ]
    )
    fit = config_from_dict(data, NOW).profiles[0].plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.ignored_resources == ["example.com/foo"]
    assert fit.scoring_strategy.type == "MostAllocated"
    assert fit.scoring_strategy.resources == [ResourceSpec(name="cpu", weight=1)]


def test_scoring_strategy_without_resources_gets_cpu_and_memory() -> None:
    data = one_profile(
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "requestedToCapacityRatio": {
                            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                        },
                    }
                },
            }
        ]
    )
    fit = config_from_dict(data, NOW).profiles[0].plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert [r.name for r in fit.scoring_strategy.resources] == ["cpu", "memory"]
    assert fit.scoring_strategy.requested_to_capacity_ratio is not None
    assert len(fit.scoring_strategy.requested_to_capacity_ratio.shape) == 2


def test_other_args_models_accept_upstream_examples() -> None:
    data = one_profile(
        pluginConfig=[
            {
                "name": "InterPodAffinity",
                "args": {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True},
            },
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                        },
                        {
                            "maxSkew": 2,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "DoNotSchedule",
                        },
                    ],
                },
            },
            {
                "name": "DefaultPreemption",
                "args": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5},
            },
            {
                "name": "VolumeBinding",
                "args": {"bindTimeoutSeconds": 0, "shape": [{"utilization": 0, "score": 0}]},
            },
            {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "nvidia.com/gpu"}]}},
            {
                "name": "NodeAffinity",
                "args": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
            },
        ]
    )
    config_from_dict(data, FULL)  # no error
    profile = config_from_dict(data, FULL).profiles[0]
    balanced = profile.plugin_args["NodeResourcesBalancedAllocation"]
    assert isinstance(balanced, NodeResourcesBalancedAllocationArgs)
    assert balanced.resources == [ResourceSpec(name="nvidia.com/gpu", weight=1)]
    spread = profile.plugin_args["PodTopologySpread"]
    assert isinstance(spread, PodTopologySpreadArgs) and len(spread.default_constraints) == 2


def _args(name: str, args: Any) -> dict[str, Any]:
    return one_profile(pluginConfig=[{"name": name, "args": args}])


ARGS_ERRORS: list[tuple[str, Any, str, str]] = [
    ("NodeResourcesFit", {"scoringStrategy": {"type": "Balanced"}}, "scoringStrategy.type", "unsupported"),
    ("NodeResourcesFit", {"scoringStrategy": {}}, "scoringStrategy.type", "unsupported"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": 3}}, "scoringStrategy.type", "must be a string"),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
        "scoringStrategy.resources[0].weight",
        "(0, 100]",
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": "1"}]}},
        "scoringStrategy.resources[0].weight",
        "must be an integer",
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
        "scoringStrategy.requestedToCapacityRatio",
        "must be set",
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": {"shape": []}}},
        "scoringStrategy.requestedToCapacityRatio",
        "must not be set",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                },
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        "increasing",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "[0, 10]",
    ),
    ("NodeResourcesFit", {"ignoredResources": ["in valid"]}, "ignoredResources[0]", "invalid resource name"),
    ("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/x"]}, "ignoredResourceGroups[0]", "'/'"),
    ("NodeResourcesFit", {"scoringStrateg": {}}, "scoringStrateg", "unknown field"),
    ("NodeResourcesFit", {"kind": "InterPodAffinityArgs"}, "kind", "NodeResourcesFitArgs"),
    ("NodeResourcesFit", {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion", API_VERSION),
    ("NodeResourcesFit", ["x"], "", "args must be a mapping"),
    ("InterPodAffinity", {"hardPodAffinityWeight": 101}, "hardPodAffinityWeight", "[0, 100]"),
    ("InterPodAffinity", {"hardPodAffinityWeight": True}, "hardPodAffinityWeight", "must be an integer"),
    (
        "InterPodAffinity",
        {"ignorePreferredTermsOfExistingPods": "yes"},
        "ignorePreferredTermsOfExistingPods",
        "true or false",
    ),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage", "[0, 100]"),
    ("DefaultPreemption", {"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute", "0 or greater"),
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        "minCandidateNodesPercentage",
        "both be 0",
    ),
    ("VolumeBinding", {"bindTimeoutSeconds": -1}, "bindTimeoutSeconds", "0 or greater"),
    ("VolumeBinding", {"shape": []}, "shape", "at least one point"),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}]},
        "resources[0].weight",
        "must be 1",
    ),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
        "resources[1].name",
        "duplicate",
    ),
    ("PodTopologySpread", {"defaultingType": "Custom"}, "defaultingType", "unsupported"),
    (
        "PodTopologySpread",
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
        "defaultingType",
        "must be List",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "defaultConstraints[0].maxSkew",
        "greater than 0",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "defaultConstraints[0].topologyKey",
        "is required",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Maybe"}],
        },
        "defaultConstraints[0].whenUnsatisfiable",
        "unsupported",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
            ],
        },
        "defaultConstraints[0].labelSelector",
        "must not be set",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 3, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        "defaultConstraints[1]",
        "duplicate",
    ),
    ("NodeAffinity", {"addedAffinity": "zone=a"}, "addedAffinity", "must be a mapping"),
    ("PrioritySort", {"foo": 1}, "", "takes no args"),
]


@pytest.mark.parametrize(
    ("plugin", "args", "field", "message"),
    ARGS_ERRORS,
    ids=[f"{c[0]}:{c[2] or '-'}:{c[3]}" for c in ARGS_ERRORS],
)
def test_plugin_args_errors(plugin: str, args: Any, field: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        config_from_dict(_args(plugin, args), FULL, source="sched.yaml")
    err = info.value
    assert err.file == "sched.yaml"
    want = "profiles[0].pluginConfig[0].args" + (f".{field}" if field else "")
    assert err.field == want
    assert message in err.message
    assert "pydantic" not in str(err) and "errors.pydantic.dev" not in str(err)


# --------------------------------------------------------------------------------------------------
# Validation (upstream validation_test.go and friends)


VALIDATION_ERRORS: list[tuple[str, dict[str, Any], str | None, str]] = [
    ("missing apiVersion", {"kind": KIND}, "apiVersion", "apiVersion is required"),
    ("old apiVersion", cfg(apiVersion="kubescheduler.config.k8s.io/v1beta3"), "apiVersion", "migrate"),
    ("foreign apiVersion", cfg(apiVersion="v1"), "apiVersion", "unsupported apiVersion"),
    ("bad kind", cfg(kind="Pod"), "kind", KIND),
    ("unknown top-level field", cfg(parallelizm=3), "parallelizm", 'did you mean "parallelism"'),
    ("parallelism zero", cfg(parallelism=0), "parallelism", "greater than 0"),
    ("parallelism string", cfg(parallelism="16"), "parallelism", "must be an integer"),
    ("percentage too high", cfg(percentageOfNodesToScore=110), "percentageOfNodesToScore", "[0, 100]"),
    ("negative percentage", cfg(percentageOfNodesToScore=-1), "percentageOfNodesToScore", "[0, 100]"),
    ("initial backoff zero", cfg(podInitialBackoffSeconds=0), "podInitialBackoffSeconds", "greater than 0"),
    (
        "max backoff below initial",
        cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
        "podMaxBackoffSeconds",
        "greater than or equal",
    ),
    ("profiles not a list", cfg(profiles={"schedulerName": "x"}), "profiles", "must be a list"),
    ("unknown profile field", one_profile(plugin={}), "profiles[0].plugin", 'did you mean "plugins"'),
    (
        "profile percentage",
        one_profile(percentageOfNodesToScore=101),
        "profiles[0].percentageOfNodesToScore",
        "[0, 100]",
    ),
    (
        "schedulerName required with several profiles",
        cfg(profiles=[{"schedulerName": "a"}, {}]),
        "profiles[1].schedulerName",
        "schedulerName is required",
    ),
    ("empty schedulerName", one_profile(schedulerName=""), "profiles[0].schedulerName", "required"),
    (
        "duplicate schedulerName",
        cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]),
        "profiles[2].schedulerName",
        "duplicate schedulerName",
    ),
    (
        "different queueSort",
        cfg(
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "QueueSortPlugin"}], "disabled": [{"name": "*"}]}
                    },
                },
            ]
        ),
        "profiles[1].plugins.queueSort",
        "same queueSort plugin",
    ),
    (
        "no queueSort",
        one_profile(plugins={"multiPoint": {"disabled": [{"name": "PrioritySort"}]}}),
        "profiles[0].plugins.queueSort",
        "exactly one queueSort",
    ),
    (
        "two queueSort",
        one_profile(plugins={"queueSort": {"enabled": [{"name": "QueueSortPlugin"}]}}),
        "profiles[0].plugins.queueSort",
        "exactly one queueSort",
    ),
    (
        "no bind",
        one_profile(plugins={"bind": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.bind",
        "at least one bind",
    ),
    (
        "unknown plugin",
        one_profile(plugins={"score": {"enabled": [{"name": "Foo"}, {"name": "NodeResourceFit"}]}}),
        "profiles[0].plugins.score.enabled[0].name",
        'unknown plugin "Foo"',
    ),
    (
        "typo gets a hint",
        one_profile(plugins={"score": {"enabled": [{"name": "NodeResourceFit"}]}}),
        "profiles[0].plugins.score.enabled[0].name",
        'unknown plugin "NodeResourceFit"; did you mean "NodeResourcesFit"?',
    ),
    (
        "unknown disabled plugin",
        one_profile(plugins={"filter": {"disabled": [{"name": "NodeNmae"}]}}),
        "profiles[0].plugins.filter.disabled[0].name",
        'did you mean "NodeName"?',
    ),
    (
        "unknown pluginConfig plugin",
        one_profile(pluginConfig=[{"name": "nodeaffinity", "args": {}}]),
        "profiles[0].pluginConfig[0].name",
        'did you mean "NodeAffinity"?',
    ),
    (
        "removed plugin",
        one_profile(plugins={"filter": {"enabled": [{"name": "EBSLimits"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "was removed",
    ),
    (
        "removed plugin config",
        one_profile(pluginConfig=[{"name": "GCEPDLimits"}]),
        "profiles[0].pluginConfig[0].name",
        "was removed",
    ),
    (
        "plugin at a point it does not implement",
        one_profile(plugins={"filter": {"enabled": [{"name": "PrioritySort"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "does not implement the filter extension point",
    ),
    (
        "twice at one point",
        one_profile(plugins={"filter": {"enabled": [{"name": "TestPlugin"}, {"name": "TestPlugin"}]}}),
        "profiles[0].plugins.filter.enabled[1]",
        "enabled twice at filter",
    ),
    (
        "negative weight",
        one_profile(plugins={"score": {"enabled": [{"name": "NodeResourcesFit", "weight": -1}]}}),
        "profiles[0].plugins.score.enabled[0].weight",
        "0 or greater",
    ),
    (
        "weight beyond int32",
        one_profile(plugins={"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2**31}]}}),
        "profiles[0].plugins.score.enabled[0].weight",
        "must be in range",
    ),
    (
        "weight not an integer",
        one_profile(plugins={"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 1.5}]}}),
        "profiles[0].plugins.score.enabled[0].weight",
        "must be an integer",
    ),
    (
        "unknown plugin-set field",
        one_profile(plugins={"score": {"enable": []}}),
        "profiles[0].plugins.score.enable",
        'did you mean "enabled"',
    ),
    (
        "unknown extension point",
        one_profile(plugins={"scores": {}}),
        "profiles[0].plugins.scores",
        'did you mean "score"',
    ),
    (
        "plugin name missing",
        one_profile(plugins={"filter": {"enabled": [{}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "name is required",
    ),
    (
        "duplicate pluginConfig",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]),
        "profiles[0].pluginConfig[1].name",
        "duplicate pluginConfig",
    ),
    (
        "unknown pluginConfig field",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "arg": {}}]),
        "profiles[0].pluginConfig[0].arg",
        'did you mean "args"',
    ),
    ("extenders not a list", cfg(extenders={}), "extenders", "must be a list"),
    ("top level not a mapping", [], None, "expected a KubeSchedulerConfiguration mapping"),  # type: ignore[list-item]
]


@pytest.mark.parametrize(
    ("data", "field", "message"), [c[1:] for c in VALIDATION_ERRORS], ids=[c[0] for c in VALIDATION_ERRORS]
)
def test_validation_errors(data: Any, field: str | None, message: str) -> None:
    registry = make_registry({**UPSTREAM_POINTS, **TEST_POINTS}, (*KUBESCHED_NOW, *TEST_POINTS))
    with pytest.raises(InputError) as info:
        config_from_dict(data, registry, source="sched.yaml")
    err = info.value
    assert err.file == "sched.yaml"
    assert err.field == field
    assert message in err.message
    assert str(err).startswith("sched.yaml: ")


@pytest.mark.parametrize(
    "plugins",
    [
        {"multiPoint": {"enabled": [{"name": "InterPodAffinity"}]}},
        {"score": {"enabled": [{"name": "ImageLocality", "weight": 2}]}},
        {"queueSort": {"enabled": [{"name": "SchedulingGates"}]}},
    ],
)
def test_enabling_known_but_unimplemented_plugin_says_so(plugins: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="is not implemented by kubesched yet") as info:
        config_from_dict(one_profile(plugins=plugins), NOW, source="s.yaml")
    assert info.value.field is not None and info.value.field.endswith(".name")


def test_same_queue_sort_in_all_profiles_is_fine() -> None:
    data = cfg(
        profiles=[
            {"schedulerName": "a"},
            {"schedulerName": "b", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
        ]
    )
    config = config_from_dict(data, NOW)
    assert config.profiles[1].plugins[EP.SCORE] == []
    assert config.profiles[1].plugins[EP.QUEUE_SORT] == [PluginRef("PrioritySort")]


def test_default_config_fails_clearly_when_registry_lacks_a_binder() -> None:
    with pytest.raises(InputError, match="at least one bind plugin"):
        default_config(make_registry(UPSTREAM_POINTS, ("PrioritySort",)))


# --------------------------------------------------------------------------------------------------
# Files


YAML_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 8
profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 4
  - schedulerName: bin-packing
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
"""


def test_load_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(YAML_CONFIG)
    config = load_config(path, NOW)
    assert config.parallelism == 8
    assert config.profiles[0].plugins[EP.SCORE][0] == PluginRef("NodeResourcesFit", 4)
    fit = config.profiles[1].plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs) and fit.scoring_strategy.type == "MostAllocated"


def test_load_json_file(tmp_path: Path) -> None:
    path = tmp_path / "sched.json"
    path.write_text(json.dumps(cfg(podMaxBackoffSeconds=30)))
    assert load_config(str(path), NOW).pod_max_backoff_seconds == 30


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "file is empty"),
        ("apiVersion: [unclosed\n", "not valid YAML or JSON at line"),
        (f"apiVersion: {API_VERSION}\nkind: {KIND}\nkind: {KIND}\n", "duplicate key 'kind'"),
        (f"apiVersion: {API_VERSION}\nkind: {KIND}\n---\napiVersion: {API_VERSION}\n", "expected one"),
    ],
)
def test_load_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        load_config(path, NOW)
    assert info.value.file == str(path)


def test_load_bad_args_in_file_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(YAML_CONFIG.replace("MostAllocated", "MostAlocated"))
    with pytest.raises(InputError) as info:
        load_config(path, NOW)
    assert info.value.file == str(path)
    assert info.value.field == "profiles[1].pluginConfig[0].args.scoringStrategy.type"
    assert str(info.value).startswith(
        f"{path}: field profiles[1].pluginConfig[0].args.scoringStrategy.type: "
    )


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_config(tmp_path / "nope.yaml", NOW)
