"""A run's terminal event reaches its readers before its save completes
(issue 24 item 14): with 4 MB runs saving, a quick run's RUN_FINISHED came
only once its own save, queued behind theirs, was done (16.5 s at 200 runs).

The store's saves wait on marks (``tests/gated_apps.py``): the large runs'
answers are held at the store (one in the large lane, the others queued
behind it) and so is the quick run's own; its readers get RUN_FINISHED
anyway. The response ends once the save is done, and the thread then holds
the answer: the stream never tells another story than the thread.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import orjson
from agui_bridge import crumbs as c
from agui_bridge.app import App
from agui_bridge.store.memory import MemoryStore

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve
from tests.test_runs_redis import start_run, wait_for

APP = "tests.gated_apps:app"
LARGE = 3


def test_a_quick_runs_run_finished_reaches_its_reader_while_saves_are_held(tmp_path):
    env = {"AGUI_TEST_MARKS": str(tmp_path)}
    stamp = time.monotonic_ns()
    with serve(APP, env=env) as url:
        large = []
        for i in range(LARGE):
            tid, rid = f"gated-large-{i}-{stamp}", f"run-large-{i}-{stamp}"
            large.append((tid, start_run(url, tid, rid, "big 4096")))  # 4 MiB each
            wait_for(tmp_path / f"saving-{tid}-1")  # the user's turn
            (tmp_path / f"save-{tid}-1").write_text("1")
        # One large answer is held at the store; the others wait in its lane.
        deadline = time.monotonic() + 60
        while not (first := [t for t, _ in large if (tmp_path / f"saving-{t}-2").exists()]):
            assert time.monotonic() < deadline, "no large answer reached the store"
            time.sleep(0.05)
        tid = f"gated-quick-{stamp}"
        quick = start_run(url, tid, f"run-quick-{stamp}", "hi")
        wait_for(tmp_path / f"saving-{tid}-1")
        (tmp_path / f"save-{tid}-1").write_text("1")
        wait_for(tmp_path / f"saving-{tid}-2")  # its own answer is held too
        deadline = time.monotonic() + 30  # it takes milliseconds; the margin is for load
        while b'"RUN_FINISHED"' not in quick.body:
            assert time.monotonic() < deadline, quick.body[-300:]
            assert quick.is_alive(), "the response ended before its save"
            time.sleep(0.01)
        held = [t for t, _ in large if not (tmp_path / f"save-{t}-2").exists()]
        assert len(held) == LARGE and first[0] in held  # no large save was let through
        assert quick.is_alive()  # the log ends once the save is done
        state = httpx.get(f"{url}/threads/{tid}/state").json()
        assert [m["role"] for m in state["messages"]] == ["user"]  # the answer is being saved
        (tmp_path / f"save-{tid}-2").write_text("1")
        events, _ = parse_sse(quick.result().decode())
        assert [e["type"] for e in events].count("RUN_FINISHED") == 1
        assert events[-1]["type"] == "RUN_FINISHED"
        state = httpx.get(f"{url}/threads/{tid}/state").json()
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
        for t, _ in large:
            (tmp_path / f"save-{t}-2").write_text("1")  # their answers
        for t, reader in large:
            assert parse_sse(reader.result().decode())[0][-1]["type"] == "RUN_FINISHED"
            stored = httpx.get(f"{url}/threads/{t}/state").json()["messages"]
            assert [m["role"] for m in stored] == ["user", "assistant"]


class HeldStore(MemoryStore):
    """Holds every save that carries an assistant message (a run's answer)."""

    def __init__(self):
        super().__init__()
        self.let_go = asyncio.Event()  # not `release`: the store's lease method
        self.held = 0

    async def save(self, thread_id, agent_id, new_messages, *args, **kwargs):
        if any(m.get("role") == "assistant" for m in new_messages):
            self.held += 1
            await self.let_go.wait()
        return await super().save(thread_id, agent_id, new_messages, *args, **kwargs)


async def test_in_process_the_terminal_event_is_sent_while_the_save_is_held():
    """The same in process (the unit tier's guard): the response carries
    RUN_FINISHED while the run's save is held, and ends once it is done."""
    store = HeldStore()
    app = App(store=store)

    @app.agent("echo")
    async def echo(ctx):
        yield c.text_delta("hi")

    body = orjson.dumps(run_body("held", "go"))
    sent: list[bytes] = []
    finished = asyncio.Event()

    async def receive():
        if not sent:
            sent.append(b"")
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays

    async def send(message):
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))
            if b'"RUN_FINISHED"' in b"".join(sent):
                finished.set()

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/agui/echo",
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
        "client": ("127.0.0.1", 1),
    }
    response = asyncio.create_task(app(scope, receive, send))
    async with asyncio.timeout(30):
        await finished.wait()
    assert store.held == 1 and not response.done()  # the save is held: the log goes on
    assert [m["role"] for m in (await store.load("held")).messages] == ["user"]
    store.let_go.set()
    async with asyncio.timeout(30):
        await response
    events, _ = parse_sse(b"".join(sent).decode())
    assert events[-1]["type"] == "RUN_FINISHED"
    assert [m["role"] for m in (await store.load("held")).messages] == ["user", "assistant"]
    await app.aclose()
