"""Numbers in requests: one integer rule (ASCII digits only), 400 on AG-UI routes and
422 on Agent Protocol routes, never a 500 (issue 24 item 6)."""

from __future__ import annotations

import httpx
import pytest
from agui_bridge import App
from agui_bridge import crumbs as c

# What str.isdigit() or a strip of '-' let through and int() refuses or reads
# otherwise: a superscript, another script's digit, a doubled sign, a sign and
# a space, full-width digits.
ODD = ["²", "٣", "--5", "- 5", "\uff11\uff12", "5²", "+5", "0x10", "1_000", " ", "9" * 19]


def test_integer_takes_ascii_digits_only():
    from agui_bridge.ingress.params import integer

    assert integer("0") == 0 and integer("123") == 123 and integer("9" * 18) == int("9" * 18)
    assert integer("-5", signed=True) == -5 and integer("-5") is None
    for text in ODD:
        assert integer(text.strip() or text, signed=True) is None, text


@pytest.fixture
async def http():
    app = App(store="memory://")

    @app.agent("demo")
    async def demo(ctx):
        yield c.text_delta("hi")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=20) as client:
        yield client


def _error(response, status: int, code: str | None = None) -> None:
    assert response.status_code == status, (response.request.url, response.text)
    assert response.headers["content-type"] == "application/json"
    if code is not None:
        assert response.json()["error"]["code"] == code


async def test_an_odd_last_event_id_is_a_400_or_422_not_a_500(http):
    for value in ODD:
        if not value.strip():
            continue  # an empty Last-Event-ID is no cursor: the reader joins
        # As the raw bytes a client sends (latin-1 where it can: how servers read them).
        try:
            raw = value.encode("latin-1")
        except UnicodeEncodeError:
            raw = value.encode()
        headers = {"last-event-id": raw}
        _error(await http.get("/threads/t/runs/r/events", headers=headers), 400, "invalid_cursor")
        query = {"last_event_id": value}
        _error(await http.get("/threads/t/runs/r/events", params=query), 400, "invalid_cursor")
        _error(await http.get("/threads/t/runs/r/stream", headers=headers), 422, "invalid_cursor")


async def test_an_odd_limit_or_offset_is_a_422_on_every_route_that_pages(http):
    thread = (await http.post("/threads", json={})).json()["thread_id"]
    for value in [*ODD, "-5", 10**30, 1.5, True]:
        for name in ("limit", "offset"):
            _error(await http.post("/threads/search", json={name: value}), 422)
            _error(await http.post("/assistants/search", json={name: value}), 422)
            if isinstance(value, str):
                params = {name: value}
                _error(await http.get(f"/threads/{thread}/runs", params=params), 422)
        _error(await http.post(f"/threads/{thread}/history", json={"limit": value}), 422)
        if isinstance(value, str):
            params = {"limit": value}
            _error(await http.get(f"/threads/{thread}/history", params=params), 422)
    # The rule still reads what is a number.
    assert (await http.post("/threads/search", json={"limit": "5"})).status_code == 200
    assert (await http.get(f"/threads/{thread}/runs", params={"limit": "5"})).status_code == 200


async def test_an_odd_branch_number_is_a_404_not_a_500(http):
    """``GET /threads/{id}/branches/{n}`` read n with ``str.isdigit``: '²' passed
    it and ``int`` refused it (a 500)."""
    body = {
        "threadId": "tb",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    }
    assert (await http.post("/agui/demo", json=body)).status_code == 200
    for value in ODD:
        if value.strip() and "/" not in value:
            _error(await http.get(f"/threads/tb/branches/{value}"), 404, "not_found")
    _error(await http.get("/threads/tb/branches/7"), 404, "not_found")


async def test_an_odd_xray_depth_is_a_422_not_a_500(http):
    """``GET /assistants/{id}/graph?xray=`` took a depth by ``str.isdigit``: '²' passed."""
    for value in ODD:
        _error(await http.get("/assistants/demo/graph", params={"xray": value}), 422)
    assert (await http.get("/assistants/demo/graph", params={"xray": "2"})).status_code == 200
