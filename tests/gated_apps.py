"""The ingress test app over a store whose saves wait on a mark: a test holds
a run at the moment of its first save (the user's turn) or of its last (the
run's answer) and joins it there.

A thread whose id starts with ``gated-`` has each save ``k`` (1, 2, …, counted
per thread in this process) write ``AGUI_TEST_MARKS/saving-{thread}-{k}`` and
then wait until the test writes ``AGUI_TEST_MARKS/save-{thread}-{k}``. The
other threads' saves go straight through. The store under it is
``AGUI_TEST_STORE`` (memory by default), opened on first use.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path

from agui_bridge.store import open_store

from tests.ingress_apps import make_app


class GatedStore:
    def __init__(self, spec: str, marks: str):
        self.spec = spec
        self.marks = Path(marks)
        self.saves: Counter = Counter()
        self._store = None

    @property
    def store(self):
        if self._store is None:
            self._store = open_store(self.spec)
        return self._store

    def __getattr__(self, name):
        # claim, renew, release, load, create, … of the store under it
        return getattr(self.store, name)

    # The optional parameters named, as the stores under it have them: the gate
    # passes only those a store's signature shows (``store.lease``), and a gated
    # store must keep branches, owners, statuses and heads as they do.
    async def save(
        self, thread_id, *args, lease=None, owner=None, errored=False, cut=None, run_id=None
    ):
        kwargs = {"lease": lease, "owner": owner, "errored": errored, "cut": cut, "run_id": run_id}
        if thread_id.startswith("gated-"):
            self.saves[thread_id] += 1
            k = self.saves[thread_id]
            (self.marks / f"saving-{thread_id}-{k}").write_text("1")
            release = self.marks / f"save-{thread_id}-{k}"
            async with asyncio.timeout(30):
                while not release.exists():
                    await asyncio.sleep(0.01)
        return await self.store.save(thread_id, *args, **kwargs)


app = make_app(
    store=GatedStore(os.environ.get("AGUI_TEST_STORE", "memory://"), os.environ["AGUI_TEST_MARKS"])
)
