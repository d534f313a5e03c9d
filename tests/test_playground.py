"""The playground in a real browser (headless Debian Chromium, tests/browser.py)
against the demo's agent on a granian server (tests/playground_app.py: the
demo's agent, and a gated one whose runs stay live until the test opens their
gate): each step of issue 13's list, with screenshots, and no console error or
warning on any page."""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.servers import serve

WORK = Path(tempfile.mkdtemp(prefix="agui-playground-"))
GATES = WORK / "gates"
GATES.mkdir()
LIVE = "Streaming until the gate opens"
DONE = "Streaming until the gate opens. The gate opened."


@pytest.fixture(scope="module")
def base_url():
    env = {
        "AGUI_DEMO_STORE": f"sqlite:///{WORK}/threads.sqlite",
        "AGUI_DEMO_DELAY": "0.01",
        "AGUI_PLAYGROUND_GATES": str(GATES),
    }
    with serve("tests.playground_app:app", env=env) as url:
        yield url


def open_playground(page, url: str):
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    return page


def send(page, text: str) -> None:
    page.fill("#input", text)
    page.click("#send")


def idle(page) -> None:
    page.wait_for_selector("body[data-run=idle]")


def said(page, text: str) -> None:
    """Waits until an assistant message holds ``text`` (locators: the page's CSP
    forbids the eval that ``wait_for_function`` needs)."""
    page.locator(".message.assistant .content", has_text=text).first.wait_for()


def assistant_texts(page) -> list[str]:
    return page.locator(".message.assistant .content").all_inner_texts()


def verified(page) -> int:
    badge = page.locator("#verifier")
    assert badge.get_attribute("data-state") == "ok", badge.inner_text()
    return int(re.search(r"(\d+) events", badge.inner_text()).group(1))


def thread_of(page) -> str:
    return page.evaluate("new URLSearchParams(location.search).get('thread')")


def open_gate(page) -> None:
    (GATES / thread_of(page)).touch()


def is_cancel(response) -> bool:
    return urlsplit(response.url).path.endswith("/cancel")


def status_of(base_url: str, thread: str) -> str | None:
    """The thread's status on the server (None: not there)."""
    found = httpx.post(f"{base_url}/threads/search", json={"ids": [thread]}, timeout=10)
    return found.json()[0]["status"] if found.json() else None


def test_a_streamed_reply(page, shots, base_url):
    open_playground(page, base_url + "/?agent=gated")
    assert page.locator("#agent").input_value() == "gated"
    shots("empty")
    send(page, "hello")
    # Live: the first words are there, the run is not over.
    page.wait_for_selector("body[data-run=running] #stop:not([disabled])")
    said(page, LIVE)
    assert assistant_texts(page) == [LIVE]
    assert page.locator("#steps li.running").all_inner_texts() == ["waiting running"]
    shots("streaming")
    open_gate(page)
    idle(page)
    assert assistant_texts(page) == [DONE]
    assert page.locator("#timeline [data-type=TEXT_MESSAGE_CONTENT]").count() == 9
    assert '"gate": "open"' in page.locator("#state").inner_text()
    verified(page)
    shots("reply")


def test_tool_call_state_steps_and_timeline(page, shots, base_url):
    open_playground(page, base_url + "/")
    send(page, "what is 6 * 7?")
    call = page.locator(".tool-call").first
    call.wait_for()
    idle(page)
    assert call.locator("b").inner_text() == "calculate"
    assert '"expression": "6 * 7"' in call.locator(".args").inner_text()
    assert '"value": 42' in call.locator(".result").inner_text()
    assert call.locator(".call-status").inner_text() == "done"
    assert assistant_texts(page)[-1] == "6 * 7 = 42."
    # The arguments streamed: several TOOL_CALL_ARGS events in the timeline.
    assert page.locator("#timeline [data-type=TOOL_CALL_ARGS]").count() >= 2
    state = page.locator("#state").inner_text()
    assert '"iteration": 1' in state and '"taskId": "calculate"' in state
    steps = page.locator("#steps li").all_inner_texts()
    assert any(s.startswith("turn_1") for s in steps)
    assert page.locator("#steps li.running").count() == 0
    # Every event is in the timeline with its times; the badge counted each one.
    rows = page.locator("#timeline summary")
    assert rows.count() == verified(page)
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", rows.first.locator("time").inner_text())
    assert rows.nth(1).locator(".since").inner_text().startswith("+")
    page.locator("#timeline [data-type=TOOL_CALL_START] summary").click()
    assert '"toolCallName": "calculate"' in page.locator("#timeline details[open] pre").inner_text()
    shots("tool-call")


