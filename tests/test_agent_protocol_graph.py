"""The Agent Protocol surface LangGraph's UI clients read beyond threads and runs,
driven by the real LangGraph SDK (``langgraph-sdk``): an assistant's graph,
schemas and subgraphs, the ``events`` stream mode (LangChain ``astream_events``
v2), ``stream_subgraphs``, a run with both ``input`` and ``command``, and the
surface under ``/langgraph`` whose ThreadState has the messages in ``values``.

``tests/test_langgraph_clients.py`` drives ``@ag-ui/langgraph`` and CopilotKit's
runtime over the same routes.
"""

from __future__ import annotations

import itertools
import uuid

import httpx
import orjson
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.servers import serve

ASK = {"messages": [{"role": "user", "content": "what is 6 * 7?"}]}


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.langgraph_clients_apps:app", env={"AGUI_DEMO_DELAY": "0"}) as url:
        yield url


@pytest.fixture(params=["", "/langgraph"], ids=["root", "langgraph"])
async def client(base_url, request):
    """Either surface (the root, ``/langgraph``): the same routes."""
    client = get_client(url=base_url + request.param, api_key=None)
    yield client
    await client.aclose()


@pytest.fixture
async def root(base_url):
    client = get_client(url=base_url, api_key=None)
    yield client
    await client.aclose()


async def _parts(client, agent, stream_mode, **kwargs) -> tuple[str, list]:
    thread_id = (await client.threads.create())["thread_id"]
    parts = [
        (part.event, part.data)
        async for part in client.runs.stream(thread_id, agent, stream_mode=stream_mode, **kwargs)
    ]
    return thread_id, parts


async def test_a_plain_agent_is_a_one_node_graph_with_permissive_schemas(client):
    graph = await client.assistants.get_graph("demo")
    assert [n["id"] for n in graph["nodes"]] == ["__start__", "demo", "__end__"]
    assert graph["edges"] == [
        {"source": "__start__", "target": "demo"},
        {"source": "demo", "target": "__end__"},
    ]
    schemas = await client.assistants.get_schemas("demo")
    assert schemas["graph_id"] == "demo"
    for key in ("input_schema", "output_schema", "state_schema", "config_schema"):
        # Any object: a client that keeps only a schema's properties keeps all.
        assert schemas[key] == {"type": "object", "additionalProperties": True}, key
        assert "properties" not in schemas[key]
    assert await client.assistants.get_subgraphs("demo") == {}
    assert await client.assistants.get_subgraphs("demo", namespace="x", recurse=True) == {}


async def test_a_langgraph_agent_shows_its_own_graph_and_schemas(client):
    graph = await client.assistants.get_graph("graph")
    ids = [n["id"] for n in graph["nodes"]]
    assert ids == ["__start__", "agent", "tools", "review", "__end__"]
    assert {"source": "tools", "target": "agent"} in graph["edges"]
    assert all("id" not in (n.get("data") or {}) for n in graph["nodes"])  # no class paths
    schemas = await client.assistants.get_schemas("graph")
    assert schemas["graph_id"] == "graph"
    assert set(schemas["input_schema"]["properties"]) == {"messages", "turns"}
    assert set(schemas["output_schema"]["properties"]) == {"messages", "turns"}
    assert set(schemas["state_schema"]["properties"]) == {"messages", "turns"}
    assert schemas["context_schema"] is None  # the graph declares none
    assert await client.assistants.get_subgraphs("graph") == {}
    xray = await client.assistants.get_graph("graph", xray=True)
    assert [n["id"] for n in xray["nodes"]][:2] == ["__start__", "agent"]


async def test_unknown_assistants_are_404_bad_flags_422(base_url, client):
    for call in (
        client.assistants.get_graph,
        client.assistants.get_schemas,
        client.assistants.get_subgraphs,
    ):
        with pytest.raises(NotFoundError):
            await call("nobody")
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        for path in ("/assistants/demo/graph?xray=maybe", "/assistants/demo/subgraphs?recurse=1"):
            response = await http.get(path)
            assert response.status_code == 422, path
            assert response.json()["error"]


