"""The one route table: both protocols' rows, one 405 with every allowed method."""

from __future__ import annotations

import httpx
import pytest
from agui_bridge import App
from agui_bridge import crumbs as c
from agui_bridge.errors import HttpError
from agui_bridge.ingress.routes import Routes


async def _endpoint(conn, **params):
    pass


def test_a_row_serves_its_methods_and_names_its_parameters():
    routes = Routes()

    async def run(conn, thread_id, run_id):
        pass

    routes.add("GET", "/threads/{thread_id}/runs/{run_id}/events", run)
    routes.add(("GET", "POST"), "/threads/{thread_id:path}/state", _endpoint)
    endpoint, params = routes.match("GET", "/threads/t1/runs/r1/events")
    assert endpoint is run and params == {"thread_id": "t1", "run_id": "r1"}
    assert routes.match("POST", "/threads/a/b/state")[1] == {"thread_id": "a/b"}
    with pytest.raises(HttpError) as refused:
        routes.match("GET", "/threads//runs/r1/events")  # an empty segment is no parameter
    assert refused.value.status == 404


def test_one_405_lists_what_every_row_of_the_path_allows():
    routes = Routes()
    routes.add("POST", "/threads/search", _endpoint)
    routes.add("GET", "/threads/{thread_id}", _endpoint)
    routes.add(("PATCH", "DELETE"), "/threads/{thread_id}", _endpoint)
    # The first row that matches path and method serves: GET is the thread named "search".
    assert routes.match("GET", "/threads/search")[0] is _endpoint
    with pytest.raises(HttpError) as refused:
        routes.match("PUT", "/threads/search")
    error = refused.value
    assert error.status == 405 and error.code == "method_not_allowed"
    assert error.headers == [("allow", "DELETE, GET, PATCH, POST")]
    with pytest.raises(HttpError) as missing:
        routes.match("GET", "/nowhere")
    assert missing.value.status == 404


def test_a_literal_path_wins_and_a_taken_route_is_refused():
    routes = Routes()

    async def agent(conn):
        pass

    routes.add("GET", "/threads/{thread_id}/events", _endpoint)
    routes.add("POST", "/threads/x/events", agent, literal=True)
    assert routes.match("POST", "/threads/x/events")[0] is agent
    assert routes.match("GET", "/threads/x/events")[0] is _endpoint
    routes.add("POST", "/odd/{path}", agent, literal=True)  # a user's path, braces and all
    assert routes.match("POST", "/odd/{path}")[0] is agent
    with pytest.raises(ValueError, match="already routed"):
        routes.add(("GET", "POST"), "/threads/{thread_id}/events", _endpoint)
    with pytest.raises(ValueError):
        routes.add("get", "/x", _endpoint)
    with pytest.raises(ValueError):
        routes.add("GET", "/x/{bad-name}", _endpoint)


def _app():
    app = App(store="memory://")

    @app.agent("demo")
    async def demo(ctx):
        yield c.text_delta("hi")

    return app


async def test_both_protocols_answer_one_405_on_a_path_they_share():
    app = _app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as http:
        # GET …/state is AG-UI's, POST …/state the Agent Protocol's: one Allow for both.
        refused = await http.put("/threads/t1/state", json={})
        assert refused.status_code == 405, refused.text
        assert refused.headers["allow"] == "GET, POST"
        assert refused.json()["error"]["code"] == "method_not_allowed"
        # The cancel route is one row for both protocols.
        refused = await http.get("/threads/t1/runs/r1/cancel")
        assert refused.status_code == 405 and refused.headers["allow"] == "POST"
        # Rows added later (an app's own routes) are served like the protocols'.
        seen = []

        async def custom(conn):
            seen.append(conn.path)
            await conn.respond(200, b"{}", [("content-type", "application/json")])

        app.routes.add("GET", "/custom", custom)
        assert (await http.get("/custom")).status_code == 200 and seen == ["/custom"]
        assert (await http.get("/nowhere")).status_code == 404


def test_an_agent_path_taken_by_the_playground_or_another_agent_is_refused():
    app = App(store="memory://", playground=True)

    async def agent(ctx):
        yield c.text_delta("x")

    with pytest.raises(ValueError, match="already taken"):
        app.agent("one", path="/")(agent)
    app.agent("two", path="/two")(agent)
    with pytest.raises(ValueError, match="already taken"):
        app.agent("three", path="/two")(agent)
    assert set(app._agents) == {"two"}
