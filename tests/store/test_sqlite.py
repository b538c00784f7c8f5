"""The SQLite store: write-through, resourceVersions across restarts, watch history."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.store.base import Conflict, EventType, NotFound
from kubesched.store.sqlite import CommitFailed, SqliteStore, TooOld


def _node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4"}},
    }


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def test_objects_and_versions_survive_reopen(tmp_path):
    db = tmp_path / "state.db"
    store = SqliteStore(db)
    store.create(_node("n1"))
    pod = store.create(_pod("p1"))
    store.bind("default", "p1", pod["metadata"]["uid"], "n1")
    store.create(_pod("p2"))
    gone = store.delete("Pod", "default", "p2")
    last = int(gone["metadata"]["resourceVersion"])
    assert store.resource_version == last
    store.close()

    again = SqliteStore(db)
    assert again.get("Pod", "default", "p1")["spec"]["nodeName"] == "n1"
    assert again.get("Pod", "default", "p2") is None
    assert again.resource_version == last
    created = again.create(_pod("p3"))
    assert int(created["metadata"]["resourceVersion"]) == last + 1
    # The pod's uid and default fields came back as they were stored.
    assert again.get("Pod", "default", "p1")["metadata"]["uid"] == pod["metadata"]["uid"]
    again.close()


def test_a_database_of_an_earlier_layout_opens_with_its_objects_and_versions(tmp_path):
    db = tmp_path / "state.db"
    store = SqliteStore(db)
    store.create(_node("n1"))
    pod = store.create(_pod("p1"))
    bound = store.bind("default", "p1", pod["metadata"]["uid"], "n1")
    last = store.resource_version
    store.close()
    # Rewrite the objects into the clustered (WITHOUT ROWID) table earlier versions created.
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT kind, namespace, name, rv, data FROM objects").fetchall()
    conn.executescript(
        "DROP TABLE objects; CREATE TABLE objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, "
        "name TEXT NOT NULL, rv INTEGER NOT NULL, data BLOB NOT NULL, "
        "PRIMARY KEY (kind, namespace, name)) WITHOUT ROWID;"
    )
    conn.executemany("INSERT INTO objects VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()

    again = SqliteStore(db)
    assert again.get("Pod", "default", "p1") == bound
    assert again.resource_version == last
    again.update({**bound, "metadata": {**bound["metadata"], "labels": {"a": "b"}}})
    again.close()
    third = SqliteStore(db)
    assert third.get("Pod", "default", "p1")["metadata"]["labels"] == {"a": "b"}
    third.close()
    conn = sqlite3.connect(db)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'objects'").fetchone()
    conn.close()
    assert "WITHOUT ROWID" not in sql.upper()


def test_stale_update_conflicts_and_missing_delete(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    node = store.create(_node("n1"))
    store.update({**node, "metadata": {**node["metadata"], "labels": {"a": "b"}}})
    with pytest.raises(Conflict):
        store.update({**node, "metadata": {**node["metadata"], "labels": {"a": "c"}}})
    with pytest.raises(NotFound):
        store.delete("Node", None, "nope")


def test_changes_since_and_too_old(tmp_path):
    store = SqliteStore(tmp_path / "s.db", history=2)
    start = store.resource_version
    for i in range(3):
        store.create(_node(f"n{i}"))
    events = store.changes_since(start)
    assert [e.obj["metadata"]["name"] for e in events] == ["n0", "n1", "n2"]
    assert all(e.type == EventType.ADDED for e in events)
    mid = int(events[0].obj["metadata"]["resourceVersion"])
    assert [e.obj["metadata"]["name"] for e in store.changes_since(mid)] == ["n1", "n2"]
    for i in range(3, 8):
        store.create(_node(f"n{i}"))
    with pytest.raises(TooOld):
        store.changes_since(start)
    store.close()
    # After a restart, only changes from then on can be watched.
    again = SqliteStore(tmp_path / "s.db")
    with pytest.raises(TooOld):
        again.changes_since(start)
    assert again.changes_since(again.resource_version) == []


def test_history_is_trimmed_a_little_at_a_time(tmp_path):
    """The watch history keeps its latest changes and not many more: trimmed now and then by half,
    a long-lived server's memory grew with the allocator's fragmentation (bench soak)."""
    store = SqliteStore(tmp_path / "s.db", history=128)
    rvs = []
    for i in range(1000):
        rvs.append(int(store.create(_node(f"n{i}"))["metadata"]["resourceVersion"]))
        assert store.history_size <= 128 + 128 // 64
    # A watch resuming within the latest ``history`` changes gets all of them, an older one 410.
    assert _names(store.changes_since(rvs[-129])) == [f"n{i}" for i in range(872, 1000)]
    with pytest.raises(TooOld):
        store.changes_since(rvs[-200])
    store.close()


# -- group commit ------------------------------------------------------------------------------


def _names(events: list) -> list[str]:
    return [e.obj["metadata"]["name"] for e in events]


def _held_commit(store: SqliteStore, write) -> threading.Thread:
    """Run ``write`` on a thread while the test holds the database's lock: the write is made in
    memory and waits for its commit."""
    thread = threading.Thread(target=write)
    thread.start()
    deadline = time.monotonic() + 5
    while not store._rows and time.monotonic() < deadline:
        time.sleep(0.001)
    assert store._rows, "the write did not reach memory"
    return thread


def test_a_change_is_published_only_once_committed(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    watch = store.watch(frozenset({"Node"}))
    start = store.resource_version
    store._db_lock.acquire()
    writer = _held_commit(store, lambda: store.create(_node("n1")))
    # In memory (a read may see it) but neither in the history nor on a watch: not committed.
    assert store.get("Node", None, "n1") is not None
    assert store.changes_since(start) == [] and len(watch) == 0
    assert writer.is_alive()
    store._db_lock.release()
    writer.join(5)
    assert _names(store.changes_since(start)) == ["n1"] and _names(list(watch.drain())) == ["n1"]
    store.close()
    assert SqliteStore(tmp_path / "s.db").get("Node", None, "n1") is not None


def test_writes_that_wait_together_share_one_commit(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    commits: list[int] = []
    write_rows = store._write_rows

    def counting(rows):
        commits.append(len(rows))
        write_rows(rows)

    store._write_rows = counting
    store._db_lock.acquire()
    writers = [threading.Thread(target=store.create, args=(_node(f"n{i}"),)) for i in range(5)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 5
    while len(store._rows) < 5 and time.monotonic() < deadline:
        time.sleep(0.001)
    store._db_lock.release()
    for w in writers:
        w.join(5)
    # The first writer to get the database's lock commits all five.
    assert commits == [5]
    assert sorted(_names(store.changes_since(0))) == [f"n{i}" for i in range(5)]
    store.close()


def test_a_watch_started_while_a_commit_is_under_way_sees_each_change_once(tmp_path):
    """A listing shows a write still being committed: the watch started with it skips that write's
    change when it is published, and gets every later one."""
    store = SqliteStore(tmp_path / "s.db")
    store._db_lock.acquire()
    writer = _held_commit(store, lambda: store.create(_node("n1")))
    with store.lock:
        watch = store.watch(frozenset({"Node"}))
        listed = [o["metadata"]["name"] for o in store.list("Node")]
    pods = store.watch(frozenset({"Pod"}))
    with store.lock:
        pods.add_kinds(frozenset({"Node"}))
    store._db_lock.release()
    writer.join(5)
    store.create(_node("n2"))
    assert listed == ["n1"]
    assert _names(list(watch.drain())) == ["n2"]
    assert _names(list(pods.drain())) == ["n2"]
    store.close()


def test_changes_from_many_threads_are_committed_and_published_in_version_order(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    watch = store.watch()

    def writer(t: int) -> None:
        for i in range(40):
            store.create(_node(f"t{t}-{i}"))
            if i % 3 == 0:
                store.delete("Node", None, f"t{t}-{i}")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))
    events = list(watch.drain())
    versions = [int(e.obj["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert len(events) == 4 * (40 + 14)
    last = store.resource_version
    kept = sorted(o["metadata"]["name"] for o in store.list("Node"))
    store.close()
    again = SqliteStore(tmp_path / "s.db")
    assert sorted(o["metadata"]["name"] for o in again.list("Node")) == kept
    assert again.resource_version == last
    again.close()


def test_a_failed_commit_fails_the_write_and_every_later_one(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    store.create(_node("n0"))
    watch = store.watch()

    def broken(rows):
        raise sqlite3.OperationalError("database or disk is full")

    store._write_rows = broken
    with pytest.raises(CommitFailed, match=r"could not be committed.*disk is full.*restart"):
        store.create(_node("n1"))
    with pytest.raises(CommitFailed, match="restart"):
        store.create(_node("n2"))
    assert len(watch) == 0
    store.close()
    assert [o["metadata"]["name"] for o in SqliteStore(tmp_path / "s.db").list("Node")] == ["n0"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["put", "delete"]), st.integers(0, 3)), min_size=1, max_size=25))
def test_a_group_of_writes_to_the_same_objects_commits_what_memory_holds(tmp_path_factory, ops):
    """Writes made before one commit, several to the same object (created, changed, deleted, made
    again): the database holds what memory holds, and versions go on after a reopen."""
    path = tmp_path_factory.mktemp("group") / "s.db"
    store = SqliteStore(path)
    with store.deferring() as pending:
        for op, i in ops:
            name = f"n{i}"
            current = store.get("Node", None, name)
            if op == "delete":
                if current is not None:
                    store.delete("Node", None, name)
            elif current is None:
                store.create(_node(name))
            else:
                store.update({**current, "metadata": {**current["metadata"], "labels": {"v": str(len(ops))}}})
    store.sync(pending.generation)
    held = {o["metadata"]["name"]: o for o in store.list("Node")}
    last = store.resource_version
    store.close()
    again = SqliteStore(path)
    assert {o["metadata"]["name"]: o for o in again.list("Node")} == held
    assert again.resource_version == last
    again.close()


def test_an_object_that_cannot_be_stored_fails_its_own_write_only(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    with pytest.raises(TypeError):
        store.create({**_node("bad"), "spec": {"x": "\udb18"}})
    assert store.get("Node", None, "bad") is None
    store.create(_node("good"))
    store.close()
    assert [o["metadata"]["name"] for o in SqliteStore(tmp_path / "s.db").list("Node")] == ["good"]


def test_a_transaction_that_fails_part_way_commits_what_it_wrote(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    watch = store.watch(frozenset({"Node"}))
    with pytest.raises(RuntimeError), store.transaction():
        store.create(_node("n1"))
        raise RuntimeError("the block failed after a write")
    assert _names(list(watch.drain())) == ["n1"]
    store.close()
    assert SqliteStore(tmp_path / "s.db").get("Node", None, "n1") is not None


def test_a_generation_counts_as_committed_only_once_its_changes_are_published(tmp_path):
    """Another thread's commit takes this thread's deferred write too; while it waits to publish
    (someone holds the store's lock), this thread's sync does not return."""
    store = SqliteStore(tmp_path / "s.db")
    held, release = threading.Event(), threading.Event()
    write_rows = store._write_rows

    def write_then_let_the_lock_be_taken(rows):
        write_rows(rows)
        if threading.current_thread().name == "committer":
            threading.Thread(target=hold_lock).start()
            held.wait(5)

    def hold_lock():
        with store.lock:
            held.set()
            release.wait(5)

    store._write_rows = write_then_let_the_lock_be_taken
    with store.deferring() as pending:
        store.create(_node("mine"))
    committer = threading.Thread(target=store.create, args=(_node("theirs"),), name="committer")
    committer.start()
    assert held.wait(5)
    synced = threading.Event()
    waiter = threading.Thread(target=lambda: (store.sync(pending.generation), synced.set()))
    waiter.start()
    time.sleep(0.1)
    assert not synced.is_set() and not store.committed(pending.generation)
    release.set()
    waiter.join(5)
    committer.join(5)
    assert synced.is_set()
    assert _names(store.changes_since(0)) == ["mine", "theirs"]
    store.close()