async def test_events_mode_is_the_run_as_astream_events(client):
    thread_id, parts = await _parts(client, "demo", ["events"], input=ASK)
    assert [e for e, _ in parts] == ["metadata"] + ["events"] * (len(parts) - 1)
    events = [d for _, d in parts[1:]]
    run_id = parts[0][1]["run_id"]
    for event in events:
        assert set(event) == {"event", "name", "run_id", "tags", "metadata", "data", "parent_ids"}
        assert event["metadata"]["langgraph_node"] == "demo"
        assert event["metadata"]["run_id"] == run_id  # the client cancels by it
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["on_chain_start", "on_chain_start"]
    assert [e["name"] for e in events[:2]] == ["LangGraph", "demo"]
    assert kinds[-2:] == ["on_chain_end", "on_chain_end"]

    state = await client.threads.get_state(thread_id)
    stored = state["values"].get("messages")
    if stored is None:  # the root's ThreadState: AG-UI messages beside the values
        stored = state["messages"]
        texts = [m["content"] for m in stored if m["role"] == "assistant"]
        call = stored[1]["toolCalls"][0]
        call_id, name, args = call["id"], call["function"]["name"], call["function"]["arguments"]
    else:
        texts = [m["content"] for m in stored if m["type"] == "ai"]
        call = stored[1]["tool_calls"][0]
        call_id, name, args = call["id"], call["name"], orjson.dumps(call["args"]).decode()

    # Text: a chat model run per message, its chunks, then its end with the message.
    streams = [e for e in events if e["event"] == "on_chat_model_stream"]
    text_chunks = [e["data"]["chunk"] for e in streams if e["data"]["chunk"]["content"]]
    assert all(c["response_metadata"] == {} and c["type"] == "AIMessageChunk" for c in text_chunks)
    assert "".join(c["content"] for c in text_chunks) == "".join(texts)
    # The tool call: a chunk with its name, then its arguments, then the model's end.
    calls = [c for e in streams for c in e["data"]["chunk"]["tool_call_chunks"]]
    assert calls[0]["id"] == call_id and calls[0]["name"] == name
    assert orjson.loads("".join(c["args"] for c in calls)) == orjson.loads(args)
    ends = [e for e in events if e["event"] == "on_chat_model_end"]
    assert [e["data"]["output"]["content"] for e in ends] == [texts[0], texts[0], texts[1]]
    assert ends[1]["data"]["output"]["tool_calls"][0]["id"] == call_id
    tool = [e for e in events if e["event"] in ("on_tool_start", "on_tool_end")]
    assert [e["event"] for e in tool] == ["on_tool_start", "on_tool_end"]
    assert tool[1]["name"] == name and tool[1]["data"]["input"] == orjson.loads(args)
    output = tool[1]["data"]["output"]
    assert output["type"] == "tool" and output["tool_call_id"] == call_id
    assert orjson.loads(output["content"])["value"] == 42
    # The node's end carries the run's values, as the client merges them.
    assert events[-2]["data"]["output"]["loop"]["iteration"] == 1


async def test_events_mode_custom_events_and_a_replay_is_the_same(root):
    thread_id, parts = await _parts(root, "signals", ["events", "values"], input=ASK)
    custom = [d for e, d in parts if e == "events" and d["event"] == "on_custom_event"]
    assert [(c["name"], c["data"]) for c in custom] == [("progress", {"done": 1, "of": 2})]
    # LangGraph's first values are the input state; the last the run's.
    values = [d for e, d in parts if e == "values"]
    assert [m["type"] for m in values[0]["messages"]] == ["human"]
    assert values[-1]["phase"] == "half"
    # Joined after the end, the run's parts are the same (their ids derive from the run's).
    run_id = parts[0][1]["run_id"]
    again = [
        (part.event, part.data)
        async for part in root.runs.join_stream(thread_id, run_id, stream_mode=["events", "values"])
    ]
    assert again == parts[1:]


