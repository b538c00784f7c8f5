"""DisruptionBudgets: budgets parsed once and pod counts kept from informer events give what a fresh
read of the store gives, and preemption sees budgets and pods that change between two cycles."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api.pdb import PodDisruptionBudget
from kubesched.plugins.defaultpreemption.budgets import DisruptionBudgets
from kubesched.plugins.defaultpreemption.test_defaultpreemption import node, pdb, plugin_of, pod
from kubesched.sim.simulation import Simulation
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory


def fresh_read(store: MemoryStore) -> tuple[list[PodDisruptionBudget], list[int]]:
    """What the budgets are by the rule itself: every budget parsed, every pod looked at."""
    pdbs = []
    for obj in store.list("PodDisruptionBudget"):
        try:
            pdbs.append(PodDisruptionBudget.from_dict(obj))
        except Exception:
            continue
    pods = store.list("Pod")
    return pdbs, [p.disruptions_allowed(pods) for p in pdbs]


# --------------------------------------------------------------------------- cached == fresh

_SPECS: tuple[dict[str, Any], ...] = (
    {"minAvailable": 0},  # allows as many as are healthy: the counts show through
    {"maxUnavailable": "100%"},
    {"minAvailable": 1},
    {"minAvailable": 2},
    {"minAvailable": "50%"},
    {"maxUnavailable": 1},
    {"maxUnavailable": "34%"},
    {"minAvailable": 1, "maxUnavailable": 1},  # does not parse: protects nothing
)


def _set_budget(store: MemoryStore, name: str, app: str, spec: dict[str, Any], status: int | None) -> None:
    obj: dict[str, Any] = {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "ns1"},
        "spec": {**spec, **({"selector": {"matchLabels": {"app": app}}} if app else {})},
    }
    if status is not None:
        obj["status"] = {"disruptionsAllowed": status}
    exists = store.get("PodDisruptionBudget", "ns1", name) is not None
    (store.update if exists else store.create)(obj)


def _random_change(rng: random.Random, store: MemoryStore, serial: int) -> None:
    """One random change to the pods (mostly) or the budgets."""
    pods = store.list("Pod")
    what = rng.choice(["create"] * 3 + ["bind"] * 2 + ["relabel", "finish", "terminate", "delete", "budget"])
    if what == "create" or not pods:
        app = rng.choice(["a", "a", "a", "b", ""])
        namespace = rng.choice(["ns1", "ns1", "ns2"])
        meta = {"name": f"p{serial}", "namespace": namespace, "labels": {"app": app} if app else {}}
        store.create({"kind": "Pod", "metadata": meta, "spec": {}})
        return
    if what == "budget":
        existing = store.list("PodDisruptionBudget")
        if existing and rng.random() < 0.2:
            store.delete("PodDisruptionBudget", "ns1", rng.choice(existing)["metadata"]["name"])
            return
        app = rng.choice(["a", "a", "b", ""])
        _set_budget(store, f"b{rng.randrange(2)}", app, rng.choice(_SPECS), rng.choice([None, None, 0, 2]))
        return
    obj = rng.choice(pods)
    meta = obj["metadata"]
    if what == "bind":
        if not obj["spec"].get("nodeName"):
            store.bind(meta["namespace"], meta["name"], "", "n1")
    elif what == "relabel":
        app = rng.choice(["a", "b", ""])
        store.update({**obj, "metadata": {**meta, "labels": {"app": app} if app else {}}})
    elif what == "finish":
        phase = rng.choice(["Succeeded", "Failed", "Running"])
        store.update({**obj, "status": {**obj.get("status", {}), "phase": phase}})
    elif what == "terminate":
        store.update({**obj, "metadata": {**meta, "deletionTimestamp": "2024-01-01T00:00:00Z"}})
    else:
        store.delete("Pod", meta["namespace"], meta["name"])


def _current(budgets: DisruptionBudgets) -> tuple[list[PodDisruptionBudget], list[int]]:
    """What preemption reads in the next cycle: the driver applies the store's changes first."""
    budgets.informers.pump()
    return budgets.current()


