"""The ids a thread holds, shared between loads and runs without copying them.

A run needs every id of its thread (to deduplicate its input and to skip them
when it makes ids), and adds a few of its own. Copying a long thread's ids
for each run made a run's cost grow with the thread, so a ``HeldIds`` is
frozen parts, shared and never changed, plus a small set of its own: a fork
copies only that small set, and adding to a fork changes nothing else. Once
its own set grows past ``COMPACT_AT`` the owner folds it into one frozen part
(an O(n) copy every few hundred additions, not one per run).
"""

from __future__ import annotations

from itertools import chain

# Own ids past which ``compact`` folds them into a frozen part.
COMPACT_AT = 256


class HeldIds:
    """A set of ids to test (``in``) and add to; iteration may repeat an id
    that is in two of its parts (``set(held)`` gives each once)."""

    __slots__ = ("frozen", "own")

    def __init__(self, frozen: tuple[frozenset, ...] = (), own: set | None = None):
        self.frozen = frozen
        self.own = set() if own is None else own

    @classmethod
    def of(cls, ids) -> HeldIds:
        """``ids`` if it is one, else a HeldIds holding a copy of them."""
        return ids if isinstance(ids, HeldIds) else cls((), set(ids))

    def __contains__(self, item) -> bool:
        if item in self.own:
            return True
        return any(item in part for part in self.frozen)

    def __iter__(self):
        return chain(*self.frozen, self.own)

    def __repr__(self) -> str:
        return f"HeldIds({set(self)!r})"

    def add(self, item) -> None:
        if item not in self:
            self.own.add(item)

    def discard(self, item) -> None:
        """Forgets an id of its own (frozen parts are shared: they stay)."""
        self.own.discard(item)

    def fork(self) -> HeldIds:
        """An independent HeldIds with the same ids (copies the own set only)."""
        return HeldIds(self.frozen, set(self.own))

    def union(self, *others) -> HeldIds:
        """A new HeldIds with these ids and those of ``others`` (HeldIds or iterables)."""
        frozen = list(self.frozen)
        own = set(self.own)
        for other in others:
            if isinstance(other, HeldIds):
                frozen.extend(p for p in other.frozen if not any(p is q for q in frozen))
                own |= other.own
            else:
                own.update(other)
        return HeldIds(tuple(frozen), own)

    def compact(self) -> None:
        """Folds the own ids, once there are many, and the frozen parts into one
        new frozen part (the old parts are left to whoever shares them)."""
        if len(self.own) > COMPACT_AT:
            self.frozen = (frozenset(chain(*self.frozen, self.own)),)
            self.own = set()
