"""Writes that arrive together share a commit: the API's requests of one turn of the loop, and the
binds the schedulers make in place. Nobody outside sees a write before its commit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.apiserver.conftest import pod

from kubesched.apiserver.app import ApiServer
from kubesched.apiserver.handlers.create import create
from kubesched.apiserver.handlers.get import get_one
from kubesched.apiserver.schedulers import GroupedBinds
from kubesched.registry.core.pod import STRATEGY as PODS
from kubesched.store.base import Conflict
from kubesched.store.ports import StorePorts
from kubesched.store.sqlite import SqliteStore


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SqliteStore(tmp_path / "cluster.db")
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    s.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4"}},
        }
    )
    yield s
    s.close()


def _counting_commits(store: SqliteStore) -> list[list[str]]:
    commits: list[list[str]] = []
    write_rows = store._write_rows

    def counting(rows: Any) -> None:
        commits.append([key[2] for key, _, _ in rows])
        write_rows(rows)

    store._write_rows = counting  # type: ignore[method-assign]
    return commits


def test_requests_of_one_turn_of_the_loop_share_one_commit_and_answer_after_it(store, tmp_path):
    api = ApiServer(store, "token")
    commits = _counting_commits(store)
    watch = store.watch(frozenset({"Pod"}))
    answered: list[str] = []

    def create_one(name: str) -> web.Response:
        response = create(api, PODS, "default", pod(name), {})
        # Made in memory, not committed: no watch has it yet.
        assert len(watch) == 0
        return response

    async def request(name: str) -> None:
        response = await api.write(lambda: create_one(name))
        assert response.status == 201
        answered.append(name)

    async def main() -> None:
        await asyncio.gather(*(request(f"p{i}") for i in range(5)))

    asyncio.run(main())
    assert commits == [[f"p{i}" for i in range(5)]]
    assert sorted(answered) == [f"p{i}" for i in range(5)]
    assert [e.obj["metadata"]["name"] for e in watch.drain()] == [f"p{i}" for i in range(5)]
    store.close()
    again = SqliteStore(tmp_path / "cluster.db")
    assert sorted(o["metadata"]["name"] for o in again.list("Pod")) == [f"p{i}" for i in range(5)]
    again.close()


def test_a_request_that_fails_after_writing_still_answers_after_the_commit(store):
    api = ApiServer(store, "token")
    commits = _counting_commits(store)

    def create_then_fail() -> web.Response:
        create(api, PODS, "default", pod("written"), {})
        raise RuntimeError("the handler failed after its write")

    async def main() -> None:
        with pytest.raises(RuntimeError):
            await api.write(create_then_fail)
        # The write it made was committed before the error went out.
        assert commits == [["written"]]

    asyncio.run(main())


def test_grouped_binds_answer_conflicts_at_once_and_commit_together(store):
    clock = Clock()
    binds = GroupedBinds(store, StorePorts(store), max_pending=3, max_delay=1.0, now=clock)
    commits = _counting_commits(store)
    watch = store.watch(frozenset({"Pod"}))
    uids = {}
    for i in range(4):
        uids[f"p{i}"] = store.create(pod(f"p{i}"))["metadata"]["uid"]
    list(watch.drain())
    commits.clear()
    binds.bind("default", "p0", uids["p0"], "n1")
    binds.bind("default", "p1", uids["p1"], "n1")
    # Bound in memory (a second bind conflicts at once) but not committed: no watch has it.
    assert store.get("Pod", "default", "p0")["spec"]["nodeName"] == "n1"
    with pytest.raises(Conflict):
        binds.bind("default", "p0", uids["p0"], "n1")
    assert commits == [] and len(watch) == 0
    binds.bind("default", "p2", uids["p2"], "n1")  # the third: committed with the first two
    assert commits == [["p0", "p1", "p2"]]
    assert [e.obj["metadata"]["name"] for e in watch.drain()] == ["p0", "p1", "p2"]
    binds.bind("default", "p3", uids["p3"], "n1")
    assert len(commits) == 1
    binds.flush()
    assert commits[-1] == ["p3"]


def test_a_grouped_bind_waits_no_longer_than_max_delay(store):
    clock = Clock()
    binds = GroupedBinds(store, StorePorts(store), max_pending=100, max_delay=0.005, now=clock)
    commits = _counting_commits(store)
    uids = [store.create(pod(f"p{i}"))["metadata"]["uid"] for i in range(2)]
    commits.clear()
    binds.bind("default", "p0", uids[0], "n1")
    assert commits == []
    clock.t = 0.01
    binds.bind("default", "p1", uids[1], "n1")
    assert commits == [["p0", "p1"]]


def test_the_idle_driver_commits_grouped_binds_once_they_are_due(store):
    clock = Clock()
    binds = GroupedBinds(store, StorePorts(store), max_pending=100, max_delay=0.005, now=clock)
    commits = _counting_commits(store)
    uid = store.create(pod("p0"))["metadata"]["uid"]
    commits.clear()
    assert binds.flush_due() is None
    binds.bind("default", "p0", uid, "n1")
    clock.t = 0.002
    assert binds.flush_due() == pytest.approx(0.003)
    assert commits == []
    clock.t = 0.006
    assert binds.flush_due() is None
    assert commits == [["p0"]]


def test_a_read_that_shows_an_uncommitted_write_answers_after_its_commit(store):
    """A bind made in memory and not committed yet (grouped): a GET that shows it waits for its
    commit, so no client sees a write that a crash could still take back."""
    api = ApiServer(store, "token")
    binds = GroupedBinds(store, StorePorts(store), max_pending=100, max_delay=60.0)
    uid = store.create(pod("p0"))["metadata"]["uid"]
    commits = _counting_commits(store)
    binds.bind("default", "p0", uid, "n1")
    assert commits == []

    async def get() -> Any:
        response = await api.read(lambda: get_one(store, _NO_TABLE, PODS, "default", "p0"))
        assert commits == [["p0"]]  # committed before the answer went out
        return response

    response = asyncio.run(get())
    assert response.status == 200 and b'"nodeName":"n1"' in response.body


class _Request:
    headers: dict[str, str] = {}
    query: dict[str, str] = {}


_NO_TABLE: Any = _Request()
