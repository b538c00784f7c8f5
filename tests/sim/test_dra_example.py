"""examples/dra through ``kubesched simulate --dra-driver``: the simulated driver publishes each GPU
node's cards, training pods get two large GPUs of one model each, inference pods take a T4 first,
two pods sharing a claim share its device, no device is given twice, and the pod beyond the large
GPUs waits with the scheduler's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api.manifests import load_manifests
from kubesched.cli import main
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.sim.simulation import Simulation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra"


def test_claims_get_devices_as_their_requests_say() -> None:
    sim = Simulation(dra_driver=DraDriverOptions())
    sim.load(load_manifests([str(EXAMPLE)]))
    result = sim.run()
    assert result.warnings == []
    placed = {o.name: o.node for o in result.outcomes if o.status == "Scheduled"}
    assert sorted(placed) == [
        *("infer-0", "infer-1", "infer-2", "notebook-a", "notebook-b"),
        *("train-0", "train-1", "train-2", "train-3"),
    ]
    [waiting] = [o for o in result.outcomes if o.status != "Scheduled"]
    assert waiting.name == "train-4"
    assert waiting.message.startswith("0/3 nodes are available: 3 cannot allocate all claims.")
    models = {
        n["metadata"]["name"]: n["metadata"]["labels"]["kubesched.io/gpu-model"]
        for n in sim.store.list("Node")
    }
    taken: dict[tuple[str, str], str] = {}
    for claim in sim.store.list("ResourceClaim"):
        consumers = claim.get("status", {}).get("reservedFor", [])
        if not consumers:
            continue
        for result_ in claim["status"]["allocation"]["devices"]["results"]:
            key = (result_["pool"], result_["device"])
            assert taken.setdefault(key, claim["metadata"]["name"]) == claim["metadata"]["name"]
        pools = {r["pool"] for r in claim["status"]["allocation"]["devices"]["results"]}
        name = claim["metadata"]["name"]
        if name.startswith("train-"):
            assert len(claim["status"]["allocation"]["devices"]["results"]) == 2
            assert {models[p] for p in pools} == {"A100"}
        if name.startswith("infer-"):
            assert [r["request"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu/t4"]
        if name == "shared-gpu":
            assert sorted(c["name"] for c in consumers) == ["notebook-a", "notebook-b"]
            assert placed["notebook-a"] == placed["notebook-b"] == next(iter(pools))
    assert len(taken) == 8 + 3 + 1


def test_explain_names_the_claim_that_found_no_devices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(EXAMPLE), "--dra-driver", "--pod", "train-4"]) == 0
    out = capsys.readouterr().out
    assert "DynamicResources" in out
    # The table wraps its cells: read the reason's words, not its lines.
    words = " ".join(out.replace("│", " ").split())
    assert 'cannot allocate all claims (resourceclaim "default/train-4-gpus-' in words
