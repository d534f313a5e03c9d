"""Attachments (issue 20): AG-UI 1.0 content parts in user messages, the legacy
``binary`` part, the App's part policy (size 413, URL schemes, MIME types),
what the agent gets (``ctx.input`` the text, ``ctx.parts`` the media), and the
thread replaying them whole. In process on the ASGI app (memory store); the
stores' blob tables are tested in test_attachment_store.py."""

from __future__ import annotations

import base64

import httpx
import pytest
from agui_bridge import crumbs as c
from agui_bridge import map_run_input
from agui_bridge.app import App
from agui_bridge.capabilities import of as capabilities_of
from agui_bridge.errors import PartTooLarge, RunInputError
from agui_bridge.parts import PartPolicy, data_size

from tests.ingress_apps import parse_sse

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def image(value=PNG, kind="data", mime="image/png", **extra) -> dict:
    source = {"type": kind, "value": value}
    if mime is not None:
        source["mimeType"] = mime
    return {"type": "image", "source": source, **extra}


def body_of(content, thread_id="t1", message_id="u1") -> dict:
    return {
        "threadId": thread_id,
        "runId": f"r-{message_id}",
        "messages": [{"id": message_id, "role": "user", "content": content}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


DEFAULT = PartPolicy()


def refused(body, *words, policy=DEFAULT, kind=RunInputError) -> str:
    with pytest.raises(kind) as caught:
        map_run_input(body, policy)
    message = str(caught.value)
    for word in words:
        assert word in message, (word, message)
    return message


# -- what a run gets ----------------------------------------------------------------


def test_text_and_media_parts_make_the_input_text_and_keep_every_part():
    content = [
        {"type": "text", "text": "what is"},
        image(),
        {"type": "text", "text": "in this picture?"},
        {"type": "document", "source": {"type": "url", "value": "https://x.test/a.pdf"}},
        {"type": "audio", "source": {"type": "file", "value": "file-abc", "provider": "openai"}},
    ]
    run = map_run_input(body_of(content))
    assert run.input == "what is\nin this picture?"
    assert run.messages[-1]["content"] == content


def test_a_message_of_media_only_has_empty_text():
    run = map_run_input(body_of([image()]))
    assert run.input == ""
    assert run.messages[-1]["content"] == [image()]


# -- the legacy binary part ------------------------------------------------------------


@pytest.mark.parametrize(
    ("legacy", "modern"),
    [
        pytest.param(
            {"type": "binary", "mimeType": "image/png", "data": PNG},
            image(),
            id="data",
        ),
        pytest.param(
            {"type": "binary", "mimeType": "audio/wav", "url": "https://x.test/a.wav"},
            {
                "type": "audio",
                "source": {"type": "url", "value": "https://x.test/a.wav", "mimeType": "audio/wav"},
            },
            id="url",
        ),
        pytest.param(
            {"type": "binary", "mimeType": "application/pdf", "id": "file-1", "filename": "a.pdf"},
            {
                "type": "document",
                "source": {"type": "file", "value": "file-1", "mimeType": "application/pdf"},
                "metadata": {"filename": "a.pdf"},
            },
            id="id-filename",
        ),
        pytest.param(
            {"type": "binary", "mimeType": "video/mp4", "data": PNG},
            {"type": "video", "source": {"type": "data", "value": PNG, "mimeType": "video/mp4"}},
            id="video",
        ),
    ],
)
def test_a_legacy_binary_part_becomes_the_media_part_of_ag_ui_1_0(legacy, modern):
    run = map_run_input(body_of([{"type": "text", "text": "see"}, legacy]))
    assert run.messages[-1]["content"] == [{"type": "text", "text": "see"}, modern]
    assert run.input == "see"


def test_a_legacy_binary_part_that_repeats_a_media_part_is_dropped():
    legacy = {"type": "binary", "mimeType": "image/png", "data": PNG}
    run = map_run_input(body_of([image(), legacy]))
    assert run.messages[-1]["content"] == [image()]


def test_a_legacy_binary_part_without_a_payload_is_refused():
    refused(
        body_of([{"type": "binary", "mimeType": "image/png"}]),
        "messages[0] (user).content[0]",
        "id, url or data",
    )


# -- the guards -------------------------------------------------------------------------


def test_inline_data_over_max_part_bytes_is_413_naming_the_part():
    policy = PartPolicy(max_part_bytes=1000)
    big = base64.b64encode(b"x" * 1001).decode()
    message = refused(
        body_of([{"type": "text", "text": "a"}, image(big)]),
        "messages[0] (user).content[1]",
        "1001",
        "1000",
        policy=policy,
        kind=PartTooLarge,
    )
    assert "max_part_bytes" in message
    # exactly at the limit it passes
    map_run_input(body_of([image(base64.b64encode(b"x" * 1000).decode())]), policy)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 1000, 1001, 1002])
