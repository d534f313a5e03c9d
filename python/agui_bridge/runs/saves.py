"""Where runs' saves wait their turn: a small save never queues behind large ones.

A run's save writes its whole turn. The store takes writes in the order they
come (SQLite has one writer thread), so with 200 runs of 4 MB saving at once a
quick run's save, and the user's turn of every run starting meanwhile, waited
behind all of them: its RUN_FINISHED came 16.5 s late. Saves go through two
lanes of their store here: saves up to ``SMALL`` bytes in one (``SMALL_WIDTH``
at once), larger ones in the other (one at a time), each taking the smallest
waiting save first. What reaches the store is then at most a few saves, so a
small save, and any other write (a run's start, a lease), waits for those
only. Each save runs as before (the store's own thread or connection pool:
nothing blocks the event loop).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref

# A save up to this many bytes of content goes in the small lane.
SMALL = 256 * 1024
SMALL_WIDTH = 4
LARGE_WIDTH = 1


class Lane:
    """At most ``width`` saves at once; the smallest waiting one goes next."""

    def __init__(self, width: int):
        self.width = width
        self.running = 0
        self.waiting: list = []  # (size, order, future)
        self._order = itertools.count()

    async def run(self, size: int, save):
        if self.running < self.width and not self.waiting:
            self.running += 1
        else:
            turn = asyncio.get_running_loop().create_future()
            heapq.heappush(self.waiting, (size, next(self._order), turn))
            try:
                await turn  # handed the place of a save that finished
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._next()  # it was handed a place it will not use
                else:
                    turn.cancel()  # skipped when its turn comes
                raise
        try:
            return await save()
        finally:
            self._next()

    def _next(self) -> None:
        while self.waiting:
            _, _, turn = heapq.heappop(self.waiting)
            if not turn.done():
                turn.set_result(None)  # its place passes on: running stays
                return
        self.running -= 1


class Lanes:
    def __init__(self):
        self.small = Lane(SMALL_WIDTH)
        self.large = Lane(LARGE_WIDTH)
        self.loop = asyncio.get_running_loop()

    def of(self, size: int) -> Lane:
        return self.small if size <= SMALL else self.large


_by_store: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lanes_of(store) -> Lanes:
    lanes = _by_store.get(store)
    if lanes is None or lanes.loop is not asyncio.get_running_loop():
        lanes = _by_store[store] = Lanes()
    return lanes


async def in_turn(store, size: int, save):
    """Awaits ``save()`` (a store write of about ``size`` bytes) in its lane."""
    return await lanes_of(store).of(size).run(size, save)


def size_of(messages: list[dict]) -> int:
    """About how many bytes of content ``messages`` hold (what a save writes)."""
    size = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            size += len(content)
        elif isinstance(content, list):  # parts: text, images as data
            for part in content:
                if isinstance(part, dict):
                    size += sum(len(v) for v in part.values() if isinstance(v, str))
        for call in message.get("toolCalls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                size += len(function["arguments"])
    return size