async def test_stream_subgraphs_names_a_subagents_parts_by_its_namespace(root):
    modes = ["events", "messages-tuple", "values"]
    _, flat = await _parts(root, "subagents", modes, input=ASK)
    _, nested = await _parts(root, "subagents", modes, input=ASK, stream_subgraphs=True)
    assert all("|" not in e for e, _ in flat)
    inner = [(e, d) for e, d in nested if "|" in e]
    names = {e.split("|")[0] for e, _ in inner}
    assert names == {"values", "events", "messages"}
    namespace = inner[0][0].split("|", 1)[1]
    assert namespace.startswith("subagent_researcher:")
    assert all(e.split("|", 1)[1] == namespace for e, _ in inner)
    said = [d[0]["content"] for e, d in inner if e.startswith("messages|")]
    assert said == ["found it."]
    streamed = [d for e, d in inner if e.startswith("events|")]
    assert streamed[0]["metadata"]["langgraph_checkpoint_ns"] == namespace
    # The parts themselves are the same; only the subagent's are named apart.
    assert [e.split("|")[0] for e, _ in nested[1:]] == [e for e, _ in flat[1:]]


async def test_stream_subgraphs_without_subagents_changes_nothing(root):
    modes = ["updates", "custom"]
    _, flat = await _parts(root, "demo", modes, input=ASK)
    _, nested = await _parts(root, "demo", modes, input=ASK, stream_subgraphs=True)

    def shape(parts):
        return [(e, sorted(d) if isinstance(d, dict) else d) for e, d in parts[1:]]

    assert shape(nested) == shape(flat)


async def test_a_command_with_an_input_runs_the_command(root):
    thread_id = (await root.threads.create())["thread_id"]
    paused = await root.runs.wait(
        thread_id, "demo", input={"messages": [{"role": "user", "content": "approve it"}]}
    )
    assert paused["__interrupt__"]
    # What @ag-ui/langgraph sends on a resume: the thread's messages as input, the
    # resume as command, CopilotKit's interruptEvent beside it. LangGraph runs the command.
    resent = {"messages": [{"role": "user", "content": "never stored"}], "tools": []}
    command = {"resume": "yes", "interruptEvent": "{}"}
    done = await root.runs.wait(thread_id, "demo", input=resent, command=command)
    assert "__interrupt__" not in done
    contents = [m["content"] for m in done["messages"]]
    assert contents[-1].startswith("Approved") and "never stored" not in contents