def test_the_size_is_read_without_decoding(size):
    assert data_size(base64.b64encode(b"y" * size).decode()) == size


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("not base64!", id="alphabet"),
        pytest.param("QUJD\nREVG", id="newline"),
        pytest.param("QUJ", id="padding"),
        pytest.param("QR==", id="non-canonical"),
    ],
)
def test_inline_data_that_is_not_canonical_base64_is_refused(value):
    refused(body_of([image(value)]), "messages[0] (user).content[0].source.value", "base64")


@pytest.mark.parametrize(
    "url",
    ["http://x.test/a.png", "file:///etc/passwd", "data:image/png;base64,AAAA", "x.png", "ftp://x"],
)
def test_a_url_outside_the_allowed_schemes_is_refused(url):
    refused(body_of([image(url, kind="url")]), "messages[0] (user).content[0]", "scheme")


@pytest.mark.parametrize("url", ["https://[::1", "http://[x", "https://a]b", "https://x\uff03@y"])
def test_a_url_python_cannot_parse_is_refused_naming_the_part(url):
    refused(body_of([image(url, kind="url")]), "messages[0] (user).content[0]", "not a valid URL")
    legacy = {"type": "binary", "mimeType": "image/png", "url": url}
    refused(body_of([legacy]), "messages[0] (user).content[0]", "not a valid URL")


def test_the_allowed_schemes_are_the_apps():
    policy = PartPolicy(url_schemes=("https", "s3"))
    map_run_input(body_of([image("s3://bucket/a.png", kind="url")]), policy)
    map_run_input(body_of([image("HTTPS://x.test/a.png", kind="url")]), policy)
    refused(body_of([image("http://x.test/a.png", kind="url")]), "'http'", policy=policy)


def test_a_mime_allowlist_refuses_other_types_and_absent_ones():
    policy = PartPolicy(mime_types=("image/*", "application/pdf"))
    map_run_input(body_of([image()]), policy)
    pdf_url = {"type": "url", "value": "https://x.test/a", "mimeType": "application/pdf"}
    pdf = {"type": "document", "source": pdf_url}
    map_run_input(body_of([pdf]), policy)
    wav = {"type": "audio", "source": {"type": "data", "value": PNG, "mimeType": "audio/wav"}}
    refused(body_of([wav]), "messages[0] (user).content[0]", "audio/wav", policy=policy)
    refused(body_of([image("https://x.test/a", kind="url", mime=None)]), "mimeType", policy=policy)


@pytest.mark.parametrize(
    ("part", "words"),
    [
        pytest.param({"type": "sticker", "id": "s"}, ("content[0].type",), id="unknown-type"),
        pytest.param({"type": "image"}, ("content[0].source",), id="no-source"),
        pytest.param(
            {"type": "image", "source": {"type": "blob", "value": "x"}},
            ("content[0].source.type",),
            id="unknown-source",
        ),
        pytest.param(
            {"type": "image", "source": {"type": "data", "value": PNG}},
            ("content[0].source.mimeType",),
            id="data-without-mime",
        ),
        pytest.param(
            {"type": "image", "source": {"type": "url", "value": 5}},
            ("content[0].source.value",),
            id="value-not-string",
        ),
        pytest.param(
            image(aguiBlob="x") | {"source": {**image()["source"], "aguiBlob": "ab"}},
            ("aguiBlob", "reserved"),
            id="reserved-key",
        ),
        pytest.param(
            # A blob named from a text part: it was filled in with another
            # thread's bytes on load (SQLite, PostgreSQL), or a 500.
            {"type": "text", "text": "hi", "source": {"type": "data", "aguiBlob": "ab"}},
            ("content[0].source.aguiBlob", "reserved"),
            id="reserved-key-on-a-text-part",
        ),
    ],
)
def test_an_unknown_part_or_a_malformed_source_is_refused(part, words):
    refused(body_of([part]), "messages[0] (user)", *words)


