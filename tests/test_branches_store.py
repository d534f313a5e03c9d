"""Branches in every store (memory, SQLite, PostgreSQL: ``make_store``): a cut keeps
the current branch aside, whole, and never deletes a message (store/branches.py)."""

from __future__ import annotations

import pytest
from agui_bridge.errors import LeaseLost
from agui_bridge.store.branches import Cut


def msg(i: str, role: str = "user", text: str | None = None) -> dict:
    return {"id": i, "role": role, "content": text if text is not None else i}


FIRST = [msg("u1"), msg("a1", "assistant"), msg("u2"), msg("a2", "assistant")]


async def test_a_cut_keeps_the_old_branch_and_appends_after_the_kept_prefix(make_store):
    store = make_store()
    await store.save("t", "agent", FIRST, {"v": 1}, [])
    assert (await store.load("t")).messages == FIRST  # cached before the cut
    await store.save("t", "agent", [msg("u3")], {"v": 2}, [], cut=Cut("a1", "r2"))
    thread = await store.load("t")  # the cached tail is stale: read again
    assert thread.messages == [msg("u1"), msg("a1", "assistant"), msg("u3")]
    assert set(thread.ids) == {"u1", "a1", "u3"} and thread.state == {"v": 2}
    listed = await store.branches("t")
    assert [(b.number, b.after, b.run_id, b.count) for b in listed] == [(1, "a1", "r2", 4)]
    assert listed[0].messages is None  # a listing carries no messages
    left = await store.branch("t", 1)
    assert left.messages == FIRST and left.state == {"v": 1}
    assert await store.branch("t", 2) is None
    # The run's answer is appended to the new branch.
    await store.save("t", "agent", [msg("a3", "assistant")], {"v": 2}, [])
    assert [m["id"] for m in (await store.load("t")).messages] == ["u1", "a1", "u3", "a3"]
    await store.close()
    if make_store.kind != "memory":
        reopened = make_store()  # another process: reads it all
        assert [m["id"] for m in (await reopened.load("t")).messages] == ["u1", "a1", "u3", "a3"]
        assert [b.number for b in await reopened.branches("t")] == [1]
        await reopened.close()


async def test_an_edit_under_the_same_id_from_the_start(make_store):
    """A cut from the start (after None) lets the edited first message keep its id;
    a second cut is branch 2, and both old branches stay readable."""
    store = make_store()
    await store.save("t", "agent", FIRST[:2], {}, [])
    await store.save("t", "agent", [msg("u1", text="edited")], {}, [], cut=Cut(None, "r2"))
    assert (await store.load("t")).messages == [msg("u1", text="edited")]
    await store.save("t", "agent", [msg("a9", "assistant")], {}, [])
    await store.save("t", "agent", [msg("u1", text="again")], {}, [], cut=Cut(None, "r3"))
    assert (await store.load("t")).messages == [msg("u1", text="again")]
    assert [(b.number, b.after, b.count) for b in await store.branches("t")] == [
        (1, None, 2),
        (2, None, 2),
    ]
    assert (await store.branch("t", 1)).messages == FIRST[:2]
    assert (await store.branch("t", 2)).messages == [
        msg("u1", text="edited"),
        msg("a9", "assistant"),
    ]
    await store.close()


async def test_a_cut_with_nothing_after_it_or_an_unknown_message_keeps_nothing_aside(make_store):
    store = make_store()
    await store.save("t", "agent", FIRST, {}, [])
    await store.save("t", "agent", [], {}, [], cut=Cut("a2", "r2"))
    await store.save("t", "agent", [], {}, [], cut=Cut("nope", "r3"))
    assert (await store.load("t")).messages == FIRST
    assert await store.branches("t") == []
    assert await store.branches("missing") is None
    await store.close()


async def test_a_fenced_save_that_lost_its_lease_cuts_nothing(make_store):
    store = make_store()
    lease = await store.claim("t", 30.0)
    await store.save("t", "agent", FIRST, {}, [], lease=lease)
    await store.release(lease)
    newer = await store.claim("t", 30.0)
    with pytest.raises(LeaseLost):
        await store.save("t", "agent", [msg("u3")], {}, [], lease=lease, cut=Cut("a1", "r2"))
    assert (await store.load("t")).messages == FIRST and await store.branches("t") == []
    await store.release(newer)
    await store.close()


async def test_a_save_that_fails_leaves_the_thread_as_it_was(make_store):
    """A state the store cannot keep fails the save whole: no cut, no message."""
    import threading

    store = make_store()
    await store.save("t", "agent", FIRST, {"n": 1}, [])
    with pytest.raises(TypeError):
        await store.save("t", "agent", [msg("u3")], {"lock": threading.Lock()}, [], cut=Cut("a1"))
    thread = await store.load("t")
    assert thread.messages == FIRST and thread.state == {"n": 1}
    assert await store.branches("t") == []
    await store.close()


async def test_deleting_a_thread_deletes_its_branches(make_store):
    store = make_store()
    await store.save("t", "agent", FIRST, {}, [])
    await store.save("t", "agent", [msg("u3")], {}, [], cut=Cut("u1", "r2"))
    assert await store.delete("t")
    await store.save("t", "agent", [msg("x")], {}, [])
    assert await store.branches("t") == [] and await store.branch("t", 1) is None
    await store.close()


async def test_a_branch_with_an_attachment_reads_back_whole(make_store):
    """Inline data lives in the blob table (blobs.py): a branch's rows refer to it,
    and a branch read gives the message back as sent."""
    import base64

    value = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()
    image = {"type": "image", "source": {"type": "data", "value": value, "mimeType": "image/png"}}
    asked = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "see"}, image]}
    store = make_store()
    await store.save("t", "agent", [asked, msg("a1", "assistant")], {}, [])
    await store.save("t", "agent", [msg("a2", "assistant")], {}, [], cut=Cut("u1", "r2"))
    await store.close()
    reopened = make_store() if make_store.kind != "memory" else store
    assert (await reopened.branch("t", 1)).messages == [asked, msg("a1", "assistant")]
    assert (await reopened.load("t")).messages == [asked, msg("a2", "assistant")]
    await reopened.close()


async def test_a_runs_head_is_the_branchs_last_message_after_its_save(make_store):
    """What a later parentRunId names (turns.named_point): kept per run, moved by
    each of its saves, gone with the thread."""
    store = make_store()
    await store.save("t", "agent", FIRST[:1], {}, [], run_id="r1")
    assert await store.head("t", "r1") == "u1"
    await store.save("t", "agent", FIRST[1:2], {}, [], run_id="r1")
    await store.save("t", "agent", FIRST[2:], {}, [], run_id="r2")
    assert (await store.head("t", "r1"), await store.head("t", "r2")) == ("a1", "a2")
    assert await store.head("t", "r9") is None and await store.head("nope", "r1") is None
    await store.close()
    if make_store.kind != "memory":
        reopened = make_store()
        assert await reopened.head("t", "r1") == "a1"
        assert await reopened.delete("t") and await reopened.head("t", "r1") is None
        await reopened.close()
