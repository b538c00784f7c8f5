"""Alias expansion is bounded in every YAML the user hands kubesched."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubesched.api.manifests import load_manifests
from kubesched.api.yaml_input import safe_load, safe_load_all
from kubesched.batch.conf_loader import load_batch_conf
from kubesched.errors import InputError
from kubesched.framework.config import load_config
from kubesched.plugins import default_registry


def laughs(levels: int = 9, head: str = "") -> str:
    lines = [head, 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    text = laughs(head="apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}]}")
    assert len(text) < 1000
    path = tmp_path / "laughs.yaml"
    path.write_text(text)
    start = time.monotonic()
    with pytest.raises(InputError, match="excessive aliasing") as info:
        load_manifests([str(path)])
    assert time.monotonic() - start < 2
    assert info.value.file == str(path)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(Exception, match="refers to the node that contains it"):
        safe_load("a: &a [1, *a]\n")


def test_bound_applies_to_config_and_batch_conf(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(laughs())
    with pytest.raises(InputError, match="excessive aliasing"):
        load_batch_conf(conf)
    config = tmp_path / "config.yaml"
    config.write_text(laughs())
    with pytest.raises(InputError, match="excessive aliasing"):
        load_config(config, default_registry())


def test_ordinary_aliases_still_load() -> None:
    docs = safe_load_all("base: &b {cpu: '1'}\nx: *b\ny: {<<: *b, memory: 1Gi}\n---\n- 1\n")
    assert docs[0]["x"] == {"cpu": "1"}
    assert docs[0]["y"] == {"cpu": "1", "memory": "1Gi"}
    assert docs[1] == [1]
    # Deeply nested but alias-free documents are not affected by the bound.
    assert safe_load("[" * 50 + "]" * 50) is not None


@pytest.mark.parametrize("text", ["[" * 50000 + "]" * 50000, "a: " + "{a: " * 3000 + "1" + "}" * 3000])
def test_nesting_beyond_the_parser_is_an_input_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"nested too deeply|exceeded maximum nesting depth"):
        load_manifests([str(path)])
    # The config loaders measure the depth first and say where it goes too deep.
    for load in (lambda: load_batch_conf(path), lambda: load_config(path, default_registry())):
        with pytest.raises(InputError, match=r"nested more than \d+ levels deep \(line 1, column \d+\)"):
            load()
