"""The adapters pass a user message's attachments on (issue 20): the OpenAI
adapter as chat completion content parts (``image_url``, ``input_audio``,
``file``) through the real ``openai`` client to a local scripted server,
pydantic-ai as ``BinaryContent`` / ``ImageUrl`` / ``DocumentUrl`` /
``UploadedFile`` to its model, LangChain as standard content blocks to the
graph. In process; a turn of media parts alone reaches the model too."""

from __future__ import annotations

import base64

import httpx
import pytest

from tests.adapter_apps import register_openai
from tests.adapter_testing import app_client, run_on, thread
from tests.servers import serve

PNG = base64.b64encode(b"\x89PNG fake image bytes").decode()
WAV = base64.b64encode(b"RIFF fake audio").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake").decode()

PARTS = [
    {"type": "text", "text": "what is this?"},
    {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}},
    {"type": "image", "source": {"type": "url", "value": "https://x.test/cat.jpg"}},
    {"type": "audio", "source": {"type": "data", "value": WAV, "mimeType": "audio/wav"}},
    {
        "type": "document",
        "source": {"type": "data", "value": PDF, "mimeType": "application/pdf"},
        "metadata": {"filename": "report.pdf"},
    },
    {
        "type": "document",
        "source": {"type": "file", "value": "file-abc", "provider": "openai"},
    },
    {"type": "video", "source": {"type": "url", "value": "https://x.test/clip.mp4"}},
]


def body(tid: str, content) -> dict:
    return {
        "threadId": tid,
        "runId": f"{tid}-r1",
        "messages": [{"id": f"{tid}-u1", "role": "user", "content": content}],
    }


@pytest.fixture(scope="module")
def fake_url():
    with serve("tests.fake_openai:app", interface="asgi") as url:
        yield url


async def test_openai_gets_content_parts(fake_url):
    tid = thread("oa-parts")
    async with app_client(register_openai, fake_url) as http:
        events = await run_on(http, "/agui/openai", body(tid, PARTS))
    assert events[-1]["type"] == "RUN_FINISHED"
    async with httpx.AsyncClient() as http:
        requests = (await http.get(fake_url + "/requests")).json()
    user = [m for m in requests[-1]["messages"] if m["role"] == "user"][-1]
    assert user["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "report.pdf"},
        },
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "text", "text": "[video attached: https://x.test/clip.mp4]"},
    ]


async def test_openai_gets_a_turn_of_an_image_alone(fake_url):
    tid = thread("oa-image")
    async with app_client(register_openai, fake_url) as http:
        await run_on(http, "/agui/openai", body(tid, PARTS[1:2]))
    async with httpx.AsyncClient() as http:
        requests = (await http.get(fake_url + "/requests")).json()
    user = [m for m in requests[-1]["messages"] if m["role"] == "user"][-1]
    assert user["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    ]


def register_pydantic_recorder(app, seen: list) -> None:
    from agui_bridge.adapters.pydantic_ai import pydantic_ai_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    async def stream(messages, info):
        prompts = [p for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
        seen.append(prompts[-1].content)
        yield "seen"

    app.agent("pyd")(pydantic_ai_agent(Agent(FunctionModel(stream_function=stream))))


async def test_pydantic_ai_gets_binary_content_and_urls():
    from pydantic_ai.messages import BinaryContent, DocumentUrl, ImageUrl, UploadedFile, VideoUrl

    seen: list = []
    tid = thread("pyd-parts")
    async with app_client(register_pydantic_recorder, seen) as http:
        events = await run_on(http, "/agui/pyd", body(tid, PARTS))
        assert events[-1]["type"] == "RUN_FINISHED"
        await run_on(http, "/agui/pyd", body(thread("pyd-image"), PARTS[1:2]))
    content = seen[0]
    assert content[0] == "what is this?"
    assert content[1] == BinaryContent(data=base64.b64decode(PNG), media_type="image/png")
    assert content[2] == ImageUrl(url="https://x.test/cat.jpg")
    assert content[3] == BinaryContent(data=base64.b64decode(WAV), media_type="audio/wav")
    assert isinstance(content[4], BinaryContent) and content[4].media_type == "application/pdf"
    assert isinstance(content[5], UploadedFile) and content[5].file_id == "file-abc"
    assert content[6] == VideoUrl(url="https://x.test/clip.mp4")
    assert seen[1] == [BinaryContent(data=base64.b64decode(PNG), media_type="image/png")]
    assert DocumentUrl  # the url form of a document: pydantic-ai's loader (a unit below)


def test_pydantic_ai_gets_a_document_url():
    from agui_bridge.adapters.pydantic_ai import to_model_messages
    from pydantic_ai.messages import DocumentUrl

    url = {"type": "url", "value": "https://x.test/a.pdf", "mimeType": "application/pdf"}
    message = {"id": "u", "role": "user", "content": [{"type": "document", "source": url}]}
    (request,) = to_model_messages([message])
    assert request.parts[0].content == [DocumentUrl(url="https://x.test/a.pdf")]


def register_langgraph_recorder(app, seen: list) -> None:
    from agui_bridge.adapters.langgraph import langgraph_agent

    from tests.adapter_langgraph import recording_graph

    app.agent("lg")(langgraph_agent(recording_graph(seen)))


async def test_langgraph_gets_standard_content_blocks():
    seen: list = []
    tid = thread("lg-parts")
    async with app_client(register_langgraph_recorder, seen) as http:
        events = await run_on(http, "/agui/lg", body(tid, PARTS))
        assert events[-1]["type"] == "RUN_FINISHED"
        # a second turn on the checkpointed thread: an image alone
        second = body(tid, PARTS[1:2])
        second["runId"] = f"{tid}-r2"
        second["messages"][0]["id"] = f"{tid}-u2"
        await run_on(http, "/agui/lg", second)
    human = seen[0]
    assert human.id == f"{tid}-u1"
    assert human.content == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "base64": PNG, "mime_type": "image/png"},
        {"type": "image", "url": "https://x.test/cat.jpg"},
        {"type": "audio", "base64": WAV, "mime_type": "audio/wav"},
        {
            "type": "file",
            "base64": PDF,
            "mime_type": "application/pdf",
            "extras": {"filename": "report.pdf"},
        },
        {"type": "file", "file_id": "file-abc", "extras": {"provider": "openai"}},
        {"type": "video", "url": "https://x.test/clip.mp4"},
    ]
    assert [b["type"] for b in human.content_blocks] == [
        "text",
        "image",
        "image",
        "audio",
        "file",
        "file",
        "video",
    ]
    assert seen[1].content == [{"type": "image", "base64": PNG, "mime_type": "image/png"}]
