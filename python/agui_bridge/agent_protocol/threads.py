"""``POST /threads/search``: a page of the caller's threads, found by the store.

The store answers the filters it can index (the owner, the status, metadata,
ids) with the page itself (``offset``, ``limit``), so a search costs a page of
loads whatever the number of threads; only the page's threads are loaded, to
show them. Two filters the store cannot answer are applied here, on the
store's order: ``values`` (the thread's state and messages) and the
``authorize_thread`` guards of an app that has any (a thread the caller may
not see is not found). With either, the store is read in chunks and the
caller's offset counts what passes them.

Whose threads: ``store/owner.py`` (a caller with an owner lists its own).
"""

from __future__ import annotations

from ..ingress.handler import HttpError, thread_guards
from ..store import Thread
from ..store.owner import owner_of

# Threads read from the store at a time when filtering here: the first chunk,
# doubled for each next one up to the last. The store finds a chunk by offset
# (walking the ones before it), so fixed chunks cost O(N²/chunk) for a filter
# few threads pass; doubling walks each thread about twice.
CHUNK = 200
MAX_CHUNK = 12_800
_ABSENT = object()


async def search(ap, identity, metadata, values, ids, status, limit: int, offset: int) -> list:
    app = ap.app
    store = app.store
    owner = owner_of(identity)
    guarded = any(a.authorize_thread is not None for a in app.agents.values())

    def busy_here(listed) -> str:
        # A run of this worker between its claim and its lease, or queued.
        return "busy" if app.gate.busy(listed.thread_id) else listed.status

    if not guarded and not values:
        page = await store.search(metadata, ids, limit, offset, owner=owner, status=status)
        shown = [await _shown(ap, listed.thread_id, busy_here(listed)) for listed in page]
        return [t for t in shown if t is not None]  # None: deleted since

    found: list = []
    skip = offset
    at = 0
    size = CHUNK
    while len(found) < limit:
        chunk = await store.search(metadata, ids, size, at, owner=owner, status=status)
        at += len(chunk)
        for listed in chunk:
            if guarded and not await _may_see(ap, identity, listed):
                continue
            shown = await _shown(ap, listed.thread_id, busy_here(listed))
            if shown is None or any(
                shown["values"].get(k, _ABSENT) != v for k, v in values.items()
            ):
                continue
            if skip:
                skip -= 1
                continue
            found.append(shown)
            if len(found) >= limit:
                break
        if len(chunk) < size:
            break
        size = min(2 * size, MAX_CHUNK)
    return found


async def _may_see(ap, identity, listed) -> bool:
    owner = Thread(listed.thread_id, agent_id=listed.agent_id)
    try:
        await ap.handler.authorize_thread(identity, listed.thread_id, thread_guards(ap.app, owner))
    except HttpError:
        return False
    return True


async def _shown(ap, thread_id: str, status: str):
    store = ap.app.store
    # A store may keep its searches off the threads runs read on (SQLite does).
    thread = await getattr(store, "load_listed", store.load)(thread_id)
    return None if thread is None else ap.thread_json_of(thread, status)
