"""The decoded messages of a thread, kept so a load reads only what is new.

Messages are appended and never changed once stored, so what a process has
decoded stays true: a load asks the store for the messages after the last one
it holds (``seq``) and appends them here (a row that is not an AG-UI message,
or not JSON, is left out here, the one place every store reads them through).
Each load gets a new list and forks of the id sets (``ids.py``: only their few
newest ids are copied); the message dicts themselves are shared (a run must
not change them).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from ..shapes import usable
from .ids import HeldIds

log = logging.getLogger("agui_bridge.store")

# Decoded messages kept per process, over all threads (least recently used go first).
MAX_CACHED_MESSAGES = 200_000


class Tail:
    __slots__ = ("call_ids", "epoch", "ids", "messages", "seq")

    def __init__(self, epoch=None):
        # The thread's creation time: a tail of a thread deleted since is not its.
        self.epoch = epoch
        self.seq = 0
        self.messages: list[dict] = []
        self.ids = HeldIds()
        self.call_ids = HeldIds()

    def extend(self, messages, seq: int) -> None:
        for message in messages:
            message_id = message.get("id") if isinstance(message, dict) else None
            if isinstance(message_id, str):
                self.ids.add(message_id)  # held: a message under it is not stored again
            if not usable(message):
                # Stored before the door checked shapes (shapes.py): one bad row
                # is left out of the thread rather than failing every reader.
                log.warning("a stored message of another shape is left out (id %r)", message_id)
                continue
            self.messages.append(message)
            if message.get("role") == "assistant":
                for call in message.get("toolCalls") or ():
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        self.call_ids.add(call["id"])
        self.ids.compact()
        self.call_ids.compact()
        self.seq = seq

    def copy(self) -> Tail:
        other = Tail(self.epoch)
        other.seq = self.seq
        other.messages = list(self.messages)
        other.ids = self.ids.fork()
        other.call_ids = self.call_ids.fork()
        return other


class TailCache:
    """Tails of recently loaded threads, bounded by their total messages."""

    def __init__(self, max_messages: int = MAX_CACHED_MESSAGES):
        self.max_messages = max_messages
        self._tails: OrderedDict[str, Tail] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, thread_id: str) -> Tail | None:
        with self._lock:
            tail = self._tails.get(thread_id)
            if tail is not None:
                self._tails.move_to_end(thread_id)
            return tail

    def advance(
        self, thread_id: str, base: Tail | None, messages: list, seq: int, epoch=None
    ) -> Tail:
        """``base`` (the tail ``get`` gave, or None: then a new one of the
        thread created at ``epoch``) with ``messages``, read up to ``seq``,
        appended; kept for the next load. A kept tail is never changed: the
        new one replaces it."""
        tail = base if base is not None else Tail(epoch)
        if messages:
            tail = tail.copy()
            tail.extend(messages, seq)
            self.put(thread_id, tail)
        return tail

    def put(self, thread_id: str, tail: Tail) -> None:
        """Keeps ``tail`` unless a longer one of that thread is already kept."""
        with self._lock:
            old = self._tails.get(thread_id)
            if old is not None:
                if old.seq >= tail.seq and old.epoch == tail.epoch:
                    return
                self._size -= len(old.messages)
                del self._tails[thread_id]
            if len(tail.messages) > self.max_messages:
                return
            self._tails[thread_id] = tail
            self._size += len(tail.messages)
            while self._size > self.max_messages:
                _, evicted = self._tails.popitem(last=False)
                self._size -= len(evicted.messages)
