"""A run: the agent task → one transformer → frames with ids → the run log → the store.

The run is an asyncio task of its own, so it survives its client. It appends
every frame, once, to its log; every response (the POST that started it, a
reconnect, a viewer) is a cursor on that log (``runs.cursor``), so the run
never waits for a reader and a reader never costs a copy.

One transformer per run builds the wire frames and owns what the run has
made: ``t.snapshot()`` gives a joining reader's prelude and, once the run
ended, the thread's new messages; nothing here reads the events a second
time. The hot path (a text delta while a text message is open) goes
through ``t.encode(item)``, one boundary crossing that returns the frame.
Every other item goes through ``t.events_and_frames(item)``: the frames,
and the events for the spans a resuming reader needs re-opened and for the
``on_event`` listeners (which then get every item's events that way).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from dataclasses import dataclass, field
from functools import partial
from types import AsyncGeneratorType

import orjson

from .._select import (
    IMPLEMENTATION,
    create_agui_repairer,
    create_agui_transformer,
    create_agui_translator,
)
from ..coalesce import FLUSH, Holder
from ..context import RunContext, RunInfo
from ..errors import CrumbError, LeaseLost, RunsUnavailable, StoreUnavailable
from ..interrupts import stored
from ..store.lease import save
from . import saves
from .end import ENDINGS, Stop, error_of
from .log import RunLog
from .resume import follow

log = logging.getLogger("agui_bridge.runs")

# An agent that yields without awaiting never lets the readers run; past this
# many unflushed bytes the run appends them and yields to the loop.
YIELD_AT = 64 * 1024
# Text deltas are queued and encoded together (``encode_many``: a third of the
# per-item cost of ``encode``, benches/RESULTS.md) at the tick's flush, or, for
# an agent that never awaits, every batch of about YIELD_AT bytes: the batch's
# length follows the size of the frames just made (one-token frames: about
# 1,000 deltas, one write, no join), never more than this.
BATCH = 1024

# Plain runs are driven by ``t.drive`` (``Run._pull``) with the Rust build.
# The pure build's ``drive`` (the same stops, for its tests and its users'
# code) steps the generator in Python, an exception per item: there the
# ``async for`` loop is a third faster (benches/RESULTS.md).
PULLS = IMPLEMENTATION == "rust"

# What opens and closes a span a joining reader must see re-opened.
_OPENS = {
    "TEXT_MESSAGE_START": ("t", "messageId"),
    "TOOL_CALL_START": ("c", "toolCallId"),
    "STEP_STARTED": ("s", "stepName"),
    # Open reasoning (its span, then its message: one id, two brackets) and an
    # open subagent (a 1.0 run's) are re-opened too: their ends follow.
    "REASONING_START": ("rs", "messageId"),
    "REASONING_MESSAGE_START": ("rm", "messageId"),
    "SUBAGENT_STARTED": ("a", "subagentRunId"),
}
_CLOSES = {
    "TEXT_MESSAGE_END": ("t", "messageId"),
    "TOOL_CALL_END": ("c", "toolCallId"),
    "STEP_FINISHED": ("s", "stepName"),
    "REASONING_END": ("rs", "messageId"),
    "REASONING_MESSAGE_END": ("rm", "messageId"),
    "SUBAGENT_FINISHED": ("a", "subagentRunId"),
    "SUBAGENT_ERROR": ("a", "subagentRunId"),
}


@dataclass(frozen=True)
class RunSettings:
    """What every run of an App is handed (the App itself is not)."""

    ids: bool = True  # frames carry ``id: n``
    listeners: list = field(default_factory=list)  # on_event callbacks (the App's list)
    cancel_on_leave: bool = False  # on_disconnect="cancel"
    coalesce: object = None  # the app's coalescing (agui_bridge.coalesce), None: off
    clients_resend: bool = False  # App(clients_resend=...): turns.started_over


class Run:
    def __init__(
        self,
        agent,
        ctx: RunContext,
        turn,
        run_log: RunLog | None = None,
        sink=None,
        lease=None,
        *,
        store,
        settings: RunSettings,
        release=None,
        log_ended=None,
    ):
        """``turn``: the merged turn (``turns.Turn``: its new messages, the
        pending interrupts, the thread's messages before the run);
        ``release(run)``: awaited once the run ended (frees its thread);
        ``log_ended(log)``: called when this node's log of it ended."""
        self.agent = agent
        self.ctx = ctx
        self.new_messages = turn.new
        self.pending = turn.pending
        # The thread's messages before this run's output (for a joining reader).
        self.base = turn.base
        self.store = store
        self.lease = lease  # fences the run's save (see store/lease.py)
        # Until when the terminal events may reach the readers before the save
        # (``lease_held``): a run without a lease has no save to be refused.
        self.promise_until = 0.0 if lease is not None else math.inf
        self.save_failures = 0  # the store's refusals its save was retried after
        self.cancel_on_leave = settings.cancel_on_leave
        self._release = release
        self._log_ended = log_ended
        # The terminal events and their frames, until they reach the log (``end``).
        self._ending: tuple[list[dict], bytes] = ([], b"")
        self._before_end: dict = {}
        factory = _FACTORIES[agent.dialect]
        # Ids generated from a reused runId skip the ids the thread holds (the
        # transformer takes its own copy of them).
        held = ctx.held
        # The transformer numbers every event (1 for RUN_STARTED); with
        # event_ids its frames carry them, and t.last_id is the log's position.
        self.ids = settings.ids
        self.t = factory(
            thread_id=ctx.thread_id,
            run_id=ctx.run_id,
            state=ctx.state,
            held_ids=held,
            event_ids=self.ids,
            protocol_version=ctx.protocol_version,
        )
        # Opt-in coalescing (agui_bridge.coalesce): the agent's, else the app's.
        coalesce = getattr(agent, "coalesce", None)
        if coalesce is None:
            coalesce = settings.coalesce
        self.holder = Holder(self.t, coalesce, self._send_held) if coalesce else None
        self._late: list[dict] = []  # events a window's end sent, for the listeners
        # The run ended in RUN_ERROR (readers keep what they saw, closed).
        self.errored = False
        # The open text message's id, for the hot path: from the spans below.
        self.text_id: str | None = None
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
        # The hot path's text deltas not yet encoded (always this one list), and
        # the CrumbError one of them raised when a flush encoded them: the agent
        # loop raises it at its next item, as ``encode`` would have at that one.
        self._items: list = []
        self._bad: BaseException | None = None
        self._items_at = 0.0  # the loop's time when the first of them came (coalescing's window)
        self._batch = 1  # how many to queue before encoding them (see BATCH): learnt
        self._begun = False
        self._first = _first_item(agent.dialect, ctx)
        self._first_events: list[dict] = []
        self.task: asyncio.Task | None = None
        # Its task has taken its first step (``run``): cancelled before that, a
        # task never runs its code, so nothing would end the run (its log, its
        # lease): it is told to stop as it starts instead (``_cancel``).
        self._stepped = False
        self._cancel_asked = False
        # For agui_bridge.ops: when the first frames after RUN_STARTED reached
        # the log (time to first event), the bytes appended, the last event.
        self.first_at: float | None = None
        self.bytes_out = 0
        self.terminal: dict | None = None
        self.info = RunInfo(agent.agent_id, ctx.thread_id, ctx.run_id)
        self.listeners = list(settings.listeners)

    # -- readers -------------------------------------------------------------

    def client_left(self) -> None:
        """The response that started the run lost its client."""
        if self.cancel_on_leave and self.task is not None and not self.task.done():
            self.cancelled = True
            self._cancel()

    def stop(self) -> bool:
        """Stops the live run (POST …/cancel); False when it already ended.

        A run readers see may not have its task yet (the gate saves the user's
        turn first): it is stopped as its task starts (``_drive``)."""
        if self.t.finished or self.stopping or (self.task is not None and self.task.done()):
            return False
        self.stopping = True
        # Told to the log this node reads (memory, or its Redis mirror, which no
        # run is bound to): a 0.0.x run's log ends with a plain RUN_FINISHED.
        self.log.stopped = True
        if self.task is not None:
            self._cancel()
        return True

    def shutdown(self) -> bool:
        """Ends the live run because the server is stopping (one with no task
        yet, as its task starts); False when it already ended."""
        if self.t.finished or self.stopping or (self.task is not None and self.task.done()):
            return False
        self.shutting_down = True
        self._cancel()
        return True

    def log_failed(self, lost: bool, error: BaseException | None = None) -> None:
        """The shared log refused the frames (``lost``: the lease was taken over)
        or cannot be reached: the agent stops; nothing more reaches the log."""
        # Before its task (the turn being stored): it ends so as it starts.
        if self.t.finished or (self.task is not None and self.task.done()):
            return
        if lost:
            self.lost = True
        else:
            self.unavailable = error or RunsUnavailable("the run log is unreachable")
        self._cancel()

    def _cancel(self) -> None:
        """Cancels the run's task; one that has not started yet stops as it starts."""
        if self._stepped:
            self.task.cancel()
        else:
            self._cancel_asked = True

    def snapshot(self) -> dict:
        """What a reader joining now needs (``t.snapshot()``, docs/contract-notes.md)
        of the run as its log holds it, the thread's messages before the run first."""
        snap = dict(self._before_end) if self._ending[0] else self.t.snapshot()
        snap["messages"] = self.base + snap["messages"]
        return snap

    @property
    def ended_in_log(self) -> bool:
        """The log holds the run's terminal event."""
        return self.t.finished and not self._ending[0]

    # -- frames --------------------------------------------------------------

    def _track(self, events: list[dict]) -> None:
        """Notes the spans ``events`` (the transformer numbered them) open and
        close: which START frame re-opens what for a reader resuming after n."""
        n = self.t.last_id - len(events)
        spans = self._spans
        for event in events:
            n += 1
            kind = event["type"]
            opens = _OPENS.get(kind)
            if opens is not None:
                key = event.get(opens[1])
                spans.append(("o", n, opens[0], key, b"data: " + orjson.dumps(event) + b"\n\n"))
                if opens[0] == "t":
                    self.text_id = key
            else:
                closes = _CLOSES.get(kind)
                if closes is not None:
                    key = event.get(closes[1])
                    spans.append(("c", n, closes[0], key))
                    if closes[0] == "t" and key == self.text_id:
                        self.text_id = None

    def _publish(self, frame: bytes) -> bool:
        """Queues a frame; the frames of one loop tick reach the log together.

        A flush is scheduled for the next loop iteration, which comes as soon
        as the agent awaits; an agent that never awaits is flushed every
        YIELD_AT bytes (True: the caller then yields to the loop).
        """
        self._queue(frame)
        if self._pending_size > YIELD_AT:
            self.flush()
            return True
        return False

    def _queue(self, frames: bytes) -> None:
        """Queues frames for the flush of this loop tick, scheduling it."""
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(frames)
        self._pending_size += len(frames)

    def _encode_items(self) -> None:
        """Encodes the queued text deltas in one call; a bad one ends the batch
        (the deltas before it go out) and is raised by the agent loop."""
        items = self._items
        count = len(items)
        try:
            frames = self.t.encode_many(items)
        except CrumbError as error:
            frames = error.partial or b""
            if self._bad is None:
                self._bad = error
        finally:
            items.clear()
        if frames:  # (deltas that coalescing holds make none: no size to go by)
            self._batch = max(1, min(BATCH, count * YIELD_AT // len(frames)))
        if frames:
            self._pending.append(frames)
            self._pending_size += len(frames)
        if self.holder is not None:
            self.holder.after_item(self._items_at, count)

    def flush(self, last_id: int | None = None) -> None:
        """Appends the queued frames; ``last_id`` is the last one's (default: the
        transformer's last event)."""
        if self._items:
            self._encode_items()
        pending = self._pending
        if not pending:
            return
        data = b"".join(pending) if len(pending) > 1 else pending[0]
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.bytes_out += len(data)
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
        self.out.end()
        if self._log_ended is not None and self.out is self.log:
            self._log_ended(self.log)

    # -- the run -------------------------------------------------------------

    async def _deliver(self, events: list[dict]) -> None:
        for event in events:
            for listener in self.listeners:
                try:
                    result = listener(event, self.info)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_event callback failed")

    def _send_held(self) -> None:
        """What coalescing held, sent at its window's end (the deltas queued
        before it first: they were yielded before the window ended)."""
        if self._items:
            self._encode_items()
        if not self.t.holding:
            return
        events, frames = self.t.flush_events_and_frames()
        self._publish(frames)
        self.flush()  # now, not a loop iteration later: the window has passed
        if self.listeners:
            self._late += events

    def _apply(self, item) -> tuple[list[dict], bytes]:
        """Any item: its events (spans noted) and its frames."""
        if self._items:
            self._encode_items()
        if self._bad is not None:
            raise self._bad
        t = self.t
        if item is FLUSH:
            # The agent asks for what coalescing holds to go out now.
            return t.flush_events_and_frames()
        events, frames = t.events_and_frames(item)
        self._took(events)
        return events, frames

    def _took(self, events: list[dict]) -> None:
        """Notes what the transformer's last events (an item's) did to the run."""
        # Only an item off the text hot path can end the run.
        self.ended = self.t.finished
        if events:
            if events[-1]["type"] == "RUN_ERROR":
                # What readers saw before the error stays, closed, as in their
                # reducers (a shutdown or a cancel keeps it the same way).
                self.errored = True
            self._track(events)

    def _terminal(self, end) -> list[dict]:
        """The run's last events (``end()``: the transformer's finish or fail);
        readers get them when ``end`` publishes them (``_publish_end``), before
        or after the save (``runs.end``). Until then a joining reader gets the
        run as the log holds it: the snapshot from before them."""
        if self._items:
            self._encode_items()  # a bad delta no longer matters: the run ends
        if self.t.holding:
            # What coalescing holds goes out now, not with the ending after the save.
            self._send_held()
        self._before_end = self.t.snapshot()
        events, frames = end()
        self.flush(self.t.last_id - len(events))  # the frames before them
        self._ending = (events, frames)
        return events

    def _encoded(self, events: list[dict]) -> bytes:
        """The frames of the run's last ``events`` (numbered as the transformer did)."""
        first = self.t.last_id - len(events) + 1
        out = []
        for n, event in enumerate(events, first):
            data = b"data: " + orjson.dumps(event) + b"\n\n"
            out.append(b"id: %d\n" % n + data if self.ids else data)
        return b"".join(out)

    def _fail(self, error: BaseException) -> list[dict]:
        return self._terminal(partial(self.t.fail_events_and_frames, error))

    def _publish_end(self, refused: BaseException | None = None) -> list[dict]:
        """Appends the terminal events (and returns them); a RUN_FINISHED whose save
        was refused becomes RUN_ERROR (same id: the closers before it are unchanged)."""
        (events, frames), self._ending = self._ending, ([], b"")
        if refused is not None and events and events[-1]["type"] == "RUN_FINISHED":
            known = isinstance(refused, LeaseLost)
            code = type(refused).__name__ if known else "save_failed"
            message = str(refused) if isinstance(refused, LeaseLost) else _SAVE_FAILED
            events = [*events[:-1], {"type": "RUN_ERROR", "message": message, "code": code}]
            frames = self._encoded(events)
        self._track(events)
        if frames:
            self._pending.append(frames)
        self.flush()
        if events:
            self.terminal = events[-1]
        return events

    def begin(self) -> None:
        """Appends RUN_STARTED at once, so the response's first write carries it
        (once: the gate begins a run before its log is published)."""
        if self._begun:
            return
        self._begun = True
        events, frames = self.t.events_and_frames(self._first)
        self._first_events = events
        self.log.started = b"data: " + orjson.dumps(events[0]) + b"\n\n"
        self._track(events)
        spans = self._spans
        self._spans = []
        self.bytes_out += len(frames)
        self.out.append(frames, self.t.last_id, spans)

    def lease_held(self, sent: float, ttl: float) -> None:
        """The run's lease was claimed or renewed by a call sent at ``sent``
        (monotonic): no other claim can take it before ``sent + ttl``. While
        half of that is left, a save cannot find it taken over."""
        self.promise_until = max(self.promise_until, sent + ttl / 2)

    async def _released(self) -> None:
        if self._release is not None:
            await self._release(self)

    async def abandon(self, error: BaseException) -> None:
        """The run could not start after its log was published (the user's turn
        was not stored): readers get RUN_ERROR, the thread is released."""
        self.errored = True
        self._fail(error)
        self._publish_end()
        await self._released()
        self._end_log()

    async def run(self) -> None:
        """The whole run; the task the gate starts. Never raises but when killed."""
        self._stepped = True
        try:
            if self._cancel_asked:
                raise asyncio.CancelledError  # ended as the cancel asked, the agent never called
            await self._drive()
        except asyncio.CancelledError:
            stop = self._why_cancelled()
            await self.end(stop, self.unavailable)
            if ENDINGS[stop].reraise:
                raise
            return
        except Exception as error:
            await self.end(Stop.FAILED, error)
            return
        await self.end(Stop.DONE)

    async def _drive(self) -> None:
        """RUN_STARTED (if not in yet), then the agent's items through the
        transformer into the log, until the agent ends or the run is ended."""
        if self.stopping:
            # Stopped before its task started: ended as a cancel would end it,
            # the agent never called.
            raise asyncio.CancelledError
        if not self._begun:
            self.begin()
        listeners = self.listeners
        if listeners:
            await self._deliver(self._first_events)
        agen = self.agent.fn(self.ctx)
        holder = self.holder
        try:
            if PULLS and not listeners and holder is None and type(agen) is AsyncGeneratorType:
                await self._pull(agen)
            else:
                await self._iterate(agen, listeners)
        finally:
            if holder is not None:
                holder.cancel()
            aclose = getattr(agen, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _pull(self, agen) -> None:
        """The loop of a plain run: ``t.drive`` steps the agent's generator and
        maps its items itself, handing back only what the run must act on.

        Nothing awaits between ``drive`` returning and its stop being handled:
        the spans an item opened are noted before its frames can reach the log,
        an error is raised before a cancel could take its place, and while the
        agent is suspended inside a step (an "await" stop) the frames are only
        queued (a flush then could fail with the agent mid-step, where it
        cannot be closed); ``follow`` gives the loop its turn, and drives on
        while the agent awaits between items.
        """
        drive = self.t.drive
        queue = self._queue
        kind, frames, value = drive(agen, YIELD_AT, FLUSH)
        while True:
            if kind == "await":
                if frames:
                    queue(frames)
                try:
                    kind, frames, value = await follow(drive, agen, *value, queue, YIELD_AT, FLUSH)
                except StopAsyncIteration:
                    return
                continue
            if kind == "events":
                self._took(value)
            past = bool(frames) and self._publish(frames)
            if kind == "events":
                if self.ended:
                    return
            elif kind == "item":
                _, frame = self._apply(value)
                past = (bool(frame) and self._publish(frame)) or past
            elif kind == "full":
                self.flush()
                past = True
            elif kind == "raise":
                raise value
            else:  # "end"
                return
            if past:
                await asyncio.sleep(0)
            kind, frames, value = drive(agen, YIELD_AT, FLUSH)

    async def _iterate(self, agen, listeners) -> None:
        """The loop of any other run: ``async for`` over the agent's items."""
        # The hot path, kept in locals and inline (a call per item cost a fifth
        # of the loop): a text delta while a text message is open needs no
        # events, only its frame (listeners need the events, so not with them).
        hot = not listeners
        text_types, bare, by_id = _TEXT_SHAPES[self.agent.dialect]
        text_open = hot and self.text_id is not None
        items = self._items
        append = items.append
        batch = self._batch
        loop = asyncio.get_running_loop()
        call_soon = loop.call_soon
        flush = self.flush
        apply = self._apply
        publish = self._publish
        holder = self.holder
        async for item in agen:
            if text_open and (
                (
                    type(item) is dict
                    and item.get("type") in text_types
                    # Only content for the open message: any other one opens a message.
                    and (not by_id or item.get("messageId") == self.text_id)
                )
                or type(item) is bare
            ):
                # Queued, encoded with the tick's others at its flush.
                if not items:
                    if self._bad is not None:
                        raise self._bad
                    if not self._pending:
                        call_soon(flush)
                    if holder is not None:
                        self._items_at = loop.time()
                    batch = self._batch  # learnt at the last batch's encoding
                append(item)
                if len(items) >= batch:
                    self._encode_items()
                    if self._bad is not None:
                        raise self._bad
                    if self._pending_size > YIELD_AT:
                        flush()
                        await asyncio.sleep(0)
                continue
            events, frame = apply(item)
            text_open = hot and self.text_id is not None
            earlier = None
            if listeners and self._late:
                # A window's end sent these before the item came: they go first.
                earlier, self._late = self._late, []
            if frame and publish(frame):
                await asyncio.sleep(0)
            if holder is not None:
                holder.after_item()  # may send the hold this item began: after it
            if listeners:
                late, self._late = self._late, []
                for told in (earlier, events, late):
                    if told:
                        await self._deliver(told)
            if self.ended:
                break
        if items:
            self._encode_items()
        if self._bad is not None:
            raise self._bad

    async def _tell(self, events: list[dict]) -> None:
        """The listeners get what coalescing sent late, then ``events``."""
        late, self._late = self._late, []
        await self._deliver([*late, *events])

    def _why_cancelled(self) -> Stop:
        """What the cancel that stopped the agent was for."""
        if self.lost:
            return Stop.LEASE_LOST
        if self.unavailable is not None:
            return Stop.LOG_UNREACHABLE
        if self.stopping:
            return Stop.CANCELLED
        if self.shutting_down:
            return Stop.SHUTDOWN
        if self.cancelled:
            return Stop.CLIENT_LEFT
        return Stop.KILLED

    async def end(self, stop: Stop, error: BaseException | None = None) -> None:
        """Ends the run as its row of ``runs.end.ENDINGS`` says: the terminal
        events, the save, the listeners, the release, the log's end."""
        ending = ENDINGS[stop]
        ctx = self.ctx
        task = asyncio.current_task()
        if ending.uncancel and task is not None:
            task.uncancel()
        if ending.says:
            exc_info = error if stop is Stop.FAILED else None
            log.log(
                ending.level,
                "run %s of thread %s %s",
                ctx.run_id,
                ctx.thread_id,
                ending.says,
                exc_info=exc_info,
            )
        if ending.errored:
            self.errored = True
        if ending.cancels and self.t.protocol_v1:
            # A 1.0 client is told it was a stop (contract section 8).
            self._terminal(self.t.cancel_events_and_frames)
        elif ending.terminal == "finish":
            self._terminal(self.t.finish_events_and_frames)
        elif ending.terminal == "fail":
            events = self._fail(error_of(ending, error))
            if ending.listeners == "before" and self.listeners:
                await self._tell(events)
        if ending.reraise:
            # Killed: the log ends as it is (its readers resume or rejoin).
            self.flush()
            self.out.end()
            await self._released()
            return
        if not ending.saves:
            if ending.terminal is None:
                self._pending = []  # nothing more of this run reaches the log
                self._items.clear()
            else:
                self._publish_end()
            await self._released()
            self._end_log()
            return
        # The readers are told first when the save cannot be refused: its lease
        # is held (runs.end); else they learn how the save went.
        early = time.monotonic() < self.promise_until
        told = self._publish_end() if early else []
        refused = None
        try:
            await self._save(stopped=ending.cancels)
        except LeaseLost as lost:
            refused = lost
            log.error("run %s of thread %s: %s", ctx.run_id, ctx.thread_id, lost)
        except Exception as failed:
            refused = failed
            log.exception(
                "run %s of thread %s: saving the thread failed", ctx.run_id, ctx.thread_id
            )
        finally:
            events = told if early else self._publish_end(refused)
            if early and refused is not None:
                log.error(
                    "run %s of thread %s: its readers were told %s but its answer is not stored",
                    ctx.run_id,
                    ctx.thread_id,
                    told[-1]["type"] if told else "nothing",
                )
            if ending.listeners == "after" and self.listeners:
                await self._tell(events)
            await self._released()
            self._end_log()

    async def _save(self, stopped: bool = False) -> None:
        """``stopped``: the run was stopped by a cancel (the cancel route, a
        supersede, ``multitask_strategy`` interrupt)."""
        # The run has ended: nothing is open, its messages are whole.
        snap = self.t.snapshot()
        # New interrupts replace the pending ones; a run that ends without any
        # settles them, except a failed run, which leaves them pending.
        interrupts = snap["interrupts"]
        if not interrupts and self.errored:
            interrupts = self.pending
        if stopped:
            # A stopped run leaves nothing pending, as a 1.0 client told "cancelled"
            # holds. What a client may still hold is kept aside, re-opened by a
            # resume naming it (interrupts.py): the interrupts this run resumed (a
            # page that stopped reading got no terminal event) and those a 0.0.x
            # reader's RUN_FINISHED offered (the snapshot has none for a 1.0 client;
            # a 0.0.x page that stopped reading never saw them).
            interrupts = stored([], [*self.pending, *interrupts])
        store = self.store
        messages = snap["messages"]  # the user's turn was stored when the run started
        size = saves.size_of(messages)
        delay = RETRY_FIRST
        while True:
            try:
                # In its lane by size: a quick run's save never waits behind large ones.
                await saves.in_turn(
                    store,
                    size,
                    lambda: save(
                        store,
                        self.ctx.thread_id,
                        self.agent.agent_id,
                        messages,
                        snap["state"],
                        interrupts,
                        self.lease,
                        errored=self.errored,  # the thread's status: "error" (store/keep.py)
                        run_id=self.ctx.run_id,  # its head: a later parentRunId's branch point
                    ),
                )
                return
            except StoreUnavailable as error:
                # Down for now: the answer waits here (its readers may have been
                # told the run ended) and goes in once the store is back.
                self.save_failures += 1
                log.warning(
                    "run %s of thread %s: %s; the save is retried in %.1f s",
                    self.ctx.run_id,
                    self.ctx.thread_id,
                    error,
                    delay,
                )
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                log.error(
                    "run %s of thread %s: the process is stopping; its answer is not stored",
                    self.ctx.run_id,
                    self.ctx.thread_id,
                )
                raise
            delay = min(delay * 2, RETRY_MAX)


# A save the store refused as unavailable is retried after RETRY_FIRST seconds,
# doubling up to RETRY_MAX (below a lease's renewal period, so a store that is
# back sees the save before most claims could).
RETRY_FIRST = 0.1
RETRY_MAX = 2.0

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


class _NoBareText:
    """No item is of this type: a dialect whose text deltas are all dicts."""


# What a text delta looks like in each dialect (given a text message is open):
# a dict whose type is one of these (naming the open message, for events), or
# an item of the bare type (chunks: a plain string). The transformer checks
# the delta itself.
_TEXT_SHAPES = {
    "crumbs": (("text:delta",), _NoBareText, False),
    "chunks": (("token", "chunk"), str, False),
    "events": (("TEXT_MESSAGE_CONTENT",), _NoBareText, True),
}
