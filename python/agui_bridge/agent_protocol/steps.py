"""The steps of a thread's current branch as LangGraph checkpoints (``/langgraph``).

LangGraph checkpoints a thread at every step, and its UI clients find a
message's place by them: ``@ag-ui/langgraph`` regenerates the answer to a
user message by reading the history for the checkpoint just before that
message, forking there (``updateState`` with its ``checkpoint_id``) and
running from the fork (a run with ``checkpoint_id``). The bridge keeps the
thread's messages, not its steps; a step here is a prefix of the current
branch: step ``n`` holds its first ``n`` messages (the agent's state as it is
now: earlier states are not kept) and names its parent, step ``n - 1``.

- History (``/langgraph/threads/{id}/history``): the current state, then the
  steps newest first, then the branches the thread left
  (``agent_protocol/branches.py``); ``checkpoint`` lists from that one back.
- A state update at a step is LangGraph's fork there: its messages and values
  are written on a new branch from that step, the old one kept
  (``turns.state_update``); with nothing to write it answers the step, which a
  run then names.
- A run from a step (``checkpoint_id``) runs on the step's messages followed
  by its input's: the thread branches there as a regenerate does over AG-UI
  (``turns.branch_point``), the old branch kept.

A step's id names where it ends (its last message): it stays the same while
the current branch holds that prefix.
"""

from __future__ import annotations

from .branches import history as branch_history
from .branches import matches
from .objects import checkpoint, langgraph_state, named_checkpoint
from .runs import iso
from .stream import values_of


def step_checkpoint(thread, n: int) -> dict:
    # Named by where it ends (the id of its last message): the same step for as
    # long as the current branch holds it, whatever was saved after it.
    last = thread.messages[n - 1].get("id") if n else ""
    return named_checkpoint(thread.thread_id, f"step:{n}:{last}")


def step_of(thread, checkpoint_id: str) -> int | None:
    """The step a checkpoint id names on the thread as it is now (None: no step)."""
    for n in range(len(thread.messages)):
        if step_checkpoint(thread, n)["checkpoint_id"] == checkpoint_id:
            return n
    return None


def step_state(thread, n: int) -> dict:
    """Step ``n``: the current branch's first ``n`` messages, the agent next."""
    return {
        "values": values_of(thread.state, thread.messages[:n]),
        "next": [thread.agent_id or "agent"],
        "checkpoint": step_checkpoint(thread, n),
        "metadata": {"source": "loop", "step": n, "writes": None},
        "created_at": iso(thread.updated_at),
        "parent_checkpoint": step_checkpoint(thread, n - 1) if n else None,
        "tasks": [],
        "interrupts": [],
    }


def current_state(thread) -> dict:
    """``GET /langgraph/threads/{id}/state``: the ThreadState, its parent the last step."""
    state = langgraph_state(thread)
    count = len(thread.messages)
    state["parent_checkpoint"] = step_checkpoint(thread, count - 1) if count else None
    return state


async def history(
    store,
    thread,
    limit: int,
    wanted: str | None = None,
    before: str | None = None,
    metadata: dict | None = None,
) -> list[dict]:
    """The current state, the steps (newest first), then the branches; ``wanted``:
    from that checkpoint back (a branch: that one only); ``before`` and
    ``metadata`` as ``branches.history`` takes them."""
    count = len(thread.messages)
    ids = [checkpoint(thread)["checkpoint_id"]]
    ids += [step_checkpoint(thread, n)["checkpoint_id"] for n in range(count - 1, -1, -1)]
    if any(named is not None and named not in ids for named in (wanted, before)):
        # A branch (or nothing the thread has): listed after every step.
        wanted = None if wanted in ids else wanted
        before = ids[0] if before in ids else before
        return await branch_history(store, thread, limit, wanted, True, before, metadata)
    start = 0
    if wanted is not None:
        start = ids.index(wanted)
    if before is not None:
        start = max(start, ids.index(before) + 1)
    states = []
    for index in range(start, len(ids)):
        if len(states) >= limit:
            break
        state = current_state(thread) if index == 0 else step_state(thread, count - index)
        if matches(state, metadata):
            states.append(state)
    if len(states) < limit:
        # The branches: all that the current state is listed before.
        states += await branch_history(
            store, thread, limit - len(states), None, True, ids[0], metadata
        )
    return states[:limit]