def test_interrupt_approved_and_declined_with_the_buttons(page, shots, base_url):
    open_playground(page, base_url + "/")
    for choice, verdict in (("yes", "Approved"), ("no", "Declined")):
        send(page, "approve deleting the draft")
        buttons = page.locator(".interrupt .choices button")
        buttons.first.wait_for()
        # The buttons are the responseSchema's enum (and a cancel).
        assert buttons.all_inner_texts() == ["yes", "no", "Cancel"]
        assert page.locator(".interrupt .question").inner_text() == "approve deleting the draft"
        assert page.locator("#run-status").inner_text() == "waiting for your answer"
        shots(f"interrupt-before-{choice}")
        page.click(f".interrupt button[data-choice={choice}]")
        said(page, f"{verdict}: approve deleting the draft")
        idle(page)
        assert page.locator("#interrupts").is_hidden()
        state = page.locator("#state").inner_text()
        assert f'"status": "{"approved" if choice == "yes" else "declined"}"' in state
        shots(f"interrupt-{verdict.lower()}")
    verified(page)


def test_reload_restores_the_thread(page, shots, base_url):
    # A thread another client made is in the list too (POST /threads/search).
    elsewhere = f"elsewhere-{time.monotonic_ns()}"
    body = {
        "threadId": elsewhere,
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "from another client"}],
    }
    httpx.post(base_url + "/ag-ui/run", json=body, timeout=30).raise_for_status()
    open_playground(page, base_url + "/")
    other = page.locator(f"#thread-list li[data-thread-id='{elsewhere}']")
    assert other.locator(".title").inner_text() == "from another client"
    send(page, "what is 2 + 3?")
    page.locator(".tool-call.done").wait_for()
    idle(page)
    send(page, "approve sending the report")
    page.locator(".interrupt button").first.wait_for()
    thread = thread_of(page)
    before = page.locator(".message").all_inner_texts()
    state = page.locator("#state").inner_text()

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert thread_of(page) == thread
    assert page.locator(".message").all_inner_texts() == before
    assert page.locator("#state").inner_text() == state
    # The tool call and its result, and the pending question, came back.
    assert '"value": 5' in page.locator(".tool-call .result").inner_text()
    assert page.locator(".interrupt .question").inner_text() == "approve sending the report"
    current = page.locator("#thread-list li.current")
    assert current.get_attribute("data-thread-id") == thread
    assert current.locator(".title").inner_text() == "what is 2 + 3?"
    assert current.get_attribute("data-status") == "interrupted"
    shots("reloaded")

    # The restored interrupt still resumes the run.
    page.click(".interrupt button[data-choice=yes]")
    said(page, "Approved: approve sending the report")
    idle(page)
    # A new thread, then back to the first one from the list.
    with page.expect_navigation():
        page.click("#new-thread")
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator(".message").count() == 0
    with page.expect_navigation():
        page.locator(f"#thread-list li[data-thread-id='{thread}'] a").click()
    page.wait_for_selector("body[data-ready=true]")
    assert thread_of(page) == thread
    assert page.locator(".message").count() == len(before) + 1
    shots("thread-list")


def test_a_second_tab_watches_the_live_run_to_its_end(context, page, shots, base_url):
    open_playground(page, base_url + "/?agent=gated")
    send(page, "watch this")
    page.wait_for_selector("body[data-run=running] #stop:not([disabled])")
    said(page, LIVE)
    thread = thread_of(page)

    # A second tab on the same thread joins the live run (GET /threads/{id}/events).
    second = context.new_page()
    open_playground(second, f"{base_url}/?agent=gated&thread={thread}")
    second.wait_for_selector("body[data-run=watching]")
    said(second, LIVE)
    assert assistant_texts(second) == [LIVE]
    assert "watching live run" in second.locator("#run-status").inner_text()
    assert second.locator("#send").is_disabled()
    shots("second-tab-watching", second)

    open_gate(page)
    idle(page)
    idle(second)
    assert assistant_texts(page) == assistant_texts(second) == [DONE]
    assert second.locator("#state").inner_text() == page.locator("#state").inner_text()
    verified(second)
    verified(page)
    shots("second-tab-done", second)

    # Still watching: the next run of the first tab shows up there too.
    (GATES / thread).unlink()
    send(page, "and again")
    second.wait_for_selector("body[data-run=watching]")
    open_gate(page)
    idle(page)
    idle(second)
    assert assistant_texts(second) == [DONE, DONE]
    verified(second)
    shots("first-tab")


def test_stop_a_live_run(page, shots, base_url):
    open_playground(page, base_url + "/?agent=gated")
    send(page, "stop me")
    page.wait_for_selector("body[data-run=running] #stop:not([disabled])")
    said(page, LIVE)
    shots("before-stop")
    with page.expect_response(is_cancel) as cancelled:
        page.click("#stop")
    assert cancelled.value.status == 202
    idle(page)
    # The run ended where it was (its gate never opened), closed for the verifier.
    assert assistant_texts(page) == [LIVE]
    assert page.locator("#timeline [data-type=RUN_FINISHED]").count() == 1
    assert page.locator("#steps li.running").count() == 0
    shots("stopped")
    verified(page)

    # The partial answer was stored, as the browser saw it.
    thread = thread_of(page)
    stored = httpx.get(f"{base_url}/threads/{thread}/state", timeout=10).json()
    assert stored["messages"][-1]["content"] == LIVE
    # And the thread takes the next run.
    open_gate(page)
    send(page, "after the stop")
    said(page, DONE)
    idle(page)
    assert assistant_texts(page) == [LIVE, DONE]
    verified(page)


