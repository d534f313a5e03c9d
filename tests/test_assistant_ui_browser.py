"""assistant-ui's AG-UI runtime (``examples/assistant-ui``) in headless Chromium.

Issue 20's proof, as a user of assistant-ui would try it: the example's page
(``@assistant-ui/react`` 0.15.22 primitives on ``@assistant-ui/react-ag-ui``
0.0.58's runtime over ``@ag-ui/client``'s ``HttpAgent``, pinned by its lockfile,
bundled by its pinned esbuild) served beside ``agui_bridge.demo:app`` with
SQLite threads (``examples/assistant-ui/server.py`` under granian). After each
step the thread as agui-bridge stored it (``GET /threads/{id}/state``) equals
what the page shows; the console stays clean (``tests/browser.py`` fails a test
on any console error or warning); screenshots of each step go under the folder
pytest prints at the end.

The example's npm packages come from its lockfile (``make assistant-ui-example``,
part of ``make test``: ``npm ci``); the page is rebuilt when its sources, build
script, lockfile or ``clients/js/stop.mjs`` change (a digest in ``dist/.inputs``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.servers import serve, server_log

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "assistant-ui"
# What the built page depends on: a change to any of them rebuilds it.
BUILD_INPUTS = (
    EXAMPLE / "package-lock.json",
    EXAMPLE / "build.mjs",
    EXAMPLE / "src",
    ROOT / "clients" / "js" / "stop.mjs",
)
ASKED = "I need your approval to deleting the draft."
APPROVED = "Approved: approve deleting the draft. Done."
# A 1x1 PNG, what the user attaches.
DOT = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
# What the page shows: user and assistant text, reasoning (collapsed), and the
# images a user message carries (their data URLs), in the page's order.
SHOWN = """() => [...document.querySelectorAll(
  "[data-testid=user-message], [data-testid=assistant-message]")].flatMap((message) => {
  const role = message.dataset.testid === "user-message" ? "user" : "assistant";
  const parts = [...message.querySelector(".text").children].map((part) =>
    part.matches("details.reasoning")
      ? ["reasoning", part.querySelector("p").textContent.trim()]
      : [role, part.textContent.trim()]);
  const images = [...message.querySelectorAll("[data-testid=attachment] img")].map(
    (img) => ["image", img.getAttribute("src")]);
  return [...parts, ...images];
})"""


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"the assistant-ui example is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in BUILD_INPUTS:
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                digest.update(str(file.relative_to(ROOT)).encode() + b"\0")
                digest.update(file.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def built():
    """The example's page, built by its build.mjs (`npm run build`), skipped when up to date."""
    node = shutil.which("node")
    if not node:
        _unavailable("node is not installed")
    if not (EXAMPLE / "node_modules" / ".package-lock.json").is_file():
        _unavailable("its npm packages are not installed: run `make assistant-ui-example`")
    stamp = EXAMPLE / "dist" / ".inputs"
    digest = _inputs_digest()
    if not stamp.is_file() or stamp.read_text() != digest:
        done = subprocess.run(
            [node, "build.mjs"], cwd=EXAMPLE, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, f"the example did not build:\n{done.stdout}{done.stderr}"
        assert not done.stderr, f"the example's build warned:\n{done.stderr}"
        stamp.write_text(digest)


@pytest.fixture(scope="module")
def example(built, tmp_path_factory):
    """The page and the demo (SQLite threads) on one origin; the demo's routes under /api."""
    store = tmp_path_factory.mktemp("assistant-ui") / "threads.sqlite"
    env = {"AGUI_DEMO_STORE": f"sqlite:///{store}"}
    with serve("server:web", env=env, interface="asgi", cwd=EXAMPLE) as base_url:
        yield base_url
        logged = server_log(base_url)
        assert "Traceback" not in logged and "[ERROR]" not in logged, logged


def open_chat(page, base_url: str, query: str = "") -> str:
    """A new chat; its thread id (the page puts it in the URL)."""
    from playwright.sync_api import expect

    page.goto(base_url + "/" + query)
    expect(page.get_by_label("Message")).to_be_editable()
    return thread_of(page)


def thread_of(page) -> str:
    return parse_qs(urlparse(page.url).query)["thread"][0]


def send(page, text: str) -> None:
    """Types and sends ``text`` once the page is idle (assistant-ui sends nothing
    while a run is going: Enter then does nothing)."""
    idle(page)
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def idle(page) -> None:
    """No run, and every text part shown whole (assistant-ui's text part may still
    be typing out what has arrived: its data-status stays "running" until then)."""
    from playwright.sync_api import expect

    expect(page.locator("[data-field=running]")).to_have_text("idle")
    expect(page.locator(".text [data-status=running]")).to_have_count(0)


def shown(page) -> list[tuple[str, str]]:
    """The conversation as the page shows it: (role, text) per text or reasoning part."""
    return [tuple(part) for part in page.evaluate(SHOWN)]


def stored(base_url: str, thread_id: str) -> list[tuple[str, str]]:
    """The thread as agui-bridge stored it (tool results are not shown as messages):
    (role, text) per text part, ("image", data URL) per image part."""
    response = httpx.get(f"{base_url}/api/threads/{thread_id}/state", timeout=10)
    assert response.status_code == 200, response.text
    out = []
    for message in response.json()["messages"]:
        role, content = message["role"], message.get("content") or ""
        if role not in ("user", "assistant", "reasoning"):
            continue
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if part["type"] == "text" and part["text"]:
                out.append((role, part["text"]))
            elif part["type"] == "image":
                source = part["source"]
                value = source["value"]
                if source["type"] == "data":
                    value = f"data:{source['mimeType']};base64,{value}"
                out.append(("image", value))
    return out


def texts(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, text) per text part of AG-UI messages (what ``shown`` reads of text)."""
    out = []
    for message in messages:
        content = message.get("content") or ""
        if message["role"] not in ("user", "assistant", "reasoning"):
            continue
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if part["type"] == "text" and part["text"]:
                out.append((message["role"], part["text"]))
    return out


def branches(base_url: str, thread_id: str) -> list[dict]:
    """The thread's old branches (GET /threads/{id}/branches), each with its messages."""
    listed = httpx.get(f"{base_url}/api/threads/{thread_id}/branches", timeout=10)
    assert listed.status_code == 200, listed.text
    out = []
    for branch in listed.json()["branches"]:
        url = f"{base_url}/api/threads/{thread_id}/branches/{branch['branchId']}"
        response = httpx.get(url, timeout=10)
        assert response.status_code == 200, response.text
        out.append(response.json())
    return out


def assert_stored_is_shown(page, base_url: str) -> list[tuple[str, str]]:
    idle(page)
    now = shown(page)
    assert now == stored(base_url, thread_of(page))
    return now


def test_send_reasoning_and_reload_with_an_approval_pending(page, shots, example):
    """Send, reasoning shown (collapsed), an approval asked, the page reloaded while
    it is pending: the approval is back (from metadata.custom.agui.interrupts) and
    answering it resumes the run."""
    from playwright.sync_api import expect

    open_chat(page, example)
    assistant = page.get_by_test_id("assistant-message")
    send(page, "hello there")
    expect(assistant.last).to_contain_text("You said: 'hello there'. This is turn 1")
    assert_stored_is_shown(page, example)
    shots("sent")

    send(page, "think about tea")
    expect(assistant.last).to_contain_text("I thought about tea.")
    reasoning = assistant.last.get_by_test_id("reasoning")
    expect(reasoning).to_contain_text("The user wants me to think about tea.")
    assert reasoning.get_attribute("open") is None, "reasoning is shown collapsed"
    after = assert_stored_is_shown(page, example)
    assert ("reasoning", "The user wants me to think about tea.") in after
    shots("reasoning")

    approval = page.get_by_role("group", name="approval")
    send(page, "approve deleting the draft")
    expect(approval).to_contain_text("approve deleting the draft")
    expect(assistant.last).to_contain_text(ASKED)
    before = assert_stored_is_shown(page, example)
    shots("approval asked")

    page.reload()
    expect(approval).to_contain_text("approve deleting the draft")
    expect(assistant.last).to_contain_text(ASKED)
    assert shown(page) == before
    # The reasoning is back inside its answer, as the live page showed it.
    expect(assistant).to_have_count(3)
    expect(assistant.nth(1).get_by_test_id("reasoning")).to_contain_text("think about tea")
    expect(assistant.nth(1)).to_contain_text("I thought about tea.")
    shots("reloaded while asked")

    approval.get_by_role("button", name="Approve").click()
    expect(assistant.last).to_contain_text(APPROVED)
    expect(approval).to_have_count(0)
    done = assert_stored_is_shown(page, example)
    assert done[-1] == ("assistant", APPROVED)

    page.reload()
    expect(assistant.last).to_contain_text(APPROVED)
    expect(approval).to_have_count(0)
    assert shown(page) == done
    shots("reloaded")


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("", id="cancel-helper"),
        pytest.param("?stop=abort", id="abort-only"),
    ],
)
def test_stop_then_type(page, shots, example, query):
    """Stop in the middle of an answer, then type at once: the new message is
    taken (no 409 run_active), and the stored thread is what the page shows, the
    stopped answer as the page left it (the page resends it, a prefix of what the
    server kept: the server cuts its copy to it, the longer one kept on a branch).

    With clients/js stop.mjs (cancel-helper) the Stop cancels the run; with
    assistant-ui's Stop alone (abort-only: the request is aborted) the run has no
    reader left and the next run supersedes it."""
    from playwright.sync_api import expect

    open_chat(page, example, query)
    assistant = page.get_by_test_id("assistant-message")
    send(page, "count to 400")
    expect(assistant.last).to_contain_text("1 2 3")
    page.get_by_role("button", name="Stop").click()
    idle(page)
    stopped = shown(page)[-1]
    assert stopped[0] == "assistant" and not stopped[1].endswith("400."), stopped
    shots("stopped")

    send(page, "hello again")
    expect(assistant.last).to_contain_text("You said: 'hello again'. This is turn 2")
    now = assert_stored_is_shown(page, example)
    assert now[1] == stopped
    shots("typed")

    page.reload()
    expect(assistant).to_have_count(2)
    assert shown(page) == now


