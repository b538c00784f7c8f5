"""Files for the ``--plugin MODULE:CLASS`` tests of ``serve`` and ``run``: a module with one
framework Filter plugin (``AvoidN0``) and one batch session plugin (``only-node``), a
KubeSchedulerConfiguration and a Volcano conf that enable them, and the environment a subprocess
needs to import the module."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
KSC = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

PLUGIN_MODULE = """
import numpy as np
from kubesched.plugins import api


class AvoidN0:
    name = "AvoidN0"

    def filter(self, state, pod, info):
        if info.node.name == "n0":
            return api.Status.unschedulable("node(s) are n0")
        return None


class OnlyNode:
    name = "only-node"

    class Args(api.PluginArgs):
        node: str

    def __init__(self, args):
        self.node = args.node

    def on_session_open(self, ssn):
        def predicate(task, table):
            bad = np.ones(table.capacity, dtype=np.bool_)
            if self.node in table.slot_of:
                bad[table.slot_of[self.node]] = False
            return api.FilterResult.reject(bad, f"node(s) are not {self.node}")

        ssn.add_predicate_fn(self.name, predicate)

    def on_session_close(self, ssn):
        return None
"""


def write_plugin_flag_files(tmp_path: Path, module: str) -> tuple[dict[str, str], list[str], list[str]]:
    """Writes ``module``.py, ``ksc.yaml`` and ``volcano.conf`` into ``tmp_path``; returns the
    subprocess environment, the ``--config``/``--batch-conf`` flags and the ``--plugin`` flags."""
    (tmp_path / f"{module}.py").write_text(PLUGIN_MODULE)
    (tmp_path / "ksc.yaml").write_text(
        json.dumps({**KSC, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "AvoidN0"}]}}}]})
    )
    conf = {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, {"name": "only-node", "arguments": {"node": "n0"}}]},
        ],
    }
    (tmp_path / "volcano.conf").write_text(yaml.safe_dump(conf))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])}
    flags = ["--config", str(tmp_path / "ksc.yaml"), "--batch-conf", str(tmp_path / "volcano.conf")]
    plugins = ["--plugin", f"{module}:AvoidN0", "--plugin", f"{module}:OnlyNode"]
    return env, flags, plugins