def test_reasoning_is_shown_collapsed(page, shots, base_url):
    """Contract section 8: the model's reasoning is a collapsed block above the
    answer, opened by a click, and in the timeline."""
    open_playground(page, base_url + "/?agent=thinker")
    send(page, "why")
    said(page, "Answer to why.")
    idle(page)
    block = page.locator("details.message.reasoning")
    assert block.count() == 1
    assert block.get_attribute("open") is None
    assert not block.locator(".content").is_visible()
    assert block.locator("summary").inner_text().lower() == "reasoning · 3 words"
    block.locator("summary").click()
    assert block.locator(".content").inner_text() == "Weighing the question."
    roles = page.locator(".message").evaluate_all("ns => ns.map(n => n.dataset.role)")
    assert roles == ["user", "reasoning", "assistant"]
    assert page.locator("#timeline [data-type=REASONING_MESSAGE_CONTENT]").count() == 3
    verified(page)
    shots("reasoning")


def test_stop_as_the_run_ends_is_no_failure(page, shots, base_url):
    """A Stop that reaches the server after the run ended there (a slow network,
    or a click as a quick run ends): nothing to stop, so no error banner and no
    failed request in the console."""
    open_playground(page, base_url + "/?agent=gated")
    send(page, "stop me late")
    page.wait_for_selector("body[data-run=running] #stop:not([disabled])")
    said(page, LIVE)
    thread = thread_of(page)

    def late(route):
        # The click is made; the run ends on the server before the cancel arrives.
        open_gate(page)
        deadline = time.monotonic() + 15
        while status_of(base_url, thread) == "busy" and time.monotonic() < deadline:
            time.sleep(0.05)
        route.continue_()

    page.route(re.compile(r".*/cancel(\?.*)?$"), late)
    with page.expect_response(is_cancel) as cancelled:
        page.click("#stop")
    assert cancelled.value.status == 202
    # The run's own status: it finished, the stop came too late to change it.
    assert cancelled.value.json()["status"] == "success"
    idle(page)
    assert assistant_texts(page) == [DONE]
    assert page.locator("#run-status").inner_text() == "idle"
    assert page.locator("#error").is_hidden()
    shots("stopped-too-late")
    verified(page)


def test_a_link_to_a_thread_the_server_does_not_have(page, shots, base_url):
    """A thread in the URL the server does not hold (never run, deleted, or a
    server restarted on a memory store): a notice says so, no failed request;
    the first message starts it under that id."""
    thread = f"missing-{time.monotonic_ns()}"
    open_playground(page, f"{base_url}/?agent=demo&thread={thread}")
    notice = page.locator("#notice")
    notice.wait_for()
    assert thread in notice.inner_text()
    assert "not on the server" in notice.inner_text()
    assert page.locator("#error").is_hidden()
    assert page.locator(".message").count() == 0
    shots("missing-thread")
    send(page, "what is 6 * 7?")
    said(page, "6 * 7 = 42.")
    idle(page)
    assert thread_of(page) == thread
    assert status_of(base_url, thread) == "idle"
    assert notice.is_hidden()
    current = page.locator("#thread-list li.current")
    assert current.get_attribute("data-thread-id") == thread
    verified(page)
    shots("missing-thread-started")


def test_another_tabs_list_sees_a_run_end(context, page, shots, base_url):
    """A tab's thread list follows the app's threads without activity of its
    own: a run that ends elsewhere is no longer shown busy."""
    open_playground(page, base_url + "/?agent=gated")
    send(page, "busy for a while")
    page.wait_for_selector("body[data-run=running] #stop:not([disabled])")
    said(page, LIVE)
    thread = thread_of(page)

    other = context.new_page()
    open_playground(other, base_url + "/?agent=gated")
    entry = other.locator(f"#thread-list li[data-thread-id='{thread}']")
    assert entry.get_attribute("data-status") == "busy"
    shots("listed-busy", other)
    open_gate(page)
    idle(page)
    other.locator(f"#thread-list li[data-thread-id='{thread}'][data-status='idle']").wait_for()
    assert other.locator(".message").count() == 0  # nothing happened on its own thread
    shots("listed-idle", other)


def test_an_idle_page_asks_for_its_thread_only(page, shots, base_url):
    """Once open, the page's looks at its thread read the state alone: the
    search that tells a thread the server lacks is asked when the page opens it."""
    open_playground(page, base_url + "/?agent=demo")
    send(page, "what is 6 * 7?")
    said(page, "6 * 7 = 42.")
    idle(page)
    searched: list[str] = []
    page.on(
        "request",
        lambda r: (
            searched.append(r.url)
            if urlsplit(r.url).path.endswith("/threads/search")
            and thread_of(page) in (r.post_data or "")
            else None
        ),
    )
    page.wait_for_timeout(3000)
    assert searched == [], searched
