"""A run: the agent task → one transformer → SSE bytes → subscribers → the store.

The run is an asyncio task of its own, so it survives its client: the
response is only a *subscriber* that drains the frames queued for it. Every
frame is encoded once and fanned out as the same bytes.

One transformer per run builds both the wire frames and the thread's new
history. The hot path (a text delta while a text message is open) goes
through ``t.encode(item)``, one boundary crossing that returns the frame; the
delta is appended to the open history message without building any event.
Every other item goes through ``t(item)``: its events are recorded into the
history and written as frames with orjson (the same bytes ``encode`` gives).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import orjson

from . import create_agui_transformer, create_agui_translator
from .context import RunContext, RunInfo

log = logging.getLogger("agui_bridge.runs")

PING = b": ping\n\n"
# An agent that yields without awaiting never lets the response pump run; past
# this many queued bytes the run yields to the loop so the frames go out.
YIELD_AT = 64 * 1024
STALL = 1.0


def frames_of(events: list[dict]) -> bytes:
    return b"".join([b"data: " + orjson.dumps(e) + b"\n\n" for e in events])


class History:
    """The assistant and tool messages of one run, built from its events."""

    __slots__ = (
        "by_id",
        "errored",
        "interrupts",
        "messages",
        "open_tools",
        "run_id",
        "steps",
        "text_id",
        "text_parts",
    )

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.errored = False
        self.messages: list[dict] = []
        self.by_id: dict[str, dict] = {}
        self.text_id: str | None = None
        self.text_parts: list[str] = []
        self.open_tools: dict[str, tuple[dict, list[str], dict]] = {}
        self.steps: list[str] = []
        self.interrupts: list[dict] = []

    def record(self, events: list[dict]) -> None:
        for event in events:
            kind = event["type"]
            if kind == "TEXT_MESSAGE_CONTENT":
                if event["messageId"] == self.text_id:
                    self.text_parts.append(event["delta"])
            elif kind == "TEXT_MESSAGE_START":
                message = {"id": event["messageId"], "role": "assistant", "content": ""}
                self._add(message)
                self.text_id = event["messageId"]
                self.text_parts = []
            elif kind == "TEXT_MESSAGE_END":
                self.close_text()
            elif kind == "TOOL_CALL_START":
                self._tool_start(event)
            elif kind == "TOOL_CALL_ARGS":
                entry = self.open_tools.get(event["toolCallId"])
                if entry is not None:
                    entry[1].append(event["delta"])
            elif kind == "TOOL_CALL_END":
                entry = self.open_tools.pop(event["toolCallId"], None)
                if entry is not None:
                    entry[0]["function"]["arguments"] = "".join(entry[1])
            elif kind == "TOOL_CALL_RESULT":
                self._add(
                    {
                        "id": event["messageId"],
                        "role": "tool",
                        "toolCallId": event["toolCallId"],
                        "content": event["content"],
                    }
                )
            elif kind == "STEP_STARTED":
                self.steps.append(event["stepName"])
            elif kind == "STEP_FINISHED":
                if event["stepName"] in self.steps:
                    self.steps.remove(event["stepName"])
            elif kind == "RUN_FINISHED":
                outcome = event.get("outcome")
                if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
                    self.interrupts = list(outcome.get("interrupts") or [])
            elif kind == "CUSTOM" and event.get("name") == "on_interrupt":
                self._chunk_interrupt(event.get("value"))

    def close_text(self) -> None:
        if self.text_id is not None:
            self.by_id[self.text_id]["content"] = "".join(self.text_parts)
            self.text_id = None
            self.text_parts = []

    def _add(self, message: dict) -> None:
        self.messages.append(message)
        self.by_id[message["id"]] = message

    def _tool_start(self, event: dict) -> None:
        call_id = event["toolCallId"]
        parent = self.by_id.get(event.get("parentMessageId", ""))
        if parent is None or parent["role"] != "assistant":
            parent = self.by_id.get(call_id)
            if parent is None:
                parent = {"id": call_id, "role": "assistant"}
                self._add(parent)
        call = {"id": call_id, "type": "function", "function": {"name": event["toolCallName"]}}
        call["function"]["arguments"] = ""
        parent.setdefault("toolCalls", []).append(call)
        self.open_tools[call_id] = (call, [], parent)

    def _chunk_interrupt(self, value: Any) -> None:
        value = value if isinstance(value, dict) else {"value": value}
        interrupt_id = value.get("interruptId", value.get("id"))
        if not isinstance(interrupt_id, str) or not interrupt_id:
            interrupt_id = f"{self.run_id}:i{len(self.interrupts) + 1}"
        reason = value.get("reason")
        interrupt = {
            "id": interrupt_id,
            "reason": reason if isinstance(reason, str) else "interrupt",
        }
        if isinstance(value.get("message"), str):
            interrupt["message"] = value["message"]
        interrupt["payload"] = value
        self.interrupts.append(interrupt)

    def abort(self) -> None:
        """Drops what was still open (half-written) when the run failed."""
        if self.text_id is not None:
            self._remove(self.by_id[self.text_id])
            self.text_id = None
        for call, _parts, parent in self.open_tools.values():
            parent["toolCalls"].remove(call)
            if not parent["toolCalls"]:
                del parent["toolCalls"]
                if "content" not in parent:
                    self._remove(parent)
        self.open_tools.clear()

    def _remove(self, message: dict) -> None:
        self.messages.remove(message)
        del self.by_id[message["id"]]

    def closing_events(self, message: str, code: str) -> list[dict]:
        """What closes this run's open entities for a subscriber cut off mid-run."""
        events: list[dict] = []
        if self.text_id is not None:
            events.append({"type": "TEXT_MESSAGE_END", "messageId": self.text_id})
        events.extend({"type": "TOOL_CALL_END", "toolCallId": i} for i in self.open_tools)
        events.extend({"type": "STEP_FINISHED", "stepName": s} for s in reversed(self.steps))
        events.append({"type": "RUN_ERROR", "message": message, "code": code})
        return events


