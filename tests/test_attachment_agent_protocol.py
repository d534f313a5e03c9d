"""Attachments over the Agent Protocol, driven by the real ``langgraph-sdk``
(issue 20): a human message's LangChain content blocks (standard, older
``source_type`` and OpenAI ``image_url`` forms) become AG-UI parts the agent
gets as ``ctx.parts``; the thread keeps them and gives them back as standard
blocks; the part guards answer 422 (413 past ``max_part_bytes``), naming the
block."""

from __future__ import annotations

import base64

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

from tests.servers import serve

PNG = base64.b64encode(b"\x89PNG tiny").decode()
PDF = base64.b64encode(b"%PDF tiny").decode()


@pytest.fixture(scope="module")
def base_url():
    with serve("tests.attachment_apps:app") as url:
        yield url


@pytest.fixture
async def client(base_url):
    client = get_client(url=base_url, api_key=None)
    yield client
    await client.aclose()


async def test_content_blocks_reach_the_agent_and_come_back_whole(client):
    thread_id = (await client.threads.create())["thread_id"]
    blocks = [
        {"type": "text", "text": "what are these?"},
        {"type": "image", "base64": PNG, "mime_type": "image/png", "id": "b1"},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
        {"type": "file", "source_type": "base64", "data": PDF, "mime_type": "application/pdf"},
        {
            "type": "file",
            "file_id": "file-abc",
            "extras": {"filename": "r.pdf", "provider": "openai"},
        },
    ]
    values = await client.runs.wait(
        thread_id, "parts", input={"messages": [{"role": "human", "content": blocks}]}
    )
    human, ai = values["messages"]
    assert ai["content"] == (
        "text='what are these?' parts=image/data,image/url,document/data,document/file"
    )
    standard = [
        blocks[0],
        blocks[1],
        {"type": "image", "url": "https://x.test/cat.jpg"},
        {"type": "file", "base64": PDF, "mime_type": "application/pdf"},
        blocks[4],
    ]
    assert human["type"] == "human" and human["content"] == standard
    state = await client.threads.get_state(thread_id)
    assert state["messages"][0]["content"] == [
        {"type": "text", "text": "what are these?"},
        {
            "type": "image",
            "id": "b1",
            "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
        },
        {"type": "image", "source": {"type": "url", "value": "https://x.test/cat.jpg"}},
        {
            "type": "document",
            "source": {"type": "data", "value": PDF, "mimeType": "application/pdf"},
        },
        {
            "type": "document",
            "source": {"type": "file", "value": "file-abc", "provider": "openai"},
            "metadata": {"filename": "r.pdf"},
        },
    ]
    thread = await client.threads.get(thread_id)
    assert thread["values"]["messages"][0]["content"] == standard
    # the blocks as they came back are accepted again, to the same parts
    again = await client.runs.wait(
        thread_id, "parts", input={"messages": [{"role": "human", "content": standard}]}
    )
    assert again["messages"][-1]["content"] == ai["content"]


@pytest.mark.parametrize(
    ("block", "words"),
    [
        pytest.param({"type": "image", "url": "http://x.test/a.png"}, "scheme", id="scheme"),
        pytest.param({"type": "sticker"}, "sticker", id="unknown"),
        pytest.param(
            {"type": "image", "mime_type": "image/png"}, "base64, url or file_id", id="empty"
        ),
        pytest.param(
            {"type": "image", "base64": "@@", "mime_type": "image/png"}, "base64", id="bad-data"
        ),
        pytest.param(
            {"type": "image_url", "image_url": {"url": "https://[::1"}},
            "not a valid URL",
            id="bad-url",
        ),
    ],
)
async def test_a_block_the_guards_refuse_is_422_naming_it(client, block, words):
    thread_id = (await client.threads.create())["thread_id"]
    content = [{"type": "text", "text": "x"}, block]
    with pytest.raises((UnprocessableEntityError, httpx.HTTPStatusError)) as caught:
        await client.runs.wait(
            thread_id, "parts", input={"messages": [{"role": "human", "content": content}]}
        )
    assert caught.value.response.status_code == 422
    message = caught.value.response.json()["error"]["message"]
    assert "input.messages[0].content[1]" in message and words in message


def test_a_part_over_max_part_bytes_is_413():
    with serve("tests.attachment_apps:small") as url:
        thread_id = httpx.post(url + "/threads", json={}).json()["thread_id"]
        big = base64.b64encode(b"x" * 1001).decode()
        content = [{"type": "image", "base64": big, "mime_type": "image/png"}]
        body = {
            "assistant_id": "parts",
            "input": {"messages": [{"role": "human", "content": content}]},
        }
        response = httpx.post(f"{url}/threads/{thread_id}/runs/wait", json=body)
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["code"] == "part_too_large" and "content[0]" in error["message"]


def test_a_legacy_binary_part_in_an_agent_protocol_message_is_upgraded():
    from agui_bridge.agent_protocol.messages import to_agui

    legacy = {"type": "binary", "mimeType": "image/png", "url": "https://x.test/a.png"}
    message = to_agui({"role": "human", "content": [legacy], "id": "h1"}, 0)
    assert message["content"] == [
        {
            "type": "image",
            "source": {"type": "url", "value": legacy["url"], "mimeType": "image/png"},
        }
    ]
