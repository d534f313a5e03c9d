"""The Agent Protocol across two gateway nodes sharing run logs (Redis) and threads
(PostgreSQL): a run started through one node is busy, joined, streamed and
cancelled through the other."""

from __future__ import annotations

import uuid

from langgraph_sdk import get_client


async def test_a_run_on_one_node_seen_joined_and_cancelled_on_the_other(nodes):
    a = get_client(url=nodes[0], api_key=None)
    b = get_client(url=nodes[1], api_key=None)
    try:
        thread_id = (await a.threads.create(thread_id=str(uuid.uuid4())))["thread_id"]
        run = await a.runs.create(
            thread_id, "slow", input={"messages": ["count 30"]}, stream_mode="messages-tuple"
        )
        assert (await b.threads.get(thread_id))["status"] == "busy"
        assert (await b.runs.get(thread_id, run["run_id"]))["status"] == "running"
        ticks = []
        # The run's own modes are known to the node that started it: ask for one.
        mode = "messages-tuple"
        async for part in b.runs.join_stream(thread_id, run["run_id"], stream_mode=mode):
            ticks.append(part.data[0]["content"])
            last = part.id
            if len(ticks) == 3:
                break
        async for part in b.runs.join_stream(
            thread_id, run["run_id"], stream_mode=mode, last_event_id=last
        ):
            ticks.append(part.data[0]["content"])
        assert ticks == [f"tick {n} " for n in range(30)]
        values = await b.runs.join(thread_id, run["run_id"])
        assert values["messages"][-1]["content"].strip().endswith("tick 29")
        assert (await b.threads.get(thread_id))["status"] == "idle"

        run = await a.runs.create(thread_id, "slow", input={"messages": ["count 60"]})
        await b.runs.cancel(thread_id, run["run_id"])
        assert (await b.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
        partial = (await a.threads.get(thread_id))["values"]["messages"][-1]["content"]
        assert "tick 59" not in partial
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_state_update_read_after_the_run_is_its_update_on_every_node(nodes):
    """A run read after its save, on the node that did not run it, compared its
    state snapshots with the thread's saved state (already the run's): its
    ``updates`` part vanished, and the thread stream's ``since`` positions moved
    under a client that had read the run live. The run's starting state is the
    one its log keeps."""
    a = get_client(url=nodes[0], api_key=None)
    b = get_client(url=nodes[1], api_key=None)
    try:
        thread_id = (await a.threads.create(thread_id=str(uuid.uuid4())))["thread_id"]
        run = await a.runs.create(thread_id, "signals", input={"messages": ["go"]})
        await a.runs.join(thread_id, run["run_id"])
        for client in (b, a):
            parts = [
                part.data
                async for part in client.runs.join_stream(
                    thread_id, run["run_id"], stream_mode="updates"
                )
                if part.event == "updates"
            ]
            assert any("half" in str(data) for data in parts), parts
    finally:
        await a.aclose()
        await b.aclose()
