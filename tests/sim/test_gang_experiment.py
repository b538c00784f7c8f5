"""``kubesched experiment gangs``: one gang workload through the default profile (no gangs), the
Workload API gang and Volcano's gang + proportion. What a reader of its table relies on: without
gangs a job's workers can hold GPUs while the job cannot start; with either gang scheduler no job is
ever bound below its minimum; every job ends or is reported pending."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cli import EXIT_OK, main
from kubesched.sim.gang_experiment import (
    ARMS,
    DEFAULT_ARMS,
    GangCluster,
    Job,
    llm_mix,
    philly_jobs,
    run_arm,
    summary_rows,
)

DATA = Path(__file__).parent / "data"
GANG_ARMS = ("workload-gang", "volcano", "workload-gang-zone")


def _row(result):  # type: ignore[no-untyped-def]
    return summary_rows([result])[0]


def test_without_gangs_a_job_holds_gpus_it_cannot_use_and_gang_arms_never_do() -> None:
    # One 8-GPU node, two jobs of three 2-GPU workers arriving together: the default profile
    # binds the first job whole and one worker of the second, which then waits idle.
    cluster = GangCluster(nodes=1)
    jobs = [Job("a", 0.0, 600.0, (2, 2, 2)), Job("b", 0.0, 600.0, (2, 2, 2))]
    default = run_arm("default", jobs, cluster)
    row = _row(default)
    assert row["partial_pods_peak"] == 1
    assert row["partial_gpu_hours"] == pytest.approx(2 * 600 / 3600)
    assert [j.state for j in default.jobs] == ["done", "done"]
    b = default.jobs[1]
    assert b.start == pytest.approx(600.0) and b.end == pytest.approx(1200.0)
    for arm in GANG_ARMS:
        result = run_arm(arm, jobs, cluster)
        assert _row(result)["partial_pods_peak"] == 0, arm
        assert max(result.partial_pods) == 0, arm
        assert [j.state for j in result.jobs] == ["done", "done"], arm
        # Started once the first ends: at once by Volcano's next session, within a backoff (at
        # most 10 s) by the kube-scheduler, whose waiting gang backs off and retries.
        assert 600.0 <= result.jobs[1].queueing_delay <= 611.0, arm


def test_a_job_that_can_never_start_is_reported_pending_in_every_arm() -> None:
    # Three 8-GPU workers on two 8-GPU nodes: no arm can start the job. Without gangs two of its
    # workers stay bound for good (a partial placement); the gang arms bind none.
    cluster = GangCluster(nodes=2)
    jobs = [Job("big", 0.0, 60.0, (8, 8, 8)), Job("small", 5.0, 60.0, (4,))]
    for arm in ARMS:
        result = run_arm(arm, jobs, cluster)
        big, small = result.jobs
        assert big.state == ("partial" if arm == "default" else "pending"), arm
        assert big.bound_at_end == (2 if arm == "default" else 0), arm
        assert big.start is None and big.completion_time is None
        row = _row(result)
        assert row["done"] + row["running"] + row["pending"] == 2
        assert row["pending"] == (2 if arm == "default" else 1), arm
        if arm == "default":
            # The small job found no room: the partial gang holds both nodes.
            assert small.state == "pending"
        else:
            assert small.state == "done"


def test_topology_domains_are_counted_per_job() -> None:
    # Four nodes to a rack: a job of six 8-GPU workers spans two racks, one of one worker one.
    cluster = GangCluster(nodes=8, nodes_per_rack=4, racks_per_zone=1)
    jobs = [Job("wide", 0.0, 60.0, (8,) * 6), Job("one", 0.0, 60.0, (8,))]
    for arm in ARMS:
        wide, one = run_arm(arm, jobs, cluster).jobs
        assert (wide.nodes, wide.racks, wide.zones) == (6, 2, 2), arm
        assert (one.nodes, one.racks) == (1, 1), arm


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_zone_arm_holds_a_gang_to_one_zone_and_leaves_one_that_fits_no_zone_pending(seed: int) -> None:
    # Two zones of two 8-GPU nodes each; workers of 5 GPUs need a node each.
    cluster = GangCluster(nodes=4, nodes_per_rack=1, racks_per_zone=2)
    pair = run_arm("workload-gang-zone", [Job("pair", 0.0, 60.0, (5, 5))], cluster, seed=seed)
    assert pair.jobs[0].state == "done" and pair.jobs[0].zones == 1
    # Three workers fit the cluster (and 15 GPUs one zone's 16) but no zone's two nodes: the
    # plain gang spreads over both zones, the constrained one finds no placement.
    three = [Job("three", 0.0, 60.0, (5, 5, 5))]
    plain = run_arm("workload-gang", three, cluster, seed=seed).jobs[0]
    assert plain.state == "done" and plain.zones == 2
    held = run_arm("workload-gang-zone", three, cluster, seed=seed).jobs[0]
    assert held.state == "pending" and held.bound_at_end == 0


jobs_strategy = st.lists(
    st.tuples(
        st.floats(0, 600, allow_nan=False),
        st.floats(10, 900, allow_nan=False),
        st.sampled_from([1, 2, 4, 8]),
        st.integers(1, 5),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=jobs_strategy)
def test_gang_arms_never_bind_below_the_minimum_and_every_job_is_accounted_for(specs) -> None:  # type: ignore[no-untyped-def]
    cluster = GangCluster(nodes=3, nodes_per_rack=2)
    jobs = [
        Job(f"j{i}", round(arrival, 3), round(duration, 3), (gpus,) * pods)
        for i, (arrival, duration, gpus, pods) in enumerate(specs)
    ]
    for arm in ARMS:
        result = run_arm(arm, jobs, cluster)
        states = [j.state for j in result.jobs]
        assert set(states) <= {"done", "running", "pending", "partial"}
        # Nothing is left running: every job that started ended its duration later.
        assert "running" not in states, arm
        for j in result.jobs:
            if j.end is not None:
                assert j.start is not None and j.end == pytest.approx(j.start + j.duration, abs=1e-3)
                assert j.start >= j.arrival - 1e-6
        assert max(result.allocated) <= cluster.gpus
        if arm in GANG_ARMS:
            assert max(result.partial_pods) == 0, arm
            assert "partial" not in states, arm
            # Uniform workers that fit the cluster alone are all started by a gang scheduler.
            assert all(s == "done" for s, j in zip(states, jobs, strict=True) if j.gpus <= cluster.gpus), arm


def test_llm_mix_is_seeded_and_sized_to_the_cluster() -> None:
    a, b = llm_mix(7), llm_mix(7)
    assert a == b and a != llm_mix(8)
    assert len(a) == 84 and sum(1 for j in a if j.name.endswith("big")) == 4
    small = llm_mix(7, cluster_gpus=64)
    assert max(j.gpus for j in small) <= 32
    assert all(8 <= len(j.workers) <= 64 for j in a if j.name.endswith("big"))


def test_philly_jobs_keep_the_multi_gpu_jobs_scaled_in_time() -> None:
    jobs = philly_jobs(DATA / "philly.csv", jobs=10, time_scale=60.0)
    # The 1-GPU rows are left out; 12 GPUs are workers of 8 and 4; the earliest kept arrives at 0.
    assert [j.workers for j in jobs] == [(8,), (8, 4)]
    assert jobs[0].arrival == 0.0 and jobs[0].duration == pytest.approx(193256.0 / 60)
    assert jobs[1].arrival == pytest.approx((2 * 86400 + 5 * 3600 + 1 * 60 + 24) / 60)
    assert philly_jobs(DATA / "philly.csv", jobs=10, max_gpus=8) == jobs[:1]


def test_cli_experiment_gangs_prints_the_table_and_writes_the_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "gangs"
    code = main(
        [
            "experiment", "gangs", "--philly", str(DATA / "philly.csv"), "--philly-skip", "0",
            "--workloads", "philly", "--nodes", "2", "--report", str(out),
        ]
    )  # fmt: skip
    assert code == EXIT_OK
    text = capsys.readouterr().out
    assert "workload-gang" in text and "volcano" in text and "2/2" in text
    with (out / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["arm"] for r in rows] == list(DEFAULT_ARMS)
    assert all(r["done"] == "2" for r in rows)
    assert (out / "jobs.csv").is_file()
    for plot in ("timeline", "delays", "topology"):
        assert (out / f"philly_{plot}.png").stat().st_size > 0


def test_cli_experiment_gangs_bad_options_are_located() -> None:
    assert main(["experiment", "gangs", "--arms", "nope"]) == 2
    assert main(["experiment", "gangs", "--workloads", "philly"]) == 2
    assert main(["experiment", "gangs", "--philly", "/nonexistent.csv"]) == 2
    assert main(["experiment", "gangs", "--scale", "0"]) == 2