@pytest.mark.parametrize("seed", range(30))
def test_kept_budgets_equal_a_fresh_read(seed: int) -> None:
    rng = random.Random(seed)
    store = MemoryStore()
    store.create(node("n1"))
    budgets = DisruptionBudgets(informer_factory(store))
    for name in ("b0", "b1"):  # budgets counted from pods to start with; later changes may alter them
        _set_budget(store, name, "a", rng.choice(_SPECS[:-1]), None)
    for serial in range(150):
        _random_change(rng, store, serial)
        if rng.random() < 0.3:  # several changes may pile up between two reads
            assert _current(budgets) == fresh_read(store)
    assert _current(budgets) == fresh_read(store)


def test_pods_are_followed_only_while_a_budget_needs_counts() -> None:
    store = MemoryStore()
    budgets = DisruptionBudgets(informer_factory(store))
    assert _current(budgets) == ([], [])
    store.create(pdb("db", "db", allowed=1))
    _current(budgets)
    assert not budgets.watching_pods  # status given: no pod is looked at
    store.update(pdb("db", "db", min_available=1))
    _current(budgets)
    assert budgets.watching_pods
    store.delete("PodDisruptionBudget", "default", "db")
    assert _current(budgets) == ([], [])
    assert not budgets.watching_pods


# --------------------------------------------------------------------------- between two cycles


def _second_preemptor_node(between: Callable[[MemoryStore], object], objects: list[dict[str, Any]]) -> str:
    """A first preemptor (pinned to n3) preempts there; ``between`` changes the cluster; a second
    preemptor, which can only preempt on n1 ("guarded", app=db, priority 1) or n2 ("free", priority 5),
    is placed. Returns the second preemptor's node."""
    sim = Simulation(seed=0)
    base = [
        node("n1"),
        node("n2"),
        node("n3"),
        pod("guarded", "4", 1, "n1", labels={"app": "db"}),
        pod("free", "4", 5, "n2"),
        pod("x", "4", 1, "n3"),
    ]
    for obj in [*base, *objects]:
        sim.store.create(obj)
    first = pod("p1", "4", 10)
    first["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n3"}
    sim.store.create(first)
    sim.run()
    assert plugin_of(sim)._budgets is not None  # the first cycle did read the budgets
    assert (sim.store.get("Pod", "default", "p1") or {})["spec"].get("nodeName") == "n3"
    between(sim.store)
    sim.store.create(pod("p2", "4", 10))
    sim.run()
    placed: str = (sim.store.get("Pod", "default", "p2") or {})["spec"]["nodeName"]
    return placed


def _nothing(store: MemoryStore) -> None:
    pass


def test_budget_created_between_cycles_is_seen() -> None:
    assert _second_preemptor_node(_nothing, []) == "n1"  # the lowest-priority victim
    created = _second_preemptor_node(lambda s: s.create(pdb("db", "db", allowed=0)), [])
    assert created == "n2"  # evicting "guarded" would now violate its budget


def test_budget_updated_between_cycles_is_seen() -> None:
    assert _second_preemptor_node(_nothing, [pdb("db", "db", allowed=0)]) == "n2"
    updated = _second_preemptor_node(
        lambda s: s.update(pdb("db", "db", allowed=1)), [pdb("db", "db", allowed=0)]
    )
    assert updated == "n1"


def test_budget_counts_follow_pods_between_cycles() -> None:
    # minAvailable 1, computed from pods: with "guarded" alone no disruption is allowed; a second
    # healthy db pod (on a node of its own, out of reach) allows one.
    def add_db_pod(store: MemoryStore) -> None:
        store.create(node("n4"))
        store.create(pod("db-2", "4", 20, "n4", labels={"app": "db"}))

    budget = [pdb("db", "db", min_available=1)]
    assert _second_preemptor_node(_nothing, budget) == "n2"
    assert _second_preemptor_node(add_db_pod, budget) == "n1"