def test_image_attachment(page, shots, example):
    """An image attached to a message (assistant-ui's image adapter: an AG-UI
    image part with a base64 data source) reaches the agent, is stored whole
    and comes back whole after a reload."""
    from playwright.sync_api import expect

    open_chat(page, example)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach").click()
    chooser.value.set_files(files=[{"name": "dot.png", "mimeType": "image/png", "buffer": DOT}])
    expect(page.get_by_test_id("composer-attachment")).to_contain_text("dot.png")
    send(page, "what is in this picture")
    assistant = page.get_by_test_id("assistant-message")
    expect(assistant.last).to_contain_text(
        "You said: 'what is in this picture'. I got image dot.png."
    )
    data_url = "data:image/png;base64," + base64.b64encode(DOT).decode()
    now = assert_stored_is_shown(page, example)
    assert now[:2] == [("user", "what is in this picture"), ("image", data_url)]
    shots("attached")

    page.reload()
    expect(assistant).to_have_count(1)
    expect(page.get_by_test_id("attachment")).to_contain_text("dot.png")
    assert shown(page) == now
    shots("reloaded")


def test_regenerate(page, shots, example):
    """Regenerate resends the history up to the answered user message under a
    new runId: the agent answers that message again, the new answer replaces the
    old one on the thread's current branch (the old one kept as a sibling)."""
    from playwright.sync_api import expect

    open_chat(page, example)
    assistant = page.get_by_test_id("assistant-message")
    send(page, "hello there")
    expect(assistant.last).to_contain_text("You said: 'hello there'. This is turn 1")
    first = assert_stored_is_shown(page, example)
    shots("answered")

    assistant.last.get_by_role("button", name="Regenerate").click()
    expect(assistant.last.get_by_test_id("branches")).to_contain_text("2 / 2")
    expect(assistant.last).to_contain_text("You said: 'hello there'. This is turn 1")
    assert assert_stored_is_shown(page, example) == first
    # The old answer is kept as a branch of its own (the page's "1 / 2").
    (old,) = branches(example, thread_of(page))
    assert texts(old["messages"]) == first
    shots("regenerated")

    page.reload()
    expect(assistant).to_have_count(1)
    assert shown(page) == first

    send(page, "and then")
    expect(assistant.last).to_contain_text("You said: 'and then'. This is turn 2")
    expect(assistant.last).to_contain_text("(2 earlier messages)")
    assert_stored_is_shown(page, example)
    shots("continued")


