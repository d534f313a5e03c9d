"""Several granian workers open one SQLite file at once: each worker opens the
store on its first request, so on a fresh file their schema set-ups race.

A fresh-clone CI run of ``test_faults.py::test_sigterm_ends_long_runs_with_server_shutdown``
(four runs at once on a two-worker ``serve``, a new file) lost a run this way:
one worker's open failed (``database is locked`` from the switch to WAL, or
``duplicate column name`` from a column both added), so that run never started.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

from agui_bridge.store import SqliteStore
from agui_bridge.store.sqlite import _ADDED, _SCHEMA


def _open_in_thread(path: str) -> tuple[threading.Thread, list]:
    outcome: list = []

    def open_it():
        try:
            SqliteStore(path)
            outcome.append("opened")
        except sqlite3.Error as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_it, daemon=True)
    opener.start()
    return opener, outcome


def test_a_store_opens_while_another_worker_writes_the_new_file(tmp_path):
    """The switch to WAL waits for another worker's write, as every other
    statement does (busy_timeout), instead of failing at once."""
    path = str(tmp_path / "threads.sqlite")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE IF NOT EXISTS leases (thread_id TEXT PRIMARY KEY)")
    opener, outcome = _open_in_thread(path)
    opener.join(1.0)  # it waits for the lock meanwhile
    other.execute("COMMIT")
    other.close()
    opener.join(30)
    assert outcome == ["opened"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_store_opens_while_another_worker_adds_the_columns(tmp_path):
    """The columns a store adds are looked up under the write lock: a worker
    that adds them meanwhile leaves nothing to add (no ``duplicate column``)."""
    path = str(tmp_path / "threads.sqlite")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode = WAL")
    other.executescript(_SCHEMA)  # every table, without the added columns
    made = {row[1] for row in other.execute("PRAGMA table_info(threads)")}
    other.execute("BEGIN IMMEDIATE")
    for name, kind in _ADDED:
        if name not in made:
            other.execute(f"ALTER TABLE threads ADD COLUMN {name} {kind}")
    opener, outcome = _open_in_thread(path)
    opener.join(1.0)  # it reads the columns (before these) and waits to add them
    other.execute("COMMIT")
    other.close()
    opener.join(30)
    assert outcome == ["opened"]
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(threads)")]
    assert len(columns) == len(set(columns)) and {name for name, _ in _ADDED} <= set(columns)


def _open_at(path, barrier, outcomes):
    barrier.wait(30)
    try:
        SqliteStore(path)
        outcomes.put("opened")
    except sqlite3.Error as exc:
        outcomes.put(repr(exc))


def test_workers_open_a_new_file_at_once(tmp_path):
    """Three processes open each new file at the same moment, twelve times:
    every open succeeds (before the fix, about one in ten failed)."""
    context = multiprocessing.get_context("fork")
    outcomes = context.Queue()
    for round_ in range(12):
        path = str(tmp_path / f"threads-{round_}.sqlite")
        barrier = context.Barrier(3)
        workers = [
            context.Process(target=_open_at, args=(path, barrier, outcomes)) for _ in range(3)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
    got = [outcomes.get(timeout=10) for _ in range(36)]
    assert [o for o in got if o != "opened"] == []
