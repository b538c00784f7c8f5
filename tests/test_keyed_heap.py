"""KeyedHeap: items come out in (key, push order) order, whatever the shape of their keys, with
deletes and re-pushes (a re-pushed item takes its new key and a new place in push order)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.queue.heap import KeyedHeap


def _drain(heap: KeyedHeap[str]) -> list[str]:
    out: list[str] = []
    while (item := heap.pop()) is not None:
        out.append(item)
    return out


def _expected(pushes: list[tuple[str, Any]], deleted: set[str]) -> list[str]:
    """The live items by (key, push order) of their last push."""
    last: dict[str, tuple[Any, int]] = {}
    for seq, (item_id, key) in enumerate(pushes):
        last[item_id] = (key, seq)
    live = [(key, seq, item_id) for item_id, (key, seq) in last.items() if item_id not in deleted]
    return [item_id for _, _, item_id in sorted(live)]


_tuple_keys = st.tuples(st.integers(-2, 2), st.sampled_from([0.0, 1.5, 2.0]), st.integers(0, 3))


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("push"), st.sampled_from("abcdefgh"), _tuple_keys),
            st.tuples(st.just("delete"), st.sampled_from("abcdefgh"), st.none()),
        ),
        max_size=40,
    ),
    odd_key=st.one_of(st.none(), st.tuples(st.integers(-2, 2)), st.tuples(st.integers(-2, 2), st.just(0.0))),
    odd_at=st.integers(0, 40),
)
def test_pops_in_key_then_push_order(ops, odd_key, odd_at):
    # ``odd_key``: one key of another length, pushed part way (the entries are nested from there).
    keys: dict[str, Any] = {}
    heap: KeyedHeap[str] = KeyedHeap(lambda item: keys[item])
    pushes: list[tuple[str, Any]] = []
    deleted: set[str] = set()
    for i, (op, item_id, key) in enumerate(ops):
        if odd_key is not None and i == odd_at:
            op, item_id, key = "push", "odd", odd_key
        if op == "push":
            keys[item_id] = key
            heap.push(item_id, item_id)
            pushes.append((item_id, key))
            deleted.discard(item_id)
        else:
            heap.delete(item_id)
            deleted.add(item_id)
    want = _expected(pushes, deleted)
    assert len(heap) == len(want)
    assert heap.peek() == (want[0] if want else None)
    assert _drain(heap) == want


def test_scalar_keys_and_a_switch_mid_way():
    keys = {"a": (1, 0.0), "b": (0, 5.0), "c": 3.0}
    heap: KeyedHeap[str] = KeyedHeap(lambda item: keys[item])
    heap.push("a", "a")
    heap.push("b", "b")
    assert heap.peek() == "b"
    keys["c"] = (0,)  # shorter: before every (0, …) key
    heap.push("c", "c")
    assert _drain(heap) == ["c", "b", "a"]
    floats: KeyedHeap[str] = KeyedHeap(lambda item: keys[item])
    keys.update(x=2.5, y=1.0, z=2.5)
    for item in "xyz":
        floats.push(item, item)
    assert _drain(floats) == ["y", "x", "z"]


def test_many_equal_keys_come_out_in_push_order():
    heap: KeyedHeap[str] = KeyedHeap(lambda item: (0, 1.0))
    items = [f"p{i}" for i in range(500)]
    for item in items:
        heap.push(item, item)
    gone = set(random.Random(0).sample(items, 100))
    for item in gone:
        heap.delete(item)
    assert _drain(heap) == [i for i in items if i not in gone]
