"""``kubesched bench soak``, short: the served cluster holds what belongs to the pods that exist,
however many went through (sizes, not times; the long run and its curve are in
docs/performance.md)."""

from __future__ import annotations

import json

import pytest

from kubesched.bench.soak import SoakResult, SoakSample, warm_up_over
from kubesched.cli import EXIT_OK, main


def test_short_soak_holds_only_the_live_pods(capsys) -> None:
    code = main(
        [
            "bench",
            "soak",
            "--nodes",
            "20",
            "--pods",
            "3000",
            "--live",
            "500",
            "--sample-every",
            "1000",
            "--json",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == EXIT_OK
    samples = [json.loads(line)["sample"] for line in out if line.startswith('{"sample"')]
    summary = json.loads(out[-1])
    # After the first wave (500 pods: a wave is at most --live), then every 1000, and at the end.
    assert [s["pods"] for s in samples] == [500, 1500, 2500, 3000]
    assert summary["pods"] == 3000 and summary["nodes"] == 20
    assert set(summary) >= {"warm_up_pods", "median_rss_bytes", "drift"}
    for s in samples:
        # At most the live pods and the wave just made (the last deletions may not have reached the
        # schedulers yet): never every pod seen.
        assert s["live_pods"] <= 1000
        assert s["outcomes"] <= 1000
        assert s["pod_groups"] <= 1000 // 8
        assert s["rss_bytes"] > 0
        # Reported beside resident memory, to tell objects kept from the allocator's fragmentation.
        assert s["python_blocks"] > 0 and s["history"] > 0
    # The changes made since the run began (warm-up counts them), more at every sample.
    changes = [s["changes"] for s in samples]
    assert changes[0] > 0 and changes == sorted(changes) and len(set(changes)) == len(changes)


def test_soak_is_offered_beside_the_workloads() -> None:
    from kubesched.cli import build_parser

    args = build_parser().parse_args(["bench", "soak", "--live", "10", "--plot", "x.png"])
    assert args.workload == "soak" and args.live == 10 and str(args.plot) == "x.png"


def _sample(pods: int, seconds: float, rss_mib: int, changes: int) -> SoakSample:
    return SoakSample(
        pods, seconds, rss_mib * 2**20, 4000, 500, 5000, 5000, min(changes, 100_000), changes, 1
    )


def test_warm_up_ends_once_the_history_turned_over_and_one_event_ttl_has_passed() -> None:
    samples = [
        _sample(1000, 5, 120, 6_000),
        _sample(16000, 40, 300, 100_000),  # the history just full
        _sample(26000, 50, 380, 170_000),  # the TTL of 60 s and its 3 s sweep not passed yet
        _sample(31000, 70, 390, 201_000),  # the history turned over once, the TTL passed
        _sample(36000, 90, 395, 235_000),
    ]
    over = [warm_up_over(s, 100_000, 60.0, 3.0) for s in samples]
    assert over == [False, False, False, True, True]
    assert not warm_up_over(_sample(31000, 50, 390, 201_000), 100_000, 60.0, 3.0)


def test_drift_is_the_largest_distance_from_the_median_after_warm_up() -> None:
    result = SoakResult(1000, 60000, 0.0, 0, 0, warm_up_pods=20000)
    rss = [100, 300, 500, 520, 480, 550, 500]  # the first two are warm-up and do not count
    result.samples = [_sample(10000 * i, 10.0 * i, r, 100_000) for i, r in enumerate(rss)]
    assert result.median_rss() == 500 * 2**20
    assert result.drift() == pytest.approx(0.10)  # 550 is 10 % above the median of 500
    # Without warm-up over, there is nothing to judge.
    assert SoakResult(1000, 60000, 0.0, 0, 0, samples=result.samples).drift() == 0.0