def test_capabilities_follow_the_mime_allowlist():
    app = App(store="memory://", mime_types=("image/*",))

    @app.agent("a")
    async def agent(ctx):
        yield c.text_delta("x")

    inputs = capabilities_of(app, app.agents["a"])["multimodal"]["input"]
    assert inputs == {"image": True, "audio": False, "video": False, "pdf": False, "file": True}


def test_the_default_body_limit_admits_a_part_of_max_part_bytes():
    assert App(store="memory://").body_limit >= 4 * (8 << 20) // 3 + 1000
    assert App(store="memory://", max_part_bytes=1 << 20).body_limit >= 4 * (1 << 20) // 3
    with pytest.raises(ValueError, match="max_part_bytes"):
        App(store="memory://", max_part_bytes=4 << 20, body_limit=1 << 20)


# -- over HTTP: the agent gets the parts, the thread replays them whole ------------------


def recording_app(**options) -> tuple[App, list]:
    app = App(store="memory://", **options)
    seen = []

    @app.agent("rec")
    async def rec(ctx):
        seen.append((ctx.input, ctx.parts, ctx.input_message, [m["id"] for m in ctx.history]))
        yield c.text_delta(f"got {len(ctx.parts)} parts")

    return app, seen


def client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_the_agent_gets_the_parts_and_the_thread_replays_them_whole():
    app, seen = recording_app()
    pdf = "application/pdf"
    legacy = {"type": "binary", "mimeType": pdf, "url": "https://x.test/a.pdf"}
    content = [{"type": "text", "text": "look"}, image(), legacy]
    async with client(app) as http:
        response = await http.post("/ag-ui/run", json=body_of(content))
        assert response.status_code == 200, response.text
        events, _ = parse_sse(response.text)
        assert events[-1]["type"] == "RUN_FINISHED"
        text, parts, message, _ = seen[0]
        assert text == "look"
        stored = [
            {"type": "text", "text": "look"},
            image(),
            {
                "type": "document",
                "source": {"type": "url", "value": legacy["url"], "mimeType": pdf},
            },
        ]
        assert parts == stored[1:]
        assert message["content"] == stored
        state = (await http.get("/threads/t1/state")).json()
        assert state["messages"][0] == {"id": "u1", "role": "user", "content": stored}
        # a second turn: the history holds the first, whole
        second = body_of("and now?", message_id="u2")
        second["messages"] = [state["messages"][0], state["messages"][1], *second["messages"]]
        response = await http.post("/ag-ui/run", json=second)
        assert response.status_code == 200, response.text
        assert seen[1][0] == "and now?" and seen[1][1] == []
        assert seen[1][3][0] == "u1"


async def test_a_part_of_max_part_bytes_passes_the_default_body_limit():
    app, seen = recording_app()
    big = base64.b64encode(b"\x01" * (8 << 20)).decode()
    async with client(app) as http:
        response = await http.post("/ag-ui/run", json=body_of([image(big)]))
        assert response.status_code == 200, response.text[:300]
        assert seen[0][1][0]["source"]["value"] == big
        over = base64.b64encode(b"\x01" * ((8 << 20) + 1)).decode()
        response = await http.post("/ag-ui/run", json=body_of([image(over)], message_id="u9"))
        assert response.status_code == 413, response.text[:300]
        error = response.json()["error"]
        assert error["code"] == "part_too_large"
        assert "messages[0] (user).content[0]" in error["message"]


