"""A run: the agent task → one transformer → frames with ids → the run log → the store.

The run is an asyncio task of its own, so it survives its client. It appends
every frame, once, to its log; every response (the POST that started it, a
reconnect, a viewer) is a cursor on that log (``runs.cursor``), so the run
never waits for a reader and a reader never costs a copy.

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

import orjson

from .. import create_agui_repairer, create_agui_transformer, create_agui_translator
from ..context import RunContext, RunInfo
from ..errors import LeaseLost, RunsUnavailable, ServerShutdown, StoreUnavailable
from ..store.lease import save
from .history import History
from .log import RunLog

log = logging.getLogger("agui_bridge.runs")

# An agent that yields without awaiting never lets the readers run; past this
# many unflushed bytes the run appends them and yields to the loop.
YIELD_AT = 64 * 1024

# What opens and closes a span a joining reader must see re-opened.
_OPENS = {
    "TEXT_MESSAGE_START": ("t", "messageId"),
    "TOOL_CALL_START": ("c", "toolCallId"),
    "STEP_STARTED": ("s", "stepName"),
}
_CLOSES = {
    "TEXT_MESSAGE_END": ("t", "messageId"),
    "TOOL_CALL_END": ("c", "toolCallId"),
    "STEP_FINISHED": ("s", "stepName"),
}


class ClientLeft(Exception):
    """The run was cancelled because its client left (``on_disconnect="cancel"``)."""


class Run:
    def __init__(
        self,
        app,
        agent,
        ctx: RunContext,
        new_messages: list[dict],
        pending: list[dict],
        run_log: RunLog | None = None,
        base: list[dict] | None = None,
        sink=None,
        lease=None,
    ):
        self.app = app
        self.agent = agent
        self.ctx = ctx
        self.new_messages = new_messages
        self.pending = pending
        # The thread's messages before this run's output (for a joining reader).
        self.base = base if base is not None else list(ctx.history) + new_messages
        self.lease = lease  # fences the run's save (see store/lease.py)
        self._ending: list[dict] = []  # the terminal events, appended once the save is done
        self.crumbs = agent.dialect == "crumbs"
        factory = _FACTORIES[agent.dialect]
        # Ids generated from a reused runId skip the ids the thread holds (the
        # transformer takes its own copy of them; History only keeps the reference).
        held = ctx.held
        # The transformer numbers every event (1 for RUN_STARTED); with
        # event_ids its frames carry them, and t.last_id is the log's position.
        self.ids = getattr(app, "event_ids", True)
        self.t = factory(
            thread_id=ctx.thread_id,
            run_id=ctx.run_id,
            state=ctx.state,
            held_ids=held,
            event_ids=self.ids,
        )
        self.history = History(ctx.run_id, held)
        self.log = run_log if run_log is not None else RunLog(ctx.thread_id, ctx.run_id)
        # Where the frames go: the log itself (memory), or a writer to a log
        # shared by several nodes, which feeds this node's log back (runs.redis).
        self.out = sink if sink is not None else self.log
        if sink is None:
            self.log.run = self
        else:
            sink.bind(self)
        self._spans: list = []  # what the frames not yet flushed open and close
        self.lost = False  # the log refused this run's frames (its lease was taken over)
        self.unavailable: BaseException | None = None  # the shared log is unreachable
        self.cancelled = False  # the client left and on_disconnect="cancel"
        self.stopping = False  # POST …/cancel
        self.shutting_down = False  # the server is stopping
        self.ended = False
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._begun = False
        self._first = _first_item(agent.dialect, ctx)
        self.task: asyncio.Task | None = None
        self.info = RunInfo(agent.agent_id, ctx.thread_id, ctx.run_id)
        self.listeners = list(app._listeners)
        self.observer = (
            factory(thread_id=ctx.thread_id, run_id=ctx.run_id, state=ctx.state, held_ids=held)
            if (self.listeners)
            else None
        )

    # -- readers -------------------------------------------------------------

    def client_left(self) -> None:
        """The response that started the run lost its client."""
        if self.app.on_disconnect == "cancel" and self.task is not None and not self.task.done():
            self.cancelled = True
            self.task.cancel()

    def stop(self) -> bool:
        """Stops the live run (POST …/cancel); False when it already ended."""
        if self.t.finished or self.task is None or self.task.done() or self.stopping:
            return False
        self.stopping = True
        self.task.cancel()
        return True

    def shutdown(self) -> bool:
        """Ends the live run because the server is stopping; False when it already ended."""
        if self.t.finished or self.task is None or self.task.done() or self.stopping:
            return False
        self.shutting_down = True
        self.task.cancel()
        return True

    def log_failed(self, lost: bool, error: BaseException | None = None) -> None:
        """The shared log refused the frames (``lost``: the lease was taken over)
        or cannot be reached: the agent stops; nothing more reaches the log."""
        if self.t.finished or self.task is None or self.task.done():
            return
        if lost:
            self.lost = True
        else:
            self.unavailable = error or RunsUnavailable("the run log is unreachable")
        self.task.cancel()

    def snapshot(self) -> tuple[list[dict], dict]:
        """The thread's messages with this run's progress so far, and the state."""
        return self.base + self.history.snapshot_messages(), self.t.state

    # -- frames --------------------------------------------------------------

    def _frames(self, events: list[dict]) -> bytes:
        """The frames of ``events`` (the transformer numbered them), and the spans
        they open or close."""
        out = []
        n = self.t.last_id - len(events)
        ids = self.ids
        spans = self._spans
        for event in events:
            n += 1
            data = b"data: " + orjson.dumps(event) + b"\n\n"
            kind = event["type"]
            opens = _OPENS.get(kind)
            if opens is not None:
                spans.append(("o", n, opens[0], event.get(opens[1]), data))
            else:
                closes = _CLOSES.get(kind)
                if closes is not None:
                    spans.append(("c", n, closes[0], event.get(closes[1])))
            out.append(b"id: %d\n" % n + data if ids else data)
        return b"".join(out)

    def _publish(self, frame: bytes) -> bool:
        """Queues a frame; the frames of one loop tick reach the log together.

        A flush is scheduled for the next loop iteration, which comes as soon
        as the agent awaits; an agent that never awaits is flushed every
        YIELD_AT bytes (True: the caller then yields to the loop).
        """
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(frame)
        self._pending_size += len(frame)
        if self._pending_size > YIELD_AT:
            self.flush()
            return True
        return False

    def flush(self, last_id: int | None = None) -> None:
        """Appends the queued frames; ``last_id`` is the last one's (default: the
        transformer's last event)."""
        pending = self._pending
        if not pending:
            return
        data = b"".join(pending) if len(pending) > 1 else pending[0]
        self._pending = []
        self._pending_size = 0
        spans = self._spans
        if spans:
            self._spans = []
        self.out.append(data, self.t.last_id if last_id is None else last_id, spans)

    def _end_log(self) -> None:
        self.flush()
        if self.out.ended:
            return
        self.history.close_text()
        self.out.end()
        runs = getattr(self.app, "runs", None)
        if runs is not None and self.out is self.log:
            runs.ended(self.log)

    # -- the run -------------------------------------------------------------

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
                # What readers saw before the error stays, closed, as in their
                # reducers (a shutdown or a cancel keeps it the same way).
                history.errored = True
            history.record(events)
        return self._frames(events)

    def _terminal(self, events: list[dict]) -> None:
        """The run's last events go to its history; readers get them once the
        thread is saved (``_publish_end``): RUN_FINISHED means the turn is stored."""
        self.history.record(events)
        self.flush(self.t.last_id - len(events))  # the frames before them
        self._ending = events

    def _publish_end(self, refused: BaseException | None = None) -> None:
        """Appends the terminal events; a RUN_FINISHED whose save was refused
        becomes RUN_ERROR (same id: the closers before it are unchanged)."""
        events, self._ending = self._ending, []
        if refused is not None and events and events[-1]["type"] == "RUN_FINISHED":
            known = isinstance(refused, (LeaseLost, StoreUnavailable))
            code = type(refused).__name__ if known else "save_failed"
            message = str(refused) if isinstance(refused, LeaseLost) else _SAVE_FAILED
            events = [*events[:-1], {"type": "RUN_ERROR", "message": message, "code": code}]
        frame = self._frames(events)
        if frame:
            self._pending.append(frame)
        self.flush()

    def begin(self) -> None:
        """Appends RUN_STARTED at once, so the response's first write carries it."""
        self._begun = True
        events = self.t(self._first)
        self.history.record(events)
        self.log.started = b"data: " + orjson.dumps(events[0]) + b"\n\n"
        frames = self._frames(events)
        spans = self._spans
        self._spans = []
        self.out.append(frames, self.t.last_id, spans)

    async def run(self) -> None:
        """The whole run; the task the ingress starts. Never raises but for shutdown."""
        app = self.app
        ctx = self.ctx
        failed = None
        finishing = False
        try:
            first = self._first
            if not self._begun:
                self.begin()
            if self.observer is not None:
                await self._notify(first)
            agen = self.agent.fn(ctx)
            # The hot path, kept in locals: a text delta while a text message is
            # open needs no events, only its frame and its text for the history.
            history = self.history
            text_of = _text_of(self.agent.dialect, history)
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
                    if frame and publish(frame):
                        await asyncio.sleep(0)
                    if observer is not None:
                        await self._notify(item)
                    if self.ended:
                        break
            finally:
                aclose = getattr(agen, "aclose", None)
                if aclose is not None:
                    await aclose()
            self._terminal(self.t.finish())
            finishing = self.observer is not None  # told once the save is done
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.lost:
                # Another node ended this run in the log (run_lost) and the
                # thread may have a new run: nothing of this one is written.
                if task is not None:
                    task.uncancel()
                log.error("run %s of thread %s: its lease was lost", ctx.run_id, ctx.thread_id)
                self._pending = []
                await app._release(ctx.thread_id, self)
                self._end_log()
                return
            if self.unavailable is not None:
                # The readers got RUN_ERROR runs_unavailable from their nodes;
                # the partial answer is stored as they saw it.
                if task is not None:
                    task.uncancel()
                log.error(
                    "run %s of thread %s ended: %s", ctx.run_id, ctx.thread_id, self.unavailable
                )
                self.history.errored = True
                self._terminal(self.t.fail(RunsUnavailable(str(self.unavailable))))
            elif self.stopping:
                # A stop is not an error: what is open is closed, RUN_FINISHED,
                # and the partial answer is stored.
                if task is not None:
                    task.uncancel()
                log.info("run %s of thread %s stopped", ctx.run_id, ctx.thread_id)
                self._terminal(self.t.finish())
            elif self.shutting_down:
                # Readers get closers + RUN_ERROR (code server_shutdown); the
                # partial answer is stored and pending interrupts stay pending.
                if task is not None:
                    task.uncancel()
                log.warning("run %s of thread %s ended: server shutdown", ctx.run_id, ctx.thread_id)
                self.history.errored = True
                self._terminal(self.t.fail(ServerShutdown("the server is shutting down")))
            elif self.cancelled:
                log.info(
                    "run %s of thread %s cancelled: its client left", ctx.run_id, ctx.thread_id
                )
                self._terminal(self.t.fail(ClientLeft("the client left")))
                self._publish_end()
                await app._release(ctx.thread_id, self)
                self._end_log()
                return
            else:
                # Cancelled from outside (the server is stopping): end the log.
                self.flush()
                self.out.end()
                await app._release(ctx.thread_id, self)
                raise
        except Exception as error:
            failed = error
            log.exception("run %s of thread %s failed", ctx.run_id, ctx.thread_id)
            self.history.errored = True
            self._terminal(self.t.fail(error))
            if self.observer is not None:
                await self._notify_fail(error)
        refused = None
        try:
            await self._save(failed)
        except LeaseLost as error:
            refused = error
            log.error("run %s of thread %s: %s", ctx.run_id, ctx.thread_id, error)
        except Exception as error:
            refused = error
            log.exception(
                "run %s of thread %s: saving the thread failed", ctx.run_id, ctx.thread_id
            )
        finally:
            self._publish_end(refused)
            if finishing:
                await (self._notify(_FINISH) if refused is None else self._notify_fail(refused))
            await app._release(ctx.thread_id, self)
            self._end_log()

    async def _save(self, failed) -> None:
        history = self.history
        history.close_text()
        # New interrupts replace the pending ones; a run that ends without any
        # settles them, except a failed run, which leaves them pending.
        interrupts = history.interrupts
        if not interrupts and history.errored:
            interrupts = self.pending
        state = self.t.state
        await save(
            self.app.store,
            self.ctx.thread_id,
            self.agent.agent_id,
            history.messages,  # the user's turn was stored when the run started
            state,
            interrupts,
            self.lease,
        )


_FINISH = object()
_SAVE_FAILED = "the thread could not be saved; this turn's answer is not stored"

_FACTORIES = {
    "crumbs": create_agui_transformer,
    "chunks": create_agui_translator,
    "events": create_agui_repairer,
}


def _first_item(dialect: str, ctx):
    """What starts the run with the thread's ids, whatever the agent yields first."""
    if dialect == "crumbs":
        return {"type": "agent:run:start", "runId": ctx.run_id, "sessionId": ctx.thread_id}
    if dialect == "events":
        return {"type": "RUN_STARTED", "threadId": ctx.thread_id, "runId": ctx.run_id}
    # For chunks an empty token, which gives RUN_STARTED and nothing else
    # (None would count as ignored).
    return ""


def _text_of(dialect: str, history: History):
    if dialect == "crumbs":
        return _crumb_text
    if dialect == "chunks":
        return _chunk_text

    def event_text(item):
        # Only content for the message open in the history: any other one opens a message.
        if (
            type(item) is dict
            and item.get("type") == "TEXT_MESSAGE_CONTENT"
            and item.get("messageId") == history.text_id
        ):
            return item.get("delta")
        return None

    return event_text


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
