"""Message shapes at the door (issue 24 items 1 and 12): AG-UI 1.0's message
schemas on every route that writes messages, ids a store and a URL can hold,
and a thread that holds a malformed row (stored before the check) still
answers every route."""

from __future__ import annotations

import httpx
import pytest
from agui_bridge import RunInputError
from agui_bridge.shapes import MAX_ID_CHARS, check_message, usable

from tests.ingress_apps import make_app, parse_sse, run_body
from tests.servers import serve

CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
IMAGE = {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}

# (message, valid in AG-UI 1.0): what ag_ui.core's models and this module agree on.
CORPUS = [
    ({"id": "u", "role": "user", "content": "hi"}, True),
    ({"id": "u", "role": "user", "content": [{"type": "text", "text": "a"}, IMAGE]}, True),
    ({"id": "u", "role": "user", "content": [1, 2]}, False),
    ({"id": "u", "role": "user", "content": [{"type": "binary", "mimeType": "x"}]}, False),
    ({"id": "u", "role": "user", "content": [{"type": "text"}]}, False),
    (
        {"id": "u", "role": "user", "content": [{"type": "image", "source": {"type": "data"}}]},
        False,
    ),
    ({"id": "u", "role": "user", "content": {"type": "text", "text": "x"}}, False),
    ({"id": "u", "role": "user"}, False),
    ({"id": "u", "role": "user", "content": "x", "name": 5}, False),
    ({"id": "u", "role": "user", "content": "x", "metadata": [1]}, False),
    ({"id": "a", "role": "assistant"}, True),
    ({"id": "a", "role": "assistant", "content": "x", "toolCalls": [CALL]}, True),
    ({"id": "a", "role": "assistant", "content": 5}, False),
    ({"id": "a", "role": "assistant", "content": [{"type": "text", "text": "x"}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": [{**CALL, "function": []}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": [{**CALL, "function": "f"}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": [{**CALL, "function": 3}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": [{**CALL, "function": {"name": "f"}}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": [{**CALL, "type": "other"}]}, False),
    ({"id": "a", "role": "assistant", "toolCalls": {"id": "c"}}, False),
    ({"id": "t", "role": "tool", "content": "4", "toolCallId": "c1"}, True),
    ({"id": "t", "role": "tool", "content": [IMAGE], "toolCallId": "c1", "error": "e"}, True),
    ({"id": "t", "role": "tool", "content": "4"}, False),
    ({"id": "t", "role": "tool", "content": 4, "toolCallId": "c1"}, False),
    ({"id": "s", "role": "system", "content": "be brief"}, True),
    ({"id": "s", "role": "system", "content": ["x"]}, False),
    ({"id": "d", "role": "developer", "content": "x"}, True),
    ({"id": "d", "role": "developer"}, False),
    ({"id": "r", "role": "reasoning", "content": "thinking"}, True),
    ({"id": "r", "role": "reasoning", "content": None}, False),
    ({"id": "x", "role": "activity", "activityType": "plan", "content": {"steps": []}}, True),
    ({"id": "x", "role": "activity", "activityType": "plan", "content": [1]}, False),
    ({"id": "x", "role": "activity", "content": {}}, False),
    ({"id": "x", "role": "function", "content": "x"}, False),
    ({"id": 5, "role": "user", "content": "x"}, False),
]


@pytest.mark.parametrize(("message", "valid"), CORPUS)
def test_the_shapes_are_ag_ui_1_0s(message, valid):
    """The same verdict as ag_ui.core 1.0.0's Message (the Python SDK's models)."""
    from ag_ui.core import Message
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(Message).validate_python(message)
        sdk = True
    except ValidationError:
        sdk = False
    assert sdk == valid, "the corpus disagrees with ag_ui.core"
    if valid:
        check_message(message, "m")
        assert usable(message)
    else:
        with pytest.raises(RunInputError):
            check_message(message, "m")
        assert not usable(message)


def test_an_empty_user_content_list_is_refused():
    """Stricter than 1.0 on purpose: a run refuses it as its newest message."""
    with pytest.raises(RunInputError, match="non-empty"):
        check_message({"id": "u", "role": "user", "content": []}, "m")


def client_for(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def refused(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()["error"]


BAD_FUNCTIONS = [[], ["add", "{}"], "add", 3, None, {"name": "add"}, {"arguments": "{}"}]


@pytest.mark.parametrize("function", BAD_FUNCTIONS)
async def test_a_tool_call_without_a_function_object_is_a_400(function):
    app = make_app(store="memory://")
    message = {"id": "a1", "role": "assistant", "toolCalls": [{**CALL, "function": function}]}
    user = {"id": "u1", "role": "user", "content": "hi"}
    async with client_for(app) as http:
        error = refused(await http.post("/ag-ui/run", json=run_body("p", [message, user])), 400)
        assert "function" in error["message"]
        assert await app.store.load("p") is None  # nothing stored
    await app.aclose()


@pytest.mark.parametrize(
    "body",
    [
        {"threadId": "t" * (MAX_ID_CHARS + 1)},
        {"threadId": "t\x00"},
        {"runId": "r" * (MAX_ID_CHARS + 1)},
        {"runId": "r\x00"},
        {"messages": [{"id": "m" * (MAX_ID_CHARS + 1), "role": "user", "content": "x"}]},
        {"messages": [{"id": "m\x00", "role": "user", "content": "x"}]},
    ],
    ids=["long-thread", "nul-thread", "long-run", "nul-run", "long-message", "nul-message"],
)
async def test_ids_a_url_or_a_store_cannot_hold_are_a_400(body):
    app = make_app(store="memory://")
    async with client_for(app) as http:
        response = await http.post("/ag-ui/run", json=run_body("ok", "hi") | body)
        refused(response, 400)
    await app.aclose()


USER = [{"id": "u1", "role": "user", "content": "hi"}]


async def test_an_id_at_the_cap_is_served_on_its_own_routes():
    app = make_app(store="memory://")
    thread_id = "t" * MAX_ID_CHARS
    async with client_for(app) as http:
        response = await http.post("/ag-ui/run", json=run_body(thread_id, USER, "r" * MAX_ID_CHARS))
        assert response.status_code == 200
        # The ids the run makes extend the runId past the cap: still stored.
        assert parse_sse(response.text)[0][-1]["type"] == "RUN_FINISHED", response.text[-300:]
        assert (await http.get(f"/threads/{thread_id}/state")).status_code == 200
        assert (await http.get(f"/threads/{thread_id}")).status_code == 200
    await app.aclose()


@pytest.mark.parametrize(
    "message",
    [
        {"role": "human", "content": [1, 2]},
        {"role": "human", "content": []},
        {"role": "human", "content": [{"type": "text"}]},
        {"role": "ai", "content": [{"type": "image_url", "image_url": "x"}]},
        {"role": "human", "content": "x", "id": "m" * (MAX_ID_CHARS + 1)},
        {"role": "human", "content": "x", "id": "m\x00"},
        {"role": "tool", "content": "x", "tool_call_id": "c\x00"},
    ],
)
async def test_the_state_update_checks_messages_as_a_run_does(message):
    """POST /threads/{id}/state once stored what a run refuses."""
    app = make_app(store="memory://")
    async with client_for(app) as http:
        assert (await http.post("/threads", json={"thread_id": "anon-s"})).status_code == 200
        update = {"values": {"messages": [message]}}
        refused(await http.post("/threads/anon-s/state", json=update), 422)
        run = {"assistant_id": "echo", "input": {"messages": [message]}}
        refused(await http.post("/threads/anon-s/runs/wait", json=run), 422)
        assert (await app.store.load("anon-s")).messages == []
    await app.aclose()


async def test_agent_protocol_thread_ids_are_capped():
    app = make_app(store="memory://")
    async with client_for(app) as http:
        for thread_id in ("anon-" + "t" * MAX_ID_CHARS, "anon-t\x00"):
            refused(await http.post("/threads", json={"thread_id": thread_id}), 422)
            run = {"assistant_id": "echo", "input": "hi", "if_not_exists": "create"}
            path = "/threads/" + thread_id.replace("\x00", "%00") + "/runs/wait"
            refused(await http.post(path, json=run), 422)
    await app.aclose()


# -- a malformed row stored before the check: every reader stays whole ---------

POISON = [
    {"id": "bad-1", "role": "assistant", "toolCalls": [{**CALL, "function": ["x"]}]},
    {"id": "bad-2", "role": "assistant", "toolCalls": ["c1"]},
    {"id": "bad-3", "role": "user", "content": [1, 2]},
    {"id": "bad-4", "role": "tool", "content": "x", "toolCallId": 5},
    {"id": "bad-5", "role": 7},
]


async def test_a_poisoned_thread_answers_every_route(make_store):
    store = make_store()
    good = {"id": "u0", "role": "user", "content": "before"}
    # Written straight to the store, as a run did before the door checked shapes.
    await store.save("poisoned", "echo", [good, *POISON], {"k": 1}, [])
    await store.create("anon-other", {"team": "x"})
    app = make_app(store=store)
    async with client_for(app) as http:
        thread = await http.get("/threads/poisoned")
        assert thread.status_code == 200, thread.text
        shown = thread.json()["values"]["messages"]
        assert [m["id"] for m in shown] == ["u0"]
        state = await http.get("/threads/poisoned/state")
        assert state.status_code == 200 and [m["id"] for m in state.json()["messages"]] == ["u0"]
        found = await http.post("/threads/search", json={"limit": 10})
        assert found.status_code == 200, found.text
        assert {t["thread_id"] for t in found.json()} == {"poisoned", "anon-other"}
        run = {"assistant_id": "echo", "input": {"messages": [{"role": "human", "content": "x"}]}}
        wait = await http.post("/threads/poisoned/runs/wait", json=run)
        assert wait.status_code == 200, wait.text
        assert [m["content"] for m in wait.json()["messages"]] == [
            "before",
            "x",
            "turn 2: you said x",
        ]
        streamed = await http.post("/threads/poisoned/runs/stream", json=run)
        assert streamed.status_code == 200
        assert "event: values" in streamed.text and "event: error" not in streamed.text
        response = await http.post("/ag-ui/run", json=run_body("poisoned", "again"))
        assert response.status_code == 200
        events, _ = parse_sse(response.text)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        # A message resent under a left-out row's id is not stored twice, nor lost quietly.
        resent = run_body("poisoned", [{"id": "bad-3", "role": "user", "content": "x"}])
        refused(await http.post("/ag-ui/run", json=resent), 409)
    await app.aclose()
    await store.close()


async def test_a_row_that_is_not_json_is_left_out(tmp_path):
    from agui_bridge.store import SqliteStore

    path = str(tmp_path / "t.sqlite")
    store = SqliteStore(path)
    await store.save("t", "echo", [{"id": "u0", "role": "user", "content": "x"}], {}, [])
    store._write.execute(
        "INSERT INTO messages (thread_id, seq, message_id, body) VALUES ('t', 9, 'junk', ?)",
        (b"{not json",),
    )
    await store.close()
    store = SqliteStore(path)
    thread = await store.load("t")
    assert [m["id"] for m in thread.messages] == ["u0"] and "junk" in thread.ids
    await store.close()


@pytest.mark.parametrize("interface", ["rsgi", "asgi"])
def test_ids_at_the_cap_fit_their_urls_under_granian(interface):
    """A 65,536-character threadId was accepted and then its own URLs answered
    414: at the cap, a thread's and a run's URLs are served by the server."""
    thread_id, run_id = "t" * MAX_ID_CHARS, "r" * MAX_ID_CHARS
    with (
        serve("tests.ingress_apps:app", interface=interface) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        run = http.post("/ag-ui/run", json=run_body(thread_id, USER, run_id))
        assert run.status_code == 200, run.text
        events = http.get(f"/threads/{thread_id}/runs/{run_id}/events")
        assert events.status_code == 200 and "RUN_FINISHED" in events.text
        assert http.get(f"/threads/{thread_id}/state").status_code == 200
        over = run_body("t" * (MAX_ID_CHARS + 1), USER)
        assert http.post("/ag-ui/run", json=over).status_code == 400