@pytest.mark.parametrize(
    ("part", "status", "code"),
    [
        pytest.param(image("http://x.test/a.png", kind="url"), 400, "invalid_input", id="scheme"),
        pytest.param(image("https://[::1", kind="url"), 400, "invalid_input", id="bad-url"),
        pytest.param({"type": "sticker"}, 400, "invalid_input", id="unknown"),
        pytest.param(
            image(base64.b64encode(b"z" * 2000).decode()), 413, "part_too_large", id="big"
        ),
    ],
)
async def test_each_guard_is_a_json_4xx_naming_the_part(part, status, code):
    app, seen = recording_app(max_part_bytes=1000, body_limit=1 << 20)
    async with client(app) as http:
        body = body_of([{"type": "text", "text": "a"}, part])
        response = await http.post("/ag-ui/run", json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    assert "messages[0] (user).content[1]" in error["message"]
    assert seen == []


async def test_a_large_body_is_checked_off_the_event_loop(monkeypatch):
    """Checking 1 MiB of base64 takes milliseconds: never on the event loop."""
    import threading

    from agui_bridge.ingress import handler

    threads = []
    real = handler.map_run_input

    def recording(body, policy):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(body, policy)

    monkeypatch.setattr(handler, "map_run_input", recording)
    app, _seen = recording_app()
    big = base64.b64encode(b"\x02" * (1 << 20)).decode()
    async with client(app) as http:
        small = await http.post("/ag-ui/run", json=body_of("hi", thread_id="s"))
        large = await http.post("/ag-ui/run", json=body_of([image(big)], thread_id="l"))
    assert small.status_code == large.status_code == 200
    assert threads == [True, False]  # the small body on the loop, the large one not


def _agent_protocol_posts(thread_id: str, size: int) -> list[tuple[str, dict]]:
    """The Agent Protocol's bodies that carry messages (a run, a state update, a
    command), each with an image of ``size`` bytes of its own (a value found
    canonical is not checked again)."""

    def human(n: int) -> dict:
        value = base64.b64encode(bytes([0x40 + n]) * size).decode()
        block = {"type": "image", "base64": value, "mime_type": "image/png"}
        return {"role": "human", "content": [{"type": "text", "text": "see"}, block]}

    def run(n: int) -> dict:
        return {"assistant_id": "rec", "input": {"messages": [human(n)]}}

    command = {"id": 1, "method": "run.start", "params": run(3)}
    return [
        (f"/threads/{thread_id}/runs/wait", run(1)),
        (f"/threads/{thread_id}/state", {"values": {"messages": [human(2)]}}),
        (f"/threads/{thread_id}/commands", command),
    ]


async def test_a_large_agent_protocol_body_is_checked_off_the_event_loop(monkeypatch):
    """The AG-UI route's rule (OFF_LOOP_BYTES) on every Agent Protocol body that
    carries messages: a large one is parsed and its parts checked in a thread."""
    import threading

    from agui_bridge import parts

    on_loop = []
    real = parts.canonical

    def recording(value):
        on_loop.append(threading.current_thread() is threading.main_thread())
        return real(value)

    monkeypatch.setattr(parts, "canonical", recording)
    app, _seen = recording_app()
    async with client(app) as http:
        for size, thread_id in ((64, "ap-small"), (1 << 20, "ap-large")):
            made = await http.post("/threads", json={"thread_id": thread_id})
            assert made.status_code == 200, made.text
            for path, body in _agent_protocol_posts(thread_id, size):
                answer = await http.post(path, json=body)
                assert answer.status_code == 200, (path, answer.text)
    # the small bodies on the loop, the large ones not
    assert on_loop == [True, True, True, False, False, False]


def test_a_resent_value_is_not_checked_again(monkeypatch):
    """A client resends every attachment with each run: a value found canonical
    is known by its hash, a changed one is checked (and refused) again."""
    from agui_bridge import parts

    checked = []
    real = parts.canonical

    def counting(value):
        checked.append(len(value))
        return real(value)

    monkeypatch.setattr(parts, "canonical", counting)
    value = base64.b64encode(b"resent " * 1000).decode()
    map_run_input(body_of([image(value)]))
    map_run_input(body_of([image(value)], message_id="u2"))
    assert checked == [len(value)]
    changed = value[:-2] + "R="  # same length, not canonical
    refused(body_of([image(changed)]), "canonical base64")
    assert checked == [len(value), len(value)]
