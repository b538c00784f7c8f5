"""Bad volume input is a pending pod with upstream's message, never a traceback: a claim bigger than
any volume, a claim naming a class that does not exist, a volume whose node affinity no node
matches, a claim that does not exist — through ``kubesched simulate`` as a user runs it, and named
in ``explain``."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.cli import main

DATA = Path(__file__).parent / "data" / "volumes-bad-input.yaml"
NOT_HELPFUL = (
    " no new claims to deallocate,"
    " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)


def test_each_bad_volume_leaves_its_pod_pending_with_upstreams_reason(capsys) -> None:
    code = main(["simulate", str(DATA), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    got = {p["name"]: (p["status"], p["message"]) for p in json.loads(out)["pods"]}
    assert got == {
        "wants-big": (
            "Unschedulable",
            "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind."
            + NOT_HELPFUL,
        ),
        # Upstream's IsDelayBindingMode reads a class that does not exist as Immediate binding.
        "wants-missing-class": (
            "Unschedulable",
            "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims." + NOT_HELPFUL,
        ),
        "wants-nowhere": (
            "Unschedulable",
            "0/1 nodes are available: 1 node(s) had volume node affinity conflict." + NOT_HELPFUL,
        ),
        "wants-absent-claim": (
            "Unschedulable",
            '0/1 nodes are available: persistentvolumeclaim "absent" not found.' + NOT_HELPFUL,
        ),
    }


def test_explain_names_the_plugin_and_the_claim(capsys) -> None:
    code = main(["explain", str(DATA), "--pod", "default/wants-nowhere"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "VolumeBinding" in out
    assert 'persistentvolumeclaim "default/pinned"' in out
