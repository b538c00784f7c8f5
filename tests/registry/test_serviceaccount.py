"""The ServiceAccount strategy: top-level fields and its kubectl row."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.registry.core.serviceaccount import STRATEGY
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND, NAMESPACED_KINDS


def test_serviceaccount_is_served_namespaced_without_spec_or_status():
    assert BY_KIND["ServiceAccount"] is STRATEGY and "ServiceAccount" in NAMESPACED_KINDS
    assert {"secrets", "imagePullSecrets", "automountServiceAccountToken"} <= STRATEGY.known_fields
    assert "spec" not in STRATEGY.known_fields and "status" not in STRATEGY.known_fields


def test_serviceaccount_row_counts_secrets():
    obj = {"metadata": {"name": "sa1"}, "secrets": [{"name": "a"}]}
    assert STRATEGY.row(obj, 0.0) == ["sa1", 1, "<unknown>"]
    assert STRATEGY.row({"metadata": {"name": "sa2"}}, 0.0)[1] == 0


def test_serviceaccount_fields_of_the_wrong_type_are_a_bad_request():
    sa: dict[str, Any] = {"metadata": {"name": "sa1"}, "secrets": "oops"}
    with pytest.raises(ApiError) as refused:
        STRATEGY.validate(sa)
    assert refused.value.code == 400
    assert "cannot unmarshal string into Go struct field ServiceAccount.secrets" in refused.value.message
    STRATEGY.validate({"metadata": {"name": "sa1"}, "secrets": [{"name": "t"}]})