class Subscriber:
    """One consumer of a run's frames (an HTTP response).

    ``buf`` holds frames not yet handed to the transport; the response's pump
    drains all of them into one write. ``limit`` bounds what this subscriber
    may make the server hold (see ``ingress.handler``): past it the run cuts
    the subscriber off with a final RUN_ERROR and goes on without it.
    """

    __slots__ = (
        "buf",
        "deadline",
        "done",
        "grace",
        "inflight",
        "limit",
        "overflowed",
        "probe",
        "progress",
        "size",
        "stalled",
        "wake",
    )

    def __init__(self, limit: int | None, probe=None):
        self.buf: list[bytes] = []
        self.size = 0
        self.inflight = 0
        self.done = False
        self.overflowed = False
        self.deadline = None  # the asyncio.Timeout of a send in flight (ASGI)
        self.grace = 5.0
        self.limit = limit
        self.probe = probe
        self.wake = asyncio.Event()
        self.progress = asyncio.Event()  # set by the pump after each write
        self.stalled = False

    def take(self, max_bytes: int | None = None) -> bytes:
        """Everything queued as one write (at most about ``max_bytes`` when given)."""
        buf = self.buf
        if max_bytes is None or self.size <= max_bytes:
            data = b"".join(buf) if len(buf) > 1 else buf[0]
            buf.clear()
            self.size = 0
            return data
        total = 0
        count = 0
        for frame in buf:
            total += len(frame)
            count += 1
            if total >= max_bytes:
                break
        data = b"".join(buf[:count])
        del buf[:count]
        self.size -= len(data)
        return data


