"""The batch plugin and action registries (Volcano's factory.go)."""

from __future__ import annotations

import pytest

from kubesched.batch.conf import SUPPORTED_ACTIONS, SUPPORTED_PLUGINS
from kubesched.batch.factory import action_names, get_action, get_plugin_builder, plugin_names
from kubesched.errors import InputError


def test_every_supported_name_is_registered() -> None:
    assert plugin_names() == SUPPORTED_PLUGINS
    assert action_names() == SUPPORTED_ACTIONS


def test_volcano_names_kubesched_lacks_have_no_builder() -> None:
    assert get_plugin_builder("sla") is None
    assert get_action("shuffle") is None


def test_unknown_names_are_input_errors_with_a_hint() -> None:
    with pytest.raises(InputError, match="did you mean 'proportion'"):
        get_plugin_builder("proprotion")
    with pytest.raises(InputError, match="did you mean 'allocate'"):
        get_action("alocate")


def test_actions_are_new_instances() -> None:
    a, b = get_action("allocate"), get_action("allocate")
    assert a is not None and b is not None and a is not b
