"""The decoded messages of a thread, kept so a load reads only what is new.

Messages are appended and never changed once stored, so what a process has
decoded stays true: a load asks the store for the messages after the last one
it holds (``seq``) and appends them here. Each load gets a new list and new
id sets; the message dicts themselves are shared (a run must not change them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

# Decoded messages kept per process, over all threads (least recently used go first).
MAX_CACHED_MESSAGES = 200_000


class Tail:
    __slots__ = ("call_ids", "epoch", "ids", "messages", "seq")

    def __init__(self, epoch=None):
        # The thread's creation time: a tail of a thread deleted since is not its.
        self.epoch = epoch
        self.seq = 0
        self.messages: list[dict] = []
        self.ids: set = set()
        self.call_ids: set = set()

    def extend(self, messages, seq: int) -> None:
        for message in messages:
            self.messages.append(message)
            message_id = message.get("id")
            if isinstance(message_id, str):
                self.ids.add(message_id)
            if message.get("role") == "assistant":
                for call in message.get("toolCalls") or ():
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        self.call_ids.add(call["id"])
        self.seq = seq

    def copy(self) -> Tail:
        other = Tail(self.epoch)
        other.seq = self.seq
        other.messages = list(self.messages)
        other.ids = set(self.ids)
        other.call_ids = set(self.call_ids)
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

    def put(self, thread_id: str, tail: Tail) -> None:
        """Keeps ``tail`` unless a longer one of that thread is already kept."""
        with self._lock:
            old = self._tails.get(thread_id)
            if old is not None:
                if old.seq >= tail.seq:
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