async def test_the_langgraph_surface_has_the_messages_in_the_values(base_url):
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        await http.post("/threads", json={"thread_id": thread_id})
        body = {"assistant_id": "demo", "input": ASK}
        await http.post(f"/langgraph/threads/{thread_id}/runs/wait", json=body)
        root = (await http.get(f"/threads/{thread_id}/state")).json()
        langgraph = (await http.get(f"/langgraph/threads/{thread_id}/state")).json()
        history = (await http.post(f"/langgraph/threads/{thread_id}/history", json={})).json()
    assert "messages" not in root["values"] and root["messages"][0]["role"] == "user"
    assert "messages" not in langgraph and "pendingInterrupts" not in langgraph
    messages = langgraph["values"].pop("messages")
    assert langgraph["values"] == root["values"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    assert [m["id"] for m in messages] == [m["id"] for m in root["messages"]]
    assert langgraph["checkpoint"] == root["checkpoint"] and langgraph["next"] == []
    assert history[0]["values"]["messages"] == messages


async def test_update_state_from_another_checkpoint_is_refused_not_applied(root):
    """A state update names the checkpoint it updates: one that is neither the
    current one nor a step of the current branch is a 422, never applied to the
    current state."""
    thread_id = (await root.threads.create())["thread_id"]
    await root.runs.wait(thread_id, "demo", input=ASK)
    current = (await root.threads.get_state(thread_id))["checkpoint"]["checkpoint_id"]
    with pytest.raises(UnprocessableEntityError):
        await root.threads.update_state(thread_id, {"x": 1}, checkpoint_id=str(uuid.uuid4()))
    with pytest.raises(UnprocessableEntityError):
        stale = {"checkpoint_id": str(uuid.uuid4()), "checkpoint_ns": ""}
        await root.threads.update_state(thread_id, {"x": 1}, checkpoint=stale)
    assert "x" not in (await root.threads.get_state(thread_id))["values"]
    # The current checkpoint, and as_node (the agent is the graph's one node), are taken.
    done = await root.threads.update_state(
        thread_id, {"x": 2}, checkpoint_id=current, as_node="demo"
    )
    assert (await root.threads.get_state(thread_id))["values"]["x"] == 2
    assert done["checkpoint"]["checkpoint_id"] != current


async def test_update_state_replaces_the_message_whose_id_the_thread_holds(base_url, root):
    """LangGraph's add_messages replaces the message with the id it is given: a
    state update under a held id edits that message where it stands (the thread
    keeps the old version as a branch), never a 200 that writes nothing."""
    thread_id = await _two_turns(root)
    before = (await root.threads.get_state(thread_id))["messages"]
    answer = before[1]
    assert answer["role"] == "assistant"
    edit = {"type": "ai", "id": answer["id"], "content": "EDITED"}
    done = await root.threads.update_state(thread_id, {"messages": [edit]})
    state = await root.threads.get_state(thread_id)  # the AG-UI state route
    assert state["checkpoint"] == done["checkpoint"]
    assert [m["id"] for m in state["messages"]] == [m["id"] for m in before]
    assert state["messages"][1]["content"] == "EDITED"
    assert state["messages"][:1] + state["messages"][2:] == before[:1] + before[2:]
    thread = await root.threads.get(thread_id)
    assert [m["content"] for m in thread["values"]["messages"]] == [
        m["content"] for m in state["messages"]
    ]
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        langgraph = (await http.get(f"/langgraph/threads/{thread_id}/state")).json()
        branches = (await http.get(f"/threads/{thread_id}/branches")).json()
    assert langgraph["values"]["messages"][1]["content"] == "EDITED"
    assert len(branches["branches"]) == 1  # the unedited messages, kept


async def test_update_state_at_a_step_writes_the_fork(base_url):
    """A state update at a step of the current branch is LangGraph's fork there:
    the thread goes on from that step with the update's messages and values (the
    old branch kept), never a 200 that writes nothing."""
    client = get_client(url=base_url + "/langgraph", api_key=None)
    try:
        thread_id = await _two_turns(client)
        history = await client.threads.get_history(thread_id, limit=10)
        step = history[2]  # u1 and its answer
        kept = [m["id"] for m in step["values"]["messages"]]
        assert len(kept) == 2
        values = {"messages": [{"type": "human", "id": "e2", "content": "edited"}], "mood": "ok"}
        fork = await client.threads.update_state(
            thread_id, values, checkpoint_id=step["checkpoint"]["checkpoint_id"]
        )
        state = await client.threads.get_state(thread_id)
        assert state["checkpoint"] == fork["checkpoint"] != step["checkpoint"]
        assert [m["id"] for m in state["values"]["messages"]] == [*kept, "e2"]
        assert state["values"]["mood"] == "ok"
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            shown = (await http.get(f"/threads/{thread_id}/state")).json()
            branches = (await http.get(f"/threads/{thread_id}/branches")).json()
        assert [m["id"] for m in shown["messages"]] == [*kept, "e2"]
        assert shown["values"]["mood"] == "ok"
        assert len(branches["branches"]) == 1  # u2 and its answer, kept
    finally:
        await client.aclose()


async def test_the_langgraph_history_has_a_step_per_message_and_a_run_forks_from_one(base_url):
    """``/langgraph``'s history: the current state, then the current branch's steps
    (step n holds its first n messages), each naming its parent; a state update at a
    step writes the fork there (with nothing to write, answers that step), and a run
    from it goes on from there."""
    client = get_client(url=base_url + "/langgraph", api_key=None)
    try:
        thread_id = await _two_turns(client)
        history = await client.threads.get_history(thread_id, limit=10)
        assert [len(s["values"]["messages"]) for s in history] == [4, 3, 2, 1, 0]
        for newer, older in itertools.pairwise(history):
            assert newer["parent_checkpoint"] == older["checkpoint"]
        assert history[-1]["parent_checkpoint"] is None
        assert all(s["next"] == ["demo"] for s in history[1:]) and history[0]["next"] == []
        # From a step back: that one and older.
        step = history[2]["checkpoint"]
        older = await client.threads.get_history(thread_id, checkpoint=step)
        assert [s["checkpoint"] for s in older] == [s["checkpoint"] for s in history[2:]]
        assert (await client.threads.get_state(thread_id, checkpoint=step))["checkpoint"] == step

        # With nothing to write, the fork is the step itself (a run naming it forks).
        same = await client.threads.update_state(thread_id, {}, checkpoint_id=step["checkpoint_id"])
        assert same["checkpoint"] == step
        assert (await client.threads.get_state(thread_id))["checkpoint"] == history[0]["checkpoint"]
        # The fork at the step before u2 (what @ag-ui/langgraph writes to regenerate:
        # its tools), then a run from it with u2 again.
        fork = await client.threads.update_state(
            thread_id, {"tools": []}, checkpoint_id=step["checkpoint_id"], as_node="demo"
        )
        forked = await client.threads.get_state(thread_id)
        assert forked["checkpoint"] == fork["checkpoint"] != step
        assert forked["values"]["messages"] == history[2]["values"]["messages"]
        assert forked["values"]["tools"] == []
        values = await client.runs.wait(
            thread_id,
            "demo",
            input=_say("u2", "and again"),
            checkpoint_id=fork["checkpoint"]["checkpoint_id"],
        )
        said = [(m["id"], m["type"]) for m in values["messages"]]
        assert [i for i, _ in said[:3]] == [m["id"] for m in history[0]["values"]["messages"][:3]]
        assert said[3][1] == "ai" and said[3][0] != history[0]["values"]["messages"][3]["id"]
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            branches = (await http.get(f"/threads/{thread_id}/branches")).json()
        assert len(branches["branches"]) == 1  # the old answer, kept

        # A checkpoint of neither the current state nor a step of its branch: 422.
        left = history[0]["checkpoint"]["checkpoint_id"]  # the state with the old answer
        for wanted in (str(uuid.uuid4()), left):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                await client.runs.wait(thread_id, "demo", input=ASK, checkpoint_id=wanted)
            assert refused.value.response.status_code == 422
    finally:
        await client.aclose()


def _say(message_id: str, text: str) -> dict:
    return {"messages": [{"id": message_id, "role": "user", "content": text}]}


async def _two_turns(client) -> str:
    """A new thread with two turns of the demo agent (u1, u2, each answered)."""
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "demo", input=_say("u1", "hello there"))
    await client.runs.wait(thread_id, "demo", input=_say("u2", "and again"))
    return thread_id


