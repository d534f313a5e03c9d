"""Auth on every Agent Protocol route: ``authenticate`` (401), the action (403), then
the thread's ``authorize_thread`` (403) before anything of the thread is read or
changed; a search shows only the caller's threads."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from langgraph_sdk import get_client

from tests.servers import serve


@pytest.fixture(scope="module")
def base_url():
    env = {"AGUI_DEMO_DELAY": "0", "AGUI_TEST_AUTH": "1"}
    with serve("tests.agent_protocol_apps:app", env=env, interface="asgi") as url:
        yield url


async def test_every_route_asks_who_and_whose(base_url):
    ann = get_client(url=base_url, api_key=None, headers={"x-user": "ann"})
    tag = uuid.uuid4().hex
    mine = (await ann.threads.create(thread_id=f"ann-{uuid.uuid4()}", metadata={"tag": tag}))[
        "thread_id"
    ]
    run = await ann.runs.create(mine, "demo", input={"messages": ["hi"]})
    await ann.runs.join(mine, run["run_id"])
    await ann.aclose()

    run_path = f"/threads/{mine}/runs/{run['run_id']}"
    routes = [
        ("POST", "/threads", {"thread_id": mine, "if_exists": "do_nothing"}),
        ("GET", f"/threads/{mine}", None),
        ("PATCH", f"/threads/{mine}", {"metadata": {"x": 1}}),
        ("DELETE", f"/threads/{mine}", None),
        ("GET", f"/threads/{mine}/state", None),
        ("POST", f"/threads/{mine}/history", {}),
        ("GET", f"/threads/{mine}/runs", None),
        ("POST", f"/threads/{mine}/runs", {"assistant_id": "demo", "input": {}}),
        ("POST", f"/threads/{mine}/runs/wait", {"assistant_id": "demo", "input": {}}),
        ("POST", f"/threads/{mine}/runs/stream", {"assistant_id": "demo", "input": {}}),
        ("GET", run_path, None),
        ("DELETE", run_path, None),
        ("GET", f"{run_path}/join", None),
        ("GET", f"{run_path}/stream", None),
        ("POST", f"{run_path}/cancel", None),
    ]
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        for method, path, body in routes:
            nobody = await http.request(method, path, json=body)
            assert nobody.status_code == 401, (method, path, nobody.text)
            bob = await http.request(method, path, json=body, headers={"x-user": "bob"})
            assert bob.status_code == 403, (method, path, bob.text)
        assert (await http.get("/assistants/demo")).status_code == 401
        # A reader may read but not run or change.
        reader = {"x-user": "ann", "x-actions": "read"}
        assert (await http.get(f"/threads/{mine}", headers=reader)).status_code == 200
        assert (await http.get(f"{run_path}/join", headers=reader)).status_code == 200
        for method, path, body in [routes[2], routes[3], routes[7], routes[14]]:
            refused = await http.request(method, path, json=body, headers=reader)
            assert refused.status_code == 403, (method, path, refused.text)
        # A join that cancels the run when its reader leaves is a cancel: not a reader's.
        for route, flag in (("join", "true"), ("stream", "true"), ("join", "1")):
            asked = f"{run_path}/{route}?cancel_on_disconnect={flag}"  # "1": the JS SDK's
            refused = await http.get(asked, headers=reader)
            assert refused.status_code == 403, (asked, refused.text)
        # A search shows the caller's threads only.
        query = {"metadata": {"tag": tag}}
        found = await http.post("/threads/search", json=query, headers={"x-user": "bob"})
        assert found.status_code == 200 and found.json() == []
        found = await http.post("/threads/search", json=query, headers={"x-user": "ann"})
        assert [t["thread_id"] for t in found.json()] == [mine]
        # Stateless runs make threads the caller must be allowed on too.
        stateless = await http.post(
            "/runs/wait", json={"assistant_id": "demo", "input": {}}, headers={"x-user": "ann"}
        )
        assert stateless.status_code == 403


async def test_authorize_stream_guards_reading_and_cancelling_a_run(base_url):
    carl = get_client(url=base_url, api_key=None, headers={"x-user": "carl"})
    try:
        thread_id = (await carl.threads.create(thread_id=f"carl-{uuid.uuid4()}"))["thread_id"]
        values = await carl.runs.wait(thread_id, "demo", input={"messages": ["hi"]})
        assert values["messages"][-1]["type"] == "ai"  # running is allowed
        run = await carl.runs.create(thread_id, "demo", input={"messages": ["again"]})
        # The list shows each run's input: only the runs the caller may watch.
        assert await carl.runs.list(thread_id) == []
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            path = f"/threads/{thread_id}/runs/{run['run_id']}"
            for method, route in [("GET", ""), ("GET", "/join"), ("GET", "/stream")]:
                refused = await http.request(method, path + route, headers={"x-user": "carl"})
                assert refused.status_code == 403, (route, refused.text)
            refused = await http.post(path + "/cancel", headers={"x-user": "carl"})
            assert refused.status_code == 403
    finally:
        await carl.aclose()


async def test_authorize_stream_guards_a_queued_run_joined_to_cancel(base_url):
    """A run not started yet is read and stopped (cancel_on_disconnect) as a
    live one: carl, whom the demo's ``authorize_stream`` refuses, may neither
    join a queued demo run nor stop it by leaving."""
    carl = get_client(url=base_url, api_key=None, headers={"x-user": "carl"})
    try:
        thread_id = (await carl.threads.create(thread_id=f"carl-{uuid.uuid4()}"))["thread_id"]
        ahead = await carl.runs.create(thread_id, "slow", input={"messages": ["count 10"]})
        queued = await carl.runs.create(
            thread_id, "demo", input={"messages": ["hi"]}, multitask_strategy="enqueue"
        )
        assert queued["status"] == "pending"
        path = f"/threads/{thread_id}/runs/{queued['run_id']}"
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
            for route in ("/join", "/stream"):
                asked = f"{path}{route}?cancel_on_disconnect=true"
                async with http.stream("GET", asked, headers={"x-user": "carl"}) as joined:
                    assert joined.status_code == 403, route  # and leaving stops nothing
            refused = await http.post(path + "/cancel", headers={"x-user": "carl"})
            assert refused.status_code == 403
        await carl.runs.join(thread_id, ahead["run_id"])
        for _ in range(100):
            thread = await carl.threads.get(thread_id)
            if thread["status"] == "idle":
                break
            await asyncio.sleep(0.05)
        messages = thread["values"]["messages"]
        # The queued demo run ran to its end: "hi" answered after the ticks.
        assert [m["type"] for m in messages[-2:]] == ["human", "ai"], messages
        assert messages[-2]["content"] == "hi"
    finally:
        await carl.aclose()


@pytest.fixture(scope="module")
def shared_url(redis_server):
    """The same app with its run logs (and so its run records) shared on Redis."""
    env = {
        "AGUI_DEMO_DELAY": "0",
        "AGUI_TEST_AUTH": "1",
        "AGUI_TEST_RUNS": redis_server.url(redis_server.fresh_db()),
    }
    with serve("tests.agent_protocol_apps:app", env=env) as url:
        yield url


async def test_a_refused_cancel_leaves_a_shared_run_alone(shared_url):
    alice = get_client(url=shared_url, api_key=None, headers={"x-user": "alice"})
    try:
        thread_id = (await alice.threads.create(thread_id=f"alice-{uuid.uuid4()}"))["thread_id"]
        run = await alice.runs.create(thread_id, "slow", input={"messages": ["count 12"]})
        path = f"/threads/{thread_id}/runs/{run['run_id']}/cancel"
        callers = [
            ({}, 401),
            ({"x-user": "bob"}, 403),
            ({"x-user": "alice", "x-actions": "read"}, 403),
        ]
        async with httpx.AsyncClient(base_url=shared_url, timeout=10) as http:
            for headers, status in callers:
                refused = await http.post(path, headers=headers)
                assert refused.status_code == status, (headers, refused.text)
        assert (await alice.runs.get(thread_id, run["run_id"]))["status"] == "running"
        values = await alice.runs.join(thread_id, run["run_id"])
        ticks = " ".join(f"tick {n}" for n in range(12))
        assert values["messages"][-1]["content"].strip() == ticks
        assert (await alice.runs.get(thread_id, run["run_id"]))["status"] == "success"
        assert [r["status"] for r in await alice.runs.list(thread_id)] == ["success"]
    finally:
        await alice.aclose()
