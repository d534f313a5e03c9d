"""The in-process thread store (``memory://``): for tests and demos.

It runs on the event loop (there is no thread to hand its work to), so none
of its calls keeps the loop long: a load takes a turn of the loop of its own
and a search walks at most ``SLICE`` threads per turn. A searcher's request
is then many short steps, and a run waits between them for one step, not
for a whole search and its page of loads (issue 24 item 3: four searchers
back to back made runs 14x slower; ``benches/search.py``).
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections.abc import Iterator
from itertools import islice

from . import blobs as blob_rows
from .branches import Branch, Cut, kept
from .keep import (
    check_messages,
    check_metadata,
    check_thread,
    metadata_holds,
    status_of,
    storable_id,
)
from .lease import TAKEN, Lease, claimed, lease_lost
from .tail import Tail

# The threads a search looks at per turn of the event loop.
SLICE = 256


class MemoryStore:
    def __init__(self):
        # In update order (an update moves its thread to the end), as is each
        # owner's own: a search walks them newest first and stops at its page.
        self._threads: dict[str, dict] = {}
        self._owned: dict[str, dict[str, dict]] = {}
        # thread_id -> (token, fence, expires at)
        self._leases: dict[str, tuple[str, int, float]] = {}
        # The blob table (blobs.py): hash -> base64 text, and the threads referring
        # to each; a thread's messages share these strings.
        self._blobs: dict[str, str] = {}
        self._blob_refs: dict[str, set[str]] = {}
        self._thread_blobs: dict[str, set[str]] = {}

    async def load(self, thread_id: str):
        from . import Thread

        await asyncio.sleep(0)  # a turn of its own (see the module)
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        if record is None:
            return None
        tail = record["tail"]
        return Thread(
            thread_id=thread_id,
            agent_id=record["agent_id"],
            messages=list(tail.messages),
            state=copy.deepcopy(record["state"]),
            interrupts=copy.deepcopy(record["interrupts"]),
            ids=tail.ids.fork(),
            call_ids=tail.call_ids.fork(),
            metadata=copy.deepcopy(record["metadata"]) if record["metadata"] else {},
            created_at=record["created_at"],
            updated_at=record["updated_at"],
            owner=record["owner"],
            status=record["status"],
        )

    async def load_listed(self, thread_id: str):
        """``load`` for a search's page, shown at once: it shares the store's
        state, interrupts and metadata (read them, never change them) and
        holds no ids, so showing a thread copies nothing but its list."""
        from . import Thread

        await asyncio.sleep(0)  # a turn of its own (see the module)
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        if record is None:
            return None
        return Thread(
            thread_id=thread_id,
            agent_id=record["agent_id"],
            messages=list(record["tail"].messages),
            state=record["state"],
            interrupts=record["interrupts"],
            metadata=record["metadata"],
            created_at=record["created_at"],
            updated_at=record["updated_at"],
            owner=record["owner"],
            status=record["status"],
        )

    def _new(self, thread_id: str, agent_id, metadata: dict, owner) -> dict:
        now = time.time()
        record = self._threads[thread_id] = {
            "agent_id": agent_id,
            "tail": Tail(),
            "state": {},
            "interrupts": [],
            "metadata": copy.deepcopy(metadata),
            "created_at": now,
            "updated_at": now,
            "owner": owner,
            "status": "idle",
            "branches": [],  # the branches it left (branches.py), oldest first
            "heads": {},  # run id -> the branch's last message id after its save
        }
        if owner is not None:
            self._owned.setdefault(owner, {})[thread_id] = record
        return record

    def _touched(self, thread_id: str, record: dict) -> None:
        """``record`` was updated now: it moves to the end of the update order."""
        record["updated_at"] = time.time()
        del self._threads[thread_id]
        self._threads[thread_id] = record
        owned = self._owned.get(record["owner"])
        if owned is not None:
            del owned[thread_id]
            owned[thread_id] = record

    def _forget(self, thread_id: str) -> bool:
        record = self._threads.pop(thread_id, None)
        if record is None:
            return False
        for digest in self._thread_blobs.pop(thread_id, ()):
            holders = self._blob_refs[digest]
            holders.discard(thread_id)
            if not holders:
                del self._blob_refs[digest]
                del self._blobs[digest]
        owned = self._owned.get(record["owner"])
        if owned is not None:
            owned.pop(thread_id, None)
            if not owned:
                del self._owned[record["owner"]]
        return True

    async def save(
        self,
        thread_id,
        agent_id,
        new_messages,
        state,
        interrupts,
        lease=None,
        owner=None,
        errored=False,
        cut: Cut | None = None,
        run_id: str | None = None,
    ) -> None:
        check_thread(thread_id)
        check_messages(new_messages)
        # Hashed first (off the loop when large): what follows has no await, so
        # no other save of the thread comes between the lease check and the append.
        texts: dict[str, str] = {}
        rows: dict = {}
        if blob_rows.inline_chars(new_messages):
            split, _ = await blob_rows.split_off_loop(new_messages, texts)
            pairs = zip(new_messages, split, strict=True)
            rows = {message.get("id"): row for message, row in pairs}
        if lease is not None:
            held = self._leases.get(thread_id)
            if lease.thread_id != thread_id or held is None or held[1] != lease.fence:
                raise lease_lost(thread_id, lease)
        # Copied before anything changes: a state that cannot be kept fails the
        # save whole, as the SQL stores' transaction does.
        state, interrupts = copy.deepcopy(state), copy.deepcopy(interrupts)
        record = self._threads.get(thread_id)
        if record is None:
            record = self._new(thread_id, agent_id, {}, owner)
        else:
            self._touched(thread_id, record)
            if cut is not None:
                self._cut(record, cut)
        if record["agent_id"] is None:
            record["agent_id"] = agent_id
        tail = record["tail"]
        fresh = []
        seen = set()
        for message in new_messages:
            message_id = message.get("id")
            if message_id in tail.ids or message_id in seen:
                continue
            seen.add(message_id)
            row = rows.get(message_id)
            if row is not None and row is not message:
                fresh.append(self._interned(thread_id, copy.deepcopy(row), texts))
            else:
                fresh.append(copy.deepcopy(message))
        # Appends only: a loaded thread's list is a copy, its messages are shared.
        tail.extend(fresh, tail.seq + len(fresh))
        record["state"] = state
        record["interrupts"] = interrupts
        record["status"] = status_of(interrupts, errored)
        if run_id is not None and record["tail"].messages:
            record["heads"][run_id] = record["tail"].messages[-1]["id"]

    def _interned(self, thread_id: str, row: dict, texts: dict) -> dict:
        """A message's row whole again, its inline data kept once in the blob
        table (the strings shared), the thread's references to them recorded."""
        for digest in blob_rows.refs(row):
            self._blobs.setdefault(digest, texts[digest])
            self._blob_refs.setdefault(digest, set()).add(thread_id)
            self._thread_blobs.setdefault(thread_id, set()).add(digest)
        return blob_rows.join(row, self._blobs.get)

    @staticmethod
    def _cut(record: dict, cut: Cut) -> None:
        """Keeps the current branch as a branch, then cuts it after ``cut.after``."""
        tail = record["tail"]
        count = kept(tail.messages, cut.after)
        if count is None or count == len(tail.messages):
            return  # nothing follows (or no such message): nothing to keep aside
        left = record["branches"]
        branch = Branch(len(left) + 1, cut.after, cut.run_id, time.time(), len(tail.messages))
        # The messages are shared, never changed; the state is the branch's own.
        branch.messages = list(tail.messages)
        branch.state = copy.deepcopy(record["state"])
        left.append(branch)
        # A new tail: loaded threads keep theirs (a Tail is never changed).
        fresh = Tail()
        fresh.extend(tail.messages[:count], count)
        record["tail"] = fresh

    async def head(self, thread_id: str, run_id: str) -> str | None:
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        return None if record is None else record["heads"].get(run_id)

    async def branches(self, thread_id: str) -> list[Branch] | None:
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        if record is None:
            return None
        return [
            Branch(b.number, b.after, b.run_id, b.created_at, b.count) for b in record["branches"]
        ]

    async def branch(self, thread_id: str, number: int) -> Branch | None:
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        if record is None or not 1 <= number <= len(record["branches"]):
            return None
        b = record["branches"][number - 1]
        return Branch(
            b.number, b.after, b.run_id, b.created_at, b.count, list(b.messages),
            copy.deepcopy(b.state),
        )  # fmt: skip

    async def create(self, thread_id: str, metadata: dict, owner=None) -> bool:
        check_thread(thread_id)
        check_metadata(metadata)
        if thread_id in self._threads:
            return False
        self._new(thread_id, None, metadata, owner)
        return True

    async def update_metadata(self, thread_id: str, metadata: dict) -> bool:
        check_metadata(metadata)
        record = self._threads.get(thread_id) if storable_id(thread_id) else None
        if record is None:
            return False
        record["metadata"].update(copy.deepcopy(metadata))
        self._touched(thread_id, record)
        return True

    async def delete(self, thread_id: str) -> bool:
        return storable_id(thread_id) and self._forget(thread_id)

    def _busy(self, thread_id: str, now: float) -> bool:
        held = self._leases.get(thread_id)
        return held is not None and held[2] > now

    async def search(
        self, metadata: dict, ids, limit: int, offset: int = 0, owner=None, status=None
    ) -> list:
        from . import Listed

        check_metadata(metadata)
        now = time.time()
        threads = self._threads if owner is None else self._owned.get(owner, {})
        if ids is not None and len(ids) < len(threads):
            order = sorted((i for i in ids if i in threads), key=lambda i: threads[i]["updated_at"])
        else:
            order = threads  # newest last
        walk: Iterator[str] = reversed(order)
        found: list = []
        while True:
            walked = 0
            for thread_id in islice(walk, SLICE):
                walked += 1
                record = self._threads.get(thread_id)
                if record is None or (owner is not None and record["owner"] != owner):
                    continue  # deleted meanwhile
                if ids is not None and thread_id not in ids:
                    continue
                if not metadata_holds(record["metadata"], metadata):
                    continue
                shown = "busy" if self._busy(thread_id, now) else record["status"]
                if status is not None and shown != status:
                    continue
                if offset:
                    offset -= 1
                    continue
                found.append(Listed(thread_id, record["agent_id"], shown))
                if len(found) >= limit:
                    return found
            if walked < SLICE:
                return found
            if order is threads:
                # The rest, copied before the loop turns (saves go on meanwhile):
                # a search that ends within its first slice copies nothing.
                rest = list(walk)
                order, walk = rest, iter(rest)
            await asyncio.sleep(0)

    async def sweep(self, idle_before: float, batch: int) -> list[str]:
        now = time.time()
        gone = []
        for thread_id, record in self._threads.items():  # oldest update first
            if record["updated_at"] >= idle_before or len(gone) >= batch:
                break
            if not self._busy(thread_id, now):
                gone.append(thread_id)
        for thread_id in gone:
            self._forget(thread_id)
        return gone

    async def claim(self, thread_id: str, ttl: float) -> Lease | None:
        check_thread(thread_id)
        now = time.time()
        held = self._leases.get(thread_id)
        if held is not None and held[2] > now:
            return None
        token = uuid.uuid4().hex if held is None or not held[0] else TAKEN + uuid.uuid4().hex
        lease = claimed(thread_id, token, (held[1] if held else 0) + 1)
        self._leases[thread_id] = (lease.token, lease.fence, now + ttl)
        return lease

    async def renew(self, lease: Lease, ttl: float) -> bool:
        held = self._leases.get(lease.thread_id)
        if held is None or held[0] != lease.token:
            return False
        self._leases[lease.thread_id] = (held[0], held[1], time.time() + ttl)
        return True

    async def release(self, lease: Lease) -> None:
        held = self._leases.get(lease.thread_id)
        if held is not None and held[0] == lease.token:
            # The fence stays, so the next claim's is larger.
            self._leases[lease.thread_id] = ("", held[1], 0.0)

    async def close(self) -> None:
        pass