class Run:
    def __init__(
        self,
        app,
        agent,
        ctx: RunContext,
        new_messages: list[dict],
        pending: list[dict],
    ):
        self.app = app
        self.agent = agent
        self.ctx = ctx
        self.new_messages = new_messages
        self.pending = pending
        self.crumbs = agent.dialect == "crumbs"
        factory = create_agui_transformer if self.crumbs else create_agui_translator
        self.t = factory(thread_id=ctx.thread_id, run_id=ctx.run_id, state=ctx.state)
        self.history = History(ctx.run_id)
        self.subscribers: list[Subscriber] = []
        self.cancelled = False
        self.pressed = False
        self.ended = False
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.lease: str | None = None
        self._begun = False
        self._first = (
            {"type": "agent:run:start", "runId": ctx.run_id, "sessionId": ctx.thread_id}
            if self.crumbs
            else None
        )
        self.task: asyncio.Task | None = None
        self.info = RunInfo(agent.agent_id, ctx.thread_id, ctx.run_id)
        self.listeners = list(app._listeners)
        self.observer = (
            factory(thread_id=ctx.thread_id, run_id=ctx.run_id, state=ctx.state)
            if (self.listeners)
            else None
        )

    # -- subscribers -------------------------------------------------------

    def subscribe(self, sub: Subscriber) -> None:
        self.subscribers.append(sub)

    def detach(self, sub: Subscriber, reason: str | None = None) -> None:
        """Stops feeding ``sub``; with a reason, its stream ends with RUN_ERROR."""
        # The closing events describe the run after every queued frame.
        self._flush()
        if sub in self.subscribers:
            self.subscribers.remove(sub)
            if reason is not None:
                frame = frames_of(
                    self.history.closing_events(f"stream closed: {reason}", "stream_overflow")
                )
                sub.buf.append(frame)
                sub.size += len(frame)
        sub.done = True
        sub.wake.set()

    def client_left(self, sub: Subscriber) -> None:
        self.detach(sub)
        if self.app.on_disconnect == "cancel" and self.task is not None and not self.task.done():
            self.cancelled = True
            self.task.cancel()

    def _publish(self, frame: bytes) -> None:
        """Queues a frame; the frames of one loop tick reach subscribers together.

        Fanning out per frame cost more than encoding it. A flush is scheduled
        for the next loop iteration, which comes as soon as the agent awaits;
        an agent that never awaits is flushed every YIELD_AT bytes, so the
        bound and the pacing of ``_relieve`` still see its frames.
        """
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(frame)
        self._pending_size += len(frame)
        if self._pending_size > YIELD_AT:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        data = b"".join(pending) if len(pending) > 1 else pending[0]
        self._pending = []
        self._pending_size = 0
        self._fan_out(data)

    def _fan_out(self, frame: bytes) -> None:
        pressed = False
        for sub in tuple(self.subscribers):
            sub.buf.append(frame)
            sub.size += len(frame)
            sub.wake.set()
            if sub.limit is not None and sub.size + sub.inflight > sub.limit:
                self._overflow(sub)
            elif sub.size > YIELD_AT:
                pressed = True
        # A probe-backed subscriber (RSGI) also checks after each write, in the pump.
        self.pressed = pressed

    async def _relieve(self) -> None:
        """Paces the run by a client that is reading; never waits long for one that is not.

        While more than YIELD_AT bytes are queued for a subscriber, the run waits
        for its next write to complete. A subscriber whose write does not
        complete within STALL seconds is not waited for again until one does;
        what it leaves queued counts against its bound.
        """
        waited = False
        for sub in tuple(self.subscribers):
            if sub.size > YIELD_AT and not sub.stalled:
                waited = True
                sub.progress.clear()
                try:
                    async with asyncio.timeout(STALL):
                        await sub.progress.wait()
                except TimeoutError:
                    sub.stalled = True
        if not waited:
            await asyncio.sleep(0)

    def _overflow(self, sub: Subscriber) -> None:
        if sub.overflowed:
            return
        sub.overflowed = True
        if sub.deadline is not None:
            sub.deadline.reschedule(asyncio.get_running_loop().time() + sub.grace)
        log.warning(
            "run %s of thread %s: the client is not reading; closed its stream past %d"
            " buffered bytes (the run goes on)",
            self.ctx.run_id,
            self.ctx.thread_id,
            sub.limit,
        )
        self.detach(sub, "the client did not keep up")

    def _finish_subscribers(self) -> None:
        self._flush()
        for sub in list(self.subscribers):
            self.detach(sub)

    # -- the run -----------------------------------------------------------

    async def _notify(self, item) -> None:
        observer = self.observer
        try:
            events = observer(item) if item is not _FINISH else observer.finish()
        except Exception as error:
            events = observer.fail(error)
        await self._deliver(events)

    async def _notify_fail(self, error: BaseException) -> None:
        await self._deliver(self.observer.fail(error))

    async def _deliver(self, events: list[dict]) -> None:
        for event in events:
            for listener in self.listeners:
                try:
                    result = listener(event, self.info)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_event callback failed")

    def _apply(self, item) -> bytes:
        """Any item: its events go to the history, its frames are returned."""
        t = self.t
        history = self.history
        events = t(item)
        # Only an item off the text hot path can end the run.
        self.ended = t.finished
        if events:
            if events[-1]["type"] == "RUN_ERROR":
                history.abort()
                history.errored = True
            history.record(events)
        return frames_of(events)

    def begin(self) -> None:
        """Queues RUN_STARTED at once, so the response's first write carries it."""
        self._begun = True
        # Straight to the subscribers: the response's first write must find it.
        self._fan_out(self._apply(self._first))

    async def run(self) -> None:
        """The whole run; the task the ingress starts. Never raises."""
        app = self.app
        ctx = self.ctx
        failed = None
        try:
            first = self._first
            if not self._begun:
                self.begin()
            if self.observer is not None:
                await self._notify(first)
            agen = self.agent.fn(ctx)
            # The hot path, kept in locals: a text delta while a text message is
            # open needs no events, only its frame and its text for the history.
            text_of = _crumb_text if self.crumbs else _chunk_text
            history = self.history
            encode = self.t.encode
            publish = self._publish
            observer = self.observer
            try:
                async for item in agen:
                    if history.text_id is not None and (delta := text_of(item)) is not None:
                        frame = encode(item)
                        if frame:
                            history.text_parts.append(delta)
                    else:
                        frame = self._apply(item)
                    if frame:
                        publish(frame)
                        if self.pressed:
                            await self._relieve()
                    if observer is not None:
                        await self._notify(item)
                    if self.ended:
                        break
            finally:
                aclose = getattr(agen, "aclose", None)
                if aclose is not None:
                    await aclose()
            if not self.t.finished:
                events = self.t.finish()
                self.history.record(events)
                self._publish(frames_of(events))
            if self.observer is not None:
                await self._notify(_FINISH)
        except asyncio.CancelledError:
            if self.cancelled:
                log.info(
                    "run %s of thread %s cancelled: its client left", ctx.run_id, ctx.thread_id
                )
                self._finish_subscribers()
                app._release(ctx.thread_id, self)
                return
            # Cancelled from outside (the server is stopping): end the streams.
            self._finish_subscribers()
            app._release(ctx.thread_id, self)
            raise
        except Exception as error:
            failed = error
            log.exception("run %s of thread %s failed", ctx.run_id, ctx.thread_id)
            self.history.abort()
            self.history.errored = True
            events = self.t.fail(error)
            self._publish(frames_of(events))
            if self.observer is not None:
                await self._notify_fail(error)
        try:
            await self._save(failed)
        except Exception:
            log.exception(
                "run %s of thread %s: saving the thread failed", ctx.run_id, ctx.thread_id
            )
        finally:
            self._finish_subscribers()
            app._release(ctx.thread_id, self)

    async def _save(self, failed) -> None:
        history = self.history
        history.close_text()
        # New interrupts replace the pending ones; a run that ends without any
        # settles them, except a failed run, which leaves them pending.
        interrupts = history.interrupts
        if not interrupts and history.errored:
            interrupts = self.pending
        state = self.t.state
        await self.app.store.save(
            self.ctx.thread_id,
            self.agent.agent_id,
            self.new_messages + history.messages,
            state,
            interrupts,
        )


_FINISH = object()


def _crumb_text(item):
    """The delta of a text:delta crumb, else None (the transformer checks its type)."""
    if type(item) is dict and item.get("type") == "text:delta":
        return item.get("delta")
    return None


def _chunk_text(item):
    if type(item) is str:
        return item
    if type(item) is dict and item.get("type") in ("token", "chunk"):
        return item.get("content")
    return None
