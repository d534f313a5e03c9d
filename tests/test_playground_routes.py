"""The playground's routes without a browser: ``GET /agents``, the page and its
files (off by default, behind ``authenticate``, under any mount path), and the
committed bundle being what ``clients/playground`` builds."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from agui_bridge import App
from agui_bridge import crumbs as c
from starlette.applications import Starlette
from starlette.routing import Mount

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "python" / "agui_bridge" / "playground" / "static" / "playground.js"
BUILDER = ROOT / "clients" / "playground"


def make_app(**kwargs) -> App:
    app = App(store="memory://", **kwargs)

    @app.agent("chat")
    async def chat(ctx):
        yield c.text_delta("hi")

    @app.agent("raw events", dialect="events")
    async def raw(ctx):
        yield {"type": "TEXT_MESSAGE_CHUNK", "delta": "hi"}

    return app


def client(app, mount: str = "") -> httpx.AsyncClient:
    outer = Starlette(routes=[Mount(mount, app=app)]) if mount else app
    transport = httpx.ASGITransport(app=outer)
    return httpx.AsyncClient(transport=transport, base_url="http://test" + mount, timeout=10)


async def test_agents_lists_every_agent_with_its_paths_and_dialect():
    async with client(make_app()) as http:
        response = await http.get("/agents")
    assert response.status_code == 200
    assert response.json() == {
        "agents": [
            {"id": "chat", "paths": ["/ag-ui/run", "/agui/chat"], "dialect": "crumbs"},
            {"id": "raw events", "paths": ["/agui/raw events"], "dialect": "events"},
        ]
    }


async def test_agents_is_get_only():
    async with client(make_app()) as http:
        response = await http.post("/agents", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"


async def test_the_playground_is_off_by_default():
    async with client(make_app()) as http:
        for path in ("/", "/_playground/playground.js"):
            response = await http.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] == "not_found"


async def test_the_page_and_its_files():
    async with client(make_app(playground=True)) as http:
        page = await http.get("/", headers={"accept-encoding": "identity"})
        script = await http.get("/_playground/playground.js")
        style = await http.get("/_playground/playground.css")
        again = await http.get(
            "/_playground/playground.js", headers={"if-none-match": script.headers["etag"]}
        )
        posted = await http.post("/", json={})
        unknown = await http.get("/_playground/nothing.js")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<meta name="agui-base" content="./">' in page.text
    assert 'src="./_playground/playground.js"' in page.text
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    # httpx undoes the gzip it asked for: the body is the file.
    assert script.headers["content-encoding"] == "gzip"
    assert script.content == BUNDLE.read_bytes()
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert again.status_code == 304 and again.content == b""
    assert posted.status_code == 405
    assert unknown.status_code == 404


async def test_a_path_of_its_own_under_a_mount():
    async with client(make_app(playground="/tools/play"), mount="/mnt") as http:
        page = await http.get("/tools/play")
        script = await http.get("/_playground/playground.js")
        root = await http.get("/")
    assert page.status_code == 200
    # From /mnt/tools/play, "./../" is /mnt/: the app's routes.
    assert '<meta name="agui-base" content="./../">' in page.text
    assert script.status_code == 200
    assert root.status_code == 404


async def test_the_page_with_and_without_a_trailing_slash():
    """``/some/path`` and ``/some/path/`` both load the page, its links relative
    to where each is (a browser or a proxy adds or drops the slash)."""
    async with client(make_app(playground="/some/path")) as http:
        bare = await http.get("/some/path")
        slashed = await http.get("/some/path/")
    assert bare.status_code == slashed.status_code == 200
    assert '<meta name="agui-base" content="./../">' in bare.text
    # From /some/path/, "./../../" is /: the app's routes.
    assert '<meta name="agui-base" content="./../../">' in slashed.text
    assert 'src="./../../_playground/playground.js"' in slashed.text
    async with client(make_app(playground="/tools/play/"), mount="/mnt") as http:
        slashed = await http.get("/tools/play/")
        bare = await http.get("/tools/play")
    assert bare.status_code == slashed.status_code == 200
    assert '<meta name="agui-base" content="./../../">' in slashed.text
    assert '<meta name="agui-base" content="./../">' in bare.text
    with pytest.raises(ValueError):
        App(store="memory://", playground="/agents/")


def test_paths_the_app_routes_itself_are_refused():
    for path in (
        "/agents",
        "/threads",
        "/threads/x",
        "/runs/wait",
        "/assistants/a",
        "/_playground/a",
        "/agui/x",
        "play",
    ):
        with pytest.raises(ValueError):
            App(store="memory://", playground=path)
    app = App(store="memory://", playground="/chat")
    with pytest.raises(ValueError, match="already taken"):
        app.agent("chat", path="/chat")(_agent)


async def _agent(ctx):
    yield c.text_delta("x")


async def test_behind_the_same_authenticate():
    def authenticate(request):
        token = request.headers.get("cookie") or ""
        if token == "who=reader":
            return {"actions": ["read"]}
        if token == "who=nobody":
            return {"actions": []}
        return None

    async with client(make_app(playground=True, authenticate=authenticate)) as http:
        for path in ("/", "/_playground/playground.js", "/agents"):
            assert (await http.get(path)).status_code == 401, path
            denied = await http.get(path, headers={"cookie": "who=nobody"})
            assert denied.status_code == 403, path
            allowed = await http.get(path, headers={"cookie": "who=reader"})
            assert allowed.status_code == 200, path


def test_the_bundle_holds_the_real_client():
    script = BUNDLE.read_text(encoding="utf-8")
    # Messages of @ag-ui/client 1.0.0's verifier and of the reconnecting agent.
    assert "First event must be 'RUN_STARTED'" in script
    assert "Last-Event-ID" in script
    assert len(gzip.compress(BUNDLE.read_bytes())) < 160_000


def test_the_committed_bundle_is_what_the_build_makes(tmp_path):
    """``make playground`` rebuilds it; a change to clients/ without it fails here."""
    node = shutil.which("node")
    if node is None or not (BUILDER / "node_modules" / "esbuild").is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("node and clients/playground/node_modules are needed (make dev)")
        pytest.skip("clients/playground is not installed (make dev)")
    out = tmp_path / "playground.js"
    subprocess.run([node, "build.mjs", str(out)], cwd=BUILDER, check=True, timeout=120)
    assert out.read_bytes() == BUNDLE.read_bytes(), "run `make playground` and commit the bundle"


def test_interrupt_buttons_from_the_response_schema():
    """clients/playground/src/interrupts.js under node: the buttons each schema gives."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is needed (make dev)")
        pytest.skip("no node")
    script = """
    const { choicesFor } = await import(process.argv[1]);
    const cases = [
      { responseSchema: { type: "string", enum: ["yes", "no"] } },
      { responseSchema: { type: "boolean" } },
      { responseSchema: { oneOf: [{ const: 1, title: "one" }, { const: 2 }] } },
      { responseSchema: { type: "object", properties: { note: { type: "string" } } } },
      {},
    ];
    console.log(JSON.stringify(cases.map(choicesFor)));
    """
    module = (BUILDER / "src" / "interrupts.js").as_uri()
    out = subprocess.run(
        [node, "--input-type=module", "-e", script, module],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    enum, boolean, one_of, free, none = json.loads(out)
    cancel = {"label": "Cancel", "status": "cancelled", "kind": "cancel"}
    assert enum == {
        "choices": [
            {"label": "yes", "payload": "yes", "status": "resolved", "kind": "approve"},
            {"label": "no", "payload": "no", "status": "resolved", "kind": "decline"},
            cancel,
        ],
        "free": False,
    }
    assert [c["payload"] for c in boolean["choices"][:2]] == [True, False]
    assert [c["label"] for c in one_of["choices"]] == ["one", "2", "Cancel"]
    # Nothing buttons can offer: a text box and a cancel.
    assert free == none == {"choices": [cancel], "free": True}
