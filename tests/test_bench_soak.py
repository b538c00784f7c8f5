"""``kubesched bench soak``, short: the served cluster holds what belongs to the pods that exist,
however many went through (sizes, not times; the long run and its curve are in
docs/performance.md)."""

from __future__ import annotations

import json

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
    for s in samples:
        # At most the live pods and the wave just made (the last deletions may not have reached the
        # schedulers yet): never every pod seen.
        assert s["live_pods"] <= 1000
        assert s["outcomes"] <= 1000
        assert s["pod_groups"] <= 1000 // 8
        assert s["rss_bytes"] > 0
        # Reported beside resident memory, to tell objects kept from the allocator's fragmentation.
        assert s["python_blocks"] > 0 and s["history"] > 0


def test_soak_is_offered_beside_the_workloads() -> None:
    from kubesched.cli import build_parser

    args = build_parser().parse_args(["bench", "soak", "--live", "10", "--plot", "x.png"])
    assert args.workload == "soak" and args.live == 10 and str(args.plot) == "x.png"