def test_edit(page, shots, example):
    """Edit resends the history up to the edited message, which gets a new id:
    the thread's current branch becomes the edited message and its answer (the
    old tail kept as a sibling)."""
    from playwright.sync_api import expect

    open_chat(page, example)
    assistant = page.get_by_test_id("assistant-message")
    user = page.get_by_test_id("user-message")
    send(page, "hello there")
    expect(assistant.last).to_contain_text("You said: 'hello there'.")
    send(page, "what about tea")
    expect(assistant.last).to_contain_text("You said: 'what about tea'. This is turn 2")
    before = assert_stored_is_shown(page, example)
    shots("two turns")

    user.last.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Edit message")
    editor.fill("what about coffee")
    page.get_by_role("button", name="Save").click()
    expect(assistant.last).to_contain_text("You said: 'what about coffee'. This is turn 2")
    expect(user.last.get_by_test_id("branches")).to_contain_text("2 / 2")
    now = assert_stored_is_shown(page, example)
    assert [text for role, text in now if role == "user"] == ["hello there", "what about coffee"]
    shots("edited")

    # The old branch is kept whole: what the page showed before the edit. (The
    # page's own "1 / 2" is not it: assistant-ui drops the edited original from
    # its old branch, showing [u1, a1, a2].)
    (old,) = branches(example, thread_of(page))
    assert texts(old["messages"]) == before

    page.reload()
    expect(assistant).to_have_count(2)
    assert shown(page) == now
    shots("reloaded")

    # Editing the first message sends it alone under a new id, none of the
    # thread's messages: on the example's App (clients_resend) that is the
    # conversation started over, a branch from the thread's start. It was
    # appended after everything (stored [u1, a1, u2, a2, u9, a9], shown [u9, a9]).
    user.first.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Edit message")
    editor.fill("good morning")
    page.get_by_role("button", name="Save").click()
    expect(assistant.last).to_contain_text("You said: 'good morning'. This is turn 1")
    expect(assistant).to_have_count(1)
    started_over = assert_stored_is_shown(page, example)
    assert [text for role, text in started_over if role == "user"] == ["good morning"]
    first, second = branches(example, thread_of(page))
    assert texts(first["messages"]) == before and texts(second["messages"]) == now
    shots("first message edited")

    page.reload()
    expect(assistant).to_have_count(1)
    assert shown(page) == started_over
