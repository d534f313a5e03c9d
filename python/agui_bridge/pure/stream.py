"""The API surface the dialects share (contract section 5)."""

from __future__ import annotations

import operator

from ..awaiting import ASEND, send_none, step_iterator
from ..errors import CrumbError
from .framing import Framer, error_text
from .json_values import copy_json

_MAX_BYTES = 2**63 - 1


def _unsigned(value) -> int:
    """``value`` as the native build takes a size (an unsigned 64-bit
    integer), refused with the same errors."""
    value = operator.index(value)
    if value < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if value >= 1 << 64:
        raise OverflowError("int too big to convert")
    return value


# The events ``drive`` maps without stopping: a run's loop has nothing to note
# of them (they open and close nothing, end nothing).
_STREAMED = frozenset(("TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"))
_PULL = object()  # drive(): no item given, pull the next one


class EventStream:
    """One run's stateful mapping; a dialect supplies ``_parse`` and ``_apply``."""

    __slots__ = ("_framer",)

    # Whether every other event closes the open text message (contract section 1).
    close_text_always = False

    def __init__(
        self,
        thread_id=None,
        run_id=None,
        state=None,
        *,
        held_ids=None,
        event_ids=False,
        first_id=1,
        protocol_version=None,
    ):
        self._framer = Framer(
            thread_id,
            run_id,
            state,
            close_text_always=self.close_text_always,
            held_ids=held_ids,
            event_ids=event_ids,
            first_id=first_id,
            protocol_version=protocol_version,
        )

    def _parse(self, item):
        raise NotImplementedError

    def _apply(self, parsed) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        raise NotImplementedError

    def __call__(self, item) -> list[dict]:
        return self._mapped(item)[0]

    def _mapped(self, item) -> tuple[list[dict], int]:
        """The item's events and the id of the first of them."""
        framer = self._framer
        if framer.finished:
            framer.dropped += 1
            return [], framer.next_event_id
        parsed = self._parse(item)
        # Read once parsed: parsing may run the caller's code (an event model's
        # dump), which may map items itself and take ids.
        first = framer.next_event_id
        framer.out = out = []
        self._apply(parsed)
        return framer.taken(out), first

    def encode(self, item) -> bytes:
        return self._framer.framed(*self._mapped(item))

    def encode_many(self, items) -> bytes:
        framer = self._framer
        frames: list[bytes] = []
        for index, item in enumerate(items):
            try:
                frames.append(framer.framed(*self._mapped(item)))
            except CrumbError as error:
                error.index = index
                error.partial = b"".join(frames)
                raise
        return b"".join(frames)

    def _terminal(self, act) -> list[dict]:
        framer = self._framer
        if framer.finished:
            return []
        framer.out = out = []
        if not framer.started:
            framer.start()
        act()
        return framer.taken(out)

    def finish(self) -> list[dict]:
        return self._terminal(self._finish)

    def _cancel(self) -> None:
        """A run stopped by a cancel (contract section 8): a 1.0 client gets the
        ``cancelled`` outcome, a 0.0.x client exactly what ``finish()`` gives."""
        if self._framer.protocol_v1:
            self._framer.run_cancelled()
        else:
            self._finish()

    def cancel(self) -> list[dict]:
        """Ends a run stopped by a cancel (the cancel route, a client that left, an interrupt)."""
        return self._terminal(self._cancel)

    def cancel_encoded(self) -> bytes:
        first = self._framer.next_event_id
        return self._framer.framed(self.cancel(), first)

    def cancel_events_and_frames(self) -> tuple[list[dict], bytes]:
        """``cancel()`` and its frames from one mapping."""
        first = self._framer.next_event_id
        events = self.cancel()
        return events, self._framer.framed(events, first)

    @property
    def protocol_v1(self) -> bool:
        """The client declared AG-UI 1.0 or later (contract section 8)."""
        return self._framer.protocol_v1

    def fail(self, exc) -> list[dict]:
        """RUN_ERROR {message: str(exc), code: the exception's class name}."""
        return self._failed(exc)[0]

    def _failed(self, exc) -> tuple[list[dict], int]:
        """``fail(exc)``'s events and the id of the first of them."""
        framer = self._framer
        if framer.finished:
            return [], framer.next_event_id
        # str(exc) may raise, or map items itself: asked for before anything
        # changes, and before the first id is read.
        message, code = error_text(exc), type(exc).__name__
        first = framer.next_event_id
        return self._terminal(lambda: framer.run_error(message, code)), first

    def drive(self, agen, yield_at, stop_at, *first) -> tuple[str, bytes, object]:
        """Pulls items from the async generator ``agen`` and maps them until the
        run must look. Returns ``(kind, frames, value)``: ``frames`` those of
        every item mapped, and ``kind`` says why it stopped:

        - ``"events"``: the last item made an event other than streamed
          content (``TEXT_MESSAGE_CONTENT``, ``TOOL_CALL_ARGS``); ``value`` is
          that item's events.
        - ``"item"``: the item is ``stop_at``, left unmapped; ``value`` is it.
        - ``"await"``: the generator awaits; ``value`` is ``(step, awaited)``:
          what ``await`` runs of its ``__anext__()`` step (``agui_bridge.awaiting``:
          for an async generator, the step itself) and what that yielded.
          Running the rest of ``step`` gives the next item: pass it back as ``first``.
        - ``"full"``: ``frames`` reached ``yield_at`` bytes.
        - ``"end"``: the generator is exhausted.
        - ``"raise"``: the generator or the mapping raised ``value``.
        """
        yield_at = _unsigned(yield_at)  # before anything is pulled, as the native build
        framer = self._framer
        frames: list[bytes] = []
        size = 0
        given = iter(first)
        pull = None  # looked up once, when the items given run out
        while True:
            item = next(given, _PULL)
            if item is _PULL:
                try:
                    if pull is None:
                        pull = agen.__anext__
                    step = pull()
                    if type(step) is ASEND:  # an async generator's own step
                        awaited = step.send(None)
                    else:
                        step = step_iterator(step)
                        awaited = send_none(step)
                except StopIteration as returned:
                    item = returned.value
                except StopAsyncIteration:
                    return "end", b"".join(frames), None
                except BaseException as error:  # what the native build's PyErr holds
                    return "raise", b"".join(frames), error
                else:
                    return "await", b"".join(frames), (step, awaited)
            if item is stop_at:
                return "item", b"".join(frames), item
            try:
                events, first_id = self._mapped(item)
            except BaseException as error:
                return "raise", b"".join(frames), error
            data = framer.framed(events, first_id)
            frames.append(data)
            size += len(data)
            if any(event["type"] not in _STREAMED for event in events):
                return "events", b"".join(frames), events
            if size >= yield_at:
                return "full", b"".join(frames), None

    def events_and_frames(self, item) -> tuple[list[dict], bytes]:
        """``t(item)`` and ``t.encode(item)`` from one mapping: the events and their frames."""
        events, first = self._mapped(item)
        return events, self._framer.framed(events, first)

    def finish_events_and_frames(self) -> tuple[list[dict], bytes]:
        """``finish()`` and its frames from one mapping."""
        first = self._framer.next_event_id
        events = self.finish()
        return events, self._framer.framed(events, first)

    def fail_events_and_frames(self, exc) -> tuple[list[dict], bytes]:
        """``fail(exc)`` and its frames from one mapping."""
        events, first = self._failed(exc)
        return events, self._framer.framed(events, first)

    def coalesce(self, max_bytes) -> None:
        """Coalescing: consecutive deltas for one message or call are held and
        merged, up to ``max_bytes`` (UTF-8) each, until another event, this cap
        or ``flush()`` sends them."""
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
            raise TypeError(f"max_bytes must be an integer, not {type(max_bytes).__name__}")
        if not 1 <= max_bytes <= _MAX_BYTES:
            raise ValueError("max_bytes must be from 1 to 2**63 - 1")
        self._framer.coalesce_bytes = int(max_bytes)

    def flush(self) -> list[dict]:
        """The held delta as one event, if any."""
        framer = self._framer
        framer.out = out = []
        framer.flush_held()
        return framer.taken(out)

    def flush_encoded(self) -> bytes:
        first = self._framer.next_event_id
        return self._framer.framed(self.flush(), first)

    def flush_events_and_frames(self) -> tuple[list[dict], bytes]:
        """``flush()`` and its frames from one mapping."""
        first = self._framer.next_event_id
        events = self.flush()
        return events, self._framer.framed(events, first)

    @property
    def holding(self) -> bool:
        """A delta is held back (coalescing): ``flush()`` sends it."""
        return self._framer.pending is not None

    def _pending_interrupts(self) -> list[dict]:
        return []

    def snapshot(self) -> dict:
        """What a reader joining now, and the store, need of the run.

        ``messages``: this run's messages as the client's reducer builds them,
        what is still open (text, tool call arguments) left empty; ``open``:
        the events that re-open what is open (steps, the text message, tool
        calls), each followed by one content event with what it streamed so
        far, when non-empty; ``state``; ``interrupts`` (pending); ``last_id``.
        See docs/contract-notes.md.
        """
        framer = self._framer
        messages, open_events = framer.run_snapshot()
        return {
            "messages": messages,
            "open": open_events,
            "state": copy_json(framer.state),
            # A client told the run was cancelled holds none of its interrupts.
            "interrupts": [] if framer.told_cancelled else self._pending_interrupts(),
            "last_id": framer.next_event_id - 1,
        }

    def finish_encoded(self) -> bytes:
        first = self._framer.next_event_id
        return self._framer.framed(self.finish(), first)

    def fail_encoded(self, exc) -> bytes:
        return self._framer.framed(*self._failed(exc))

    @property
    def dropped(self) -> int:
        return self._framer.dropped

    @property
    def ignored(self) -> int:
        return self._framer.ignored

    @property
    def finished(self) -> bool:
        return self._framer.finished

    @property
    def thread_id(self) -> str:
        return self._framer.thread_id

    @property
    def run_id(self) -> str:
        return self._framer.run_id

    @property
    def next_id(self) -> int:
        """The id the next event emitted gets (contract section 7)."""
        return self._framer.next_event_id

    @property
    def last_id(self) -> int:
        """The id of the last event emitted: ``first_id - 1`` before any."""
        return self._framer.next_event_id - 1

    @property
    def state(self) -> dict:
        """The run state as the last STATE_SNAPSHOT carried it (a copy)."""
        return copy_json(self._framer.state)
