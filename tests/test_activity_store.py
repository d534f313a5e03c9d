"""Activity messages (AG-UI 1.0 ``activity``, issue 20) in every store (memory,
SQLite, PostgreSQL: ``make_store``): saved and read back whole, kept by the
runs that append after them, and by the branch a cut leaves."""

from __future__ import annotations

from agui_bridge.store.branches import Cut


def msg(i: str, role: str = "user") -> dict:
    return {"id": i, "role": role, "content": i}


def activity(i: str, content: dict) -> dict:
    return {"id": i, "role": "activity", "activityType": "plan", "content": content}


PLAN = activity("p0", {"steps": ["read", {"deep": [1, 2.5, None, True]}], "é": "ü 🚀", "empty": {}})
FIRST = [msg("u1"), PLAN, msg("a1", "assistant"), activity("p9", {})]


async def test_activity_messages_round_trip_and_survive_appends_and_cuts(make_store):
    store = make_store()
    await store.save("t", "agent", FIRST, {}, [])
    thread = await store.load("t")
    assert thread.messages == FIRST
    assert {"p0", "p9"} <= set(thread.ids)  # held: a later run's activity skips them
    # A run that appends keeps them where they are.
    await store.save("t", "agent", [msg("u2"), activity("r2:a1", {"n": 1})], {}, [])
    after = [*FIRST, msg("u2"), activity("r2:a1", {"n": 1})]
    assert (await store.load("t")).messages == after
    # An edit after a1 cuts after a1's activity: the old branch keeps them all.
    await store.save("t", "agent", [msg("u3")], {}, [], cut=Cut("p9", "r3"))
    assert (await store.load("t")).messages == [*FIRST, msg("u3")]
    assert (await store.branch("t", 1)).messages == after
    await store.close()
    if make_store.kind != "memory":
        reopened = make_store()  # another process: reads it all
        assert (await reopened.load("t")).messages == [*FIRST, msg("u3")]
        assert (await reopened.branch("t", 1)).messages == after
        await reopened.close()