@pytest.mark.parametrize("prefix", ["", "/langgraph"], ids=["root", "langgraph"])
async def test_history_pages_with_before_and_filters_by_metadata(base_url, prefix):
    """A client pages the history with ``before`` (the last state it has): each page
    holds the states strictly older, the pages together the whole history once."""
    client = get_client(url=base_url + prefix, api_key=None)
    langgraph = get_client(url=base_url + "/langgraph", api_key=None)
    try:
        thread_id = await _two_turns(client)
        # A run from the step before u2 leaves a branch (the old answer).
        step = (await langgraph.threads.get_history(thread_id))[2]["checkpoint"]
        await langgraph.runs.wait(
            thread_id, "demo", input=_say("u2", "and again"), checkpoint_id=step["checkpoint_id"]
        )
        whole = await client.threads.get_history(thread_id, limit=50)
        assert len(whole) >= 2
        paged, before = [], None
        while page := await client.threads.get_history(thread_id, limit=2, before=before):
            assert len(paged) < len(whole), "the pages never end"
            paged += page
            before = page[-1]["checkpoint"]
        assert [s["checkpoint"] for s in paged] == [s["checkpoint"] for s in whole]

        # GET ?before= names a checkpoint by its id.
        second_last = whole[-2]["checkpoint"]["checkpoint_id"]
        async with httpx.AsyncClient(base_url=base_url + prefix, timeout=10) as http:
            got = await http.get(f"/threads/{thread_id}/history", params={"before": second_last})
        assert [s["checkpoint"] for s in got.json()] == [whole[-1]["checkpoint"]]
        # Nothing is known to be older than a checkpoint the thread never had.
        unknown = {"checkpoint_id": str(uuid.uuid4())}
        assert await client.threads.get_history(thread_id, before=unknown) == []

        forks = await client.threads.get_history(thread_id, limit=50, metadata={"source": "fork"})
        assert forks == [s for s in whole if s["metadata"]["source"] == "fork"] and forks
        assert await client.threads.get_history(thread_id, metadata={"source": "nope"}) == []
    finally:
        await client.aclose()
        await langgraph.aclose()
