"""The Agent Protocol's objects for what the bridge keeps: ThreadState, Assistant."""

from __future__ import annotations

import time
import uuid

from ..interrupts import agui_interrupts, on_last_assistant
from .runs import iso
from .stream import interrupts_of, values_of


def checkpoint(thread) -> dict:
    # No checkpoints are kept: the thread's revision names its one state.
    return named_checkpoint(thread.thread_id, f"{thread.updated_at}:{len(thread.messages)}")


def named_checkpoint(thread_id: str, name: str) -> dict:
    """A checkpoint object whose id is derived from ``name`` within the thread."""
    seed = f"{thread_id}:{name}"
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": str(uuid.uuid5(uuid.NAMESPACE_URL, seed)),
        "checkpoint_map": None,
    }


def thread_state(thread) -> dict:
    """``GET /threads/{id}/state``: AG-UI's ``values`` (the state STATE_SNAPSHOT carries)
    and ``messages`` (AG-UI messages), with what the LangGraph SDK expects of a
    ThreadState."""
    interrupts = interrupts_of(thread.interrupts)
    pending = agui_interrupts(thread.interrupts)
    node = thread.agent_id or "agent"
    tasks = []
    if interrupts:
        task = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, interrupts[0]["id"] or node))}
        task.update(name=node, error=None, interrupts=interrupts, checkpoint=None, state=None)
        task["result"] = None
        tasks.append(task)
    return {
        "values": thread.state,
        # Where AG-UI clients restore pending interrupts (agui_bridge.interrupts).
        "messages": on_last_assistant(thread.messages, pending),
        "next": [node] if interrupts else [],
        "checkpoint": checkpoint(thread),
        "metadata": {"source": "loop", "step": len(thread.messages), "writes": None},
        "created_at": iso(thread.updated_at),
        "parent_checkpoint": None,
        "tasks": tasks,
        "interrupts": interrupts,
        "pendingInterrupts": pending,
    }


def langgraph_state(thread) -> dict:
    """The ThreadState as LangGraph's server gives it: the thread's messages in
    ``values`` (LangGraph's shape), not beside them as AG-UI messages."""
    state = thread_state(thread)
    del state["messages"], state["pendingInterrupts"]
    state["values"] = values_of(thread.state, thread.messages)
    return state


def assistant(agent) -> dict:
    now = iso(time.time())
    return {
        "assistant_id": agent.agent_id,
        "graph_id": agent.agent_id,
        "config": {},
        "context": {},
        "created_at": now,
        "updated_at": now,
        "metadata": {},
        "version": 1,
        "name": agent.agent_id,
        "description": None,
    }
