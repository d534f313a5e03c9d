"""The branches of a thread as the Agent Protocol shows them: checkpoints.

``POST /threads/{id}/history`` answers the current state first, then every
branch the thread left (``store/branches.py``), newest first, each a
ThreadState whose ``checkpoint.checkpoint_id`` names it; ``GET
/threads/{id}/state/{checkpoint_id}`` reads one of them. A branch's
checkpoint id is stable (it names the branch); the current state's changes
with every save (``objects.checkpoint``).
"""

from __future__ import annotations

from ..store.keep import metadata_holds
from .objects import checkpoint, langgraph_state, named_checkpoint, thread_state
from .runs import iso
from .stream import values_of


def branch_checkpoint(thread_id: str, number: int) -> dict:
    return named_checkpoint(thread_id, f"branch:{number}")


def branch_state(thread_id: str, branch) -> dict:
    """A branch the thread left, whole, as a ThreadState (nothing pending on it)."""
    return {
        "values": branch.state,
        "messages": branch.messages,
        "next": [],
        "checkpoint": branch_checkpoint(thread_id, branch.number),
        "metadata": {
            "source": "fork",
            "step": branch.count,
            "writes": None,
            "branch_id": str(branch.number),
            "forked_after": branch.after,
            "run_id": branch.run_id,
        },
        "created_at": iso(branch.created_at),
        "parent_checkpoint": None,
        "tasks": [],
        "interrupts": [],
        "pendingInterrupts": [],
    }


def as_langgraph(state: dict) -> dict:
    """A branch's ThreadState as LangGraph's server gives it (the messages in ``values``)."""
    state = dict(state)
    messages = state.pop("messages")
    del state["pendingInterrupts"]
    state["values"] = values_of(state["values"], messages)
    return state


def matches(state: dict, metadata: dict | None) -> bool:
    """A history filter: the state's metadata holds ``metadata``."""
    return not metadata or metadata_holds(state["metadata"], metadata)


async def history(
    store,
    thread,
    limit: int,
    wanted: str | None = None,
    langgraph: bool = False,
    before: str | None = None,
    metadata: dict | None = None,
) -> list[dict]:
    """The thread's states, newest first: the current one, then the branches it
    left (read whole, so at most ``limit`` of them); ``wanted``: only the one
    with that checkpoint id; ``before``: only those listed after that one (none
    when the thread has no such checkpoint, as nothing is known to be older);
    ``metadata``: only those whose metadata holds it; ``langgraph``: in
    LangGraph's shape (``/langgraph``)."""
    states = []
    current = checkpoint(thread)["checkpoint_id"]
    if before is None and wanted in (None, current):
        state = (langgraph_state if langgraph else thread_state)(thread)
        if matches(state, metadata):
            states.append(state)
    passed = before in (None, current)
    listed = await store.branches(thread.thread_id) if hasattr(store, "branches") else None
    for branch in reversed(listed or []):
        if len(states) >= limit:
            break
        named = branch_checkpoint(thread.thread_id, branch.number)["checkpoint_id"]
        if not passed:
            passed = named == before
            continue
        if wanted is not None and named != wanted:
            continue
        whole = await store.branch(thread.thread_id, branch.number)
        if whole is not None:
            state = branch_state(thread.thread_id, whole)
            state = as_langgraph(state) if langgraph else state
            if matches(state, metadata):
                states.append(state)
    return states[:limit]
