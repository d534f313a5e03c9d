"""``t.drive``: the transformer steps the agent's async generator itself.

A plain run's loop (``Run._pull``) hands the agent's generator to
``t.drive``, which pulls and maps items until the run must act: an item
whose events open, close or end something, an await, a full buffer, the
end, an error. What a run's readers get must be what mapping every item
with ``encode_many`` gives, in both builds, byte for byte; the generator
must see what ``async for`` would have shown it (awaits answered, a cancel
thrown in, its ``finally`` run).
"""

from __future__ import annotations

import asyncio
import sys
import types

import pytest
from agui_bridge import crumbs as c
from agui_bridge.errors import CrumbError
from agui_bridge.runs.resume import follow

STOP = object()

RUN = [
    c.text_delta("Hel"),
    c.text_delta("lo"),
    c.text_delta(""),
    {"type": "tool:input:start", "toolCallId": "t1", "toolName": "search"},
    {"type": "tool:input:delta", "toolCallId": "t1", "delta": '{"q":'},
    {"type": "tool:input:delta", "toolCallId": "t1", "delta": '"x"}'},
    {"type": "tool:input:end", "toolCallId": "t1"},
    {"type": "tool:result", "toolCallId": "t1", "result": {"rows": 2}},
    c.text_delta("done "),
    c.text_delta('with "quotes"\n'),
    c.text_delta("and é"),
    {"type": "pipeline:step:start", "stepName": "s"},
    {"type": "pipeline:step:end", "stepName": "s"},
    c.text_delta("end"),
]


def make(impl):
    return impl.create_agui_transformer("thread", "run", event_ids=True)


async def drain(t, agen, yield_at=1 << 20, stop_at=STOP):
    """Runs ``drive`` to the end as ``Run._pull`` does; returns the frames and
    each stop as (kind, what it carried)."""
    frames, stops = [], []
    kind, data, value = t.drive(agen, yield_at, stop_at)
    while True:
        frames.append(data)
        if kind == "await":
            stops.append((kind, None))
            try:
                kind, data, value = await follow(
                    t.drive, agen, *value, frames.append, yield_at, stop_at
                )
            except StopAsyncIteration:
                stops.append(("end", None))
                break
            continue
        if kind == "events":
            stops.append((kind, [event["type"] for event in value]))
        elif kind == "item":
            stops.append((kind, value is stop_at))
            frames.append(t.encode({"type": "text:delta", "delta": "[flushed]"}))
        elif kind == "full":
            stops.append((kind, len(data)))
        elif kind == "raise":
            stops.append((kind, f"{type(value).__name__}: {value}"))
        else:
            stops.append((kind, None))
        if kind in ("raise", "end"):
            break
        kind, data, value = t.drive(agen, yield_at, stop_at)
    return b"".join(frames), stops


async def items(run, pause_every=0):
    for at, item in enumerate(run):
        if pause_every and at % pause_every == 0:
            await asyncio.sleep(0)
        yield item


async def test_drive_gives_the_frames_encode_many_gives_and_stops_where_the_run_must_act(impl):
    expected = make(impl).encode_many(RUN)
    frames, stops = await drain(make(impl), items(RUN))
    assert frames == expected
    assert stops == [
        ("events", ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]),
        ("events", ["TEXT_MESSAGE_END", "TOOL_CALL_START"]),
        ("events", ["TOOL_CALL_END"]),
        ("events", ["TOOL_CALL_RESULT"]),
        ("events", ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]),
        # A step leaves the message open: the delta after it is content.
        ("events", ["STEP_STARTED"]),
        ("events", ["STEP_FINISHED"]),
        ("end", None),
    ]


@pytest.mark.parametrize("pause_every", [1, 2, 5])
async def test_drive_hands_back_each_await_and_maps_the_item_it_gave(impl, pause_every):
    expected = make(impl).encode_many(RUN)
    frames, stops = await drain(make(impl), items(RUN, pause_every))
    assert frames == expected
    assert ("await", None) in stops
    assert stops[-1] == ("end", None)


async def test_drive_stops_when_the_frames_reach_yield_at(impl):
    run = [c.text_delta("x" * 10)] * 200
    expected = make(impl).encode_many(run)
    frames, stops = await drain(make(impl), items(run), yield_at=1000)
    assert frames == expected
    full = [size for kind, size in stops if kind == "full"]
    assert full and all(1000 <= size < 1200 for size in full)


async def test_drive_keeps_the_frames_before_a_bad_item_and_raises_it(impl):
    bad = {"type": "text:delta", "delta": 7}
    expected = make(impl).encode_many(RUN[:2])
    t = make(impl)
    frames, stops = await drain(t, items([*RUN[:2], bad, *RUN[2:]]))
    assert frames == expected
    assert stops[-1][0] == "raise" and stops[-1][1].startswith("CrumbError")
    with pytest.raises(CrumbError):
        make(impl).encode_many([bad])


async def test_drive_keeps_the_frames_before_the_agent_raises(impl):
    closed = []

    async def agent():
        try:
            yield c.text_delta("a")
            yield c.text_delta("b")
            raise LookupError("the model went away")
        finally:
            closed.append(True)

    frames, stops = await drain(make(impl), agent())
    assert frames == make(impl).encode_many([c.text_delta("a"), c.text_delta("b")])
    assert stops[-1] == ("raise", "LookupError: the model went away")
    assert closed == [True]


def test_drive_of_something_not_an_async_generator_raises_after_the_items_given(impl):
    """The items handed in are mapped; pulling the next one from something that
    cannot give it is the ``raise`` stop, not an exception out of ``drive``."""
    t, alone = make(impl), make(impl)
    assert t.drive(object(), 1 << 20, STOP, c.text_delta("a"))[0] == "events"  # opens
    alone.encode(c.text_delta("a"))
    kind, frames, error = t.drive(object(), 1 << 20, STOP, c.text_delta("b"), c.text_delta("c"))
    assert kind == "raise" and isinstance(error, AttributeError)
    assert frames == alone.encode_many([c.text_delta("b"), c.text_delta("c")])


async def test_drive_leaves_stop_at_unmapped(impl):
    marker = object()
    run = [c.text_delta("a"), marker, c.text_delta("b")]
    frames, stops = await drain(make(impl), items(run), stop_at=marker)
    assert ("item", True) in stops
    assert frames == make(impl).encode_many(
        [c.text_delta("a"), c.text_delta("[flushed]"), c.text_delta("b")]
    )


async def test_drive_after_the_end_drops_what_comes(impl):
    t = make(impl)
    t.encode(c.text_delta("a"))
    t.finish_encoded()
    frames, stops = await drain(t, items(RUN))
    assert frames == b""
    assert stops == [("end", None)]
    assert t.dropped == len(RUN)


@pytest.mark.native_only
async def test_both_builds_stop_alike_on_every_dialect(both):
    runs = {
        "crumbs": RUN,
        "chunks": ["a", "b", {"type": "tool_call", "id": "c", "name": "f"}, "c", ""],
        "events": [
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "b"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "other", "delta": "c"},
            {"type": "TOOL_CALL_START", "toolCallId": "t", "toolCallName": "f"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "t", "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": "t"},
        ],
    }
    factories = {
        "crumbs": "create_agui_transformer",
        "chunks": "create_agui_translator",
        "events": "create_agui_repairer",
    }
    for dialect, run in runs.items():
        outcomes = []
        for impl in both:
            t = getattr(impl, factories[dialect])("thread", "run", event_ids=True)
            outcomes.append(await drain(t, items(run, 3), yield_at=64))
        assert outcomes[0] == outcomes[1], dialect


async def test_follow_throws_a_cancel_into_the_awaiting_agent(impl):
    seen = []
    started = asyncio.Event()

    async def agent():
        yield c.text_delta("a")
        try:
            started.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        yield c.text_delta("never")

    task = asyncio.ensure_future(drain(make(impl), agent()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]


async def test_follow_throws_what_the_awaited_future_raised_and_the_agent_may_go_on(impl):
    async def fails():
        await asyncio.sleep(0)
        raise TimeoutError("slow model")

    async def agent():
        yield c.text_delta("a")
        try:
            await fails()
        except TimeoutError as error:
            yield c.text_delta(f" after {error}")

    frames, stops = await drain(make(impl), agent())
    assert frames == make(impl).encode_many([c.text_delta("a"), c.text_delta(" after slow model")])
    assert stops[-1] == ("end", None)


async def test_follow_gives_the_answer_of_the_awaited_future(impl):
    async def agent():
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        loop.call_later(0.01, future.set_result, "answered")
        yield c.text_delta(await future)

    frames, _ = await drain(make(impl), agent())
    assert frames == make(impl).encode_many([c.text_delta("answered")])


class _Ask:
    """An awaitable that yields a question and returns the answer sent back."""

    def __await__(self):
        answer = yield "question"
        return answer


def test_follow_sends_answers_and_throws_into_the_step_as_await_would(impl):
    async def agent():
        yield c.text_delta("a")
        yield c.text_delta(await _Ask())  # a non-None answer, sent as such
        try:
            await _Ask()
        except KeyError as error:
            yield c.text_delta(f" caught {error}")
        yield {"type": "pipeline:step:start", "stepName": "s"}

    t = make(impl)
    agen = agent()
    frames = [t.drive(agen, 1 << 20, STOP)[1]]  # "events": the message opens
    kind, data, value = t.drive(agen, 1 << 20, STOP)
    assert (kind, data) == ("await", b"")
    flow = follow(t.drive, agen, *value, frames.append, 1 << 20, STOP)
    assert flow.send(None) == "question"
    assert flow.send("an answer") == "question"  # mapped, queued; the next await goes up
    with pytest.raises(StopIteration) as returned:
        flow.throw(KeyError("k"))
    kind, data, value = returned.value.value
    assert kind == "events" and [event["type"] for event in value] == ["STEP_STARTED"]
    frames.append(data)
    expected = make(impl).encode_many(
        [
            c.text_delta("a"),
            c.text_delta("an answer"),
            c.text_delta(" caught 'k'"),
            {"type": "pipeline:step:start", "stepName": "s"},
        ]
    )
    assert b"".join(frames) == expected


def _depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


async def test_an_agent_whose_awaits_keep_failing_runs_at_one_depth_and_sees_no_old_error(impl):
    seen = []

    async def agent():
        yield c.text_delta("a")
        depths = []
        for _ in range(300):  # polling a stalled model
            try:
                async with asyncio.timeout(0):
                    await asyncio.Event().wait()
            except TimeoutError:
                depths.append(_depth())
        await asyncio.sleep(0)
        seen.append(sys.exc_info()[1])
        yield c.text_delta(f" {min(depths)}-{max(depths)}")

    frames, stops = await drain(make(impl), agent())
    low, high = frames.decode().rsplit(" ", 1)[1].split('"')[0].split("-")
    assert low == high
    assert seen == [None]
    assert stops[-1] == ("end", None)


class Pages:
    """An async iterator that is no generator: its ``__anext__`` is a coroutine
    function (a class an SDK may hand out), so each step is a coroutine, which
    has ``send`` but is not an iterator."""

    def __init__(self, run, pause_every=0):
        self.run, self.pause_every, self.at = run, pause_every, 0

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self.at == len(self.run):
            raise StopAsyncIteration
        if self.pause_every and self.at % self.pause_every == 0:
            await asyncio.sleep(0)
        self.at += 1
        return self.run[self.at - 1]


class Fetches(Pages):
    """An async iterator whose ``__anext__`` is a plain method: it ends the
    iteration by raising, and gives each item as a future (or, when ready, one
    already done)."""

    def __anext__(self):
        if self.at == len(self.run):
            raise StopAsyncIteration
        self.at += 1
        future = asyncio.get_running_loop().create_future()
        item = self.run[self.at - 1]
        if self.pause_every and self.at % self.pause_every == 0:
            asyncio.get_running_loop().call_soon(future.set_result, item)
        else:
            future.set_result(item)
        return future


@pytest.mark.parametrize("pause_every", [0, 2])
@pytest.mark.parametrize("iterator", [Pages, Fetches], ids=["coroutines", "futures"])
async def test_drive_steps_an_async_iterator_that_is_no_generator(impl, iterator, pause_every):
    expected = make(impl).encode_many(RUN)
    frames, stops = await drain(make(impl), iterator(RUN, pause_every))
    assert frames == expected
    assert stops[-1] == ("end", None)
    assert not any(kind == "raise" for kind, _ in stops)


class Steps(Pages):
    """An async iterator whose ``__anext__`` gives ``step(item)`` for each item:
    whatever ``async for`` is handed, valid or not."""

    def __init__(self, run, step):
        super().__init__(run)
        self.step = step

    def __anext__(self):
        if self.at == len(self.run):
            raise StopAsyncIteration
        self.at += 1
        return self.step(self.run[self.at - 1])


class PausesOnce:
    """An awaitable whose ``__await__`` is a plain iterator (no ``send``): one
    bare yield (the task steps it again soon), then the item."""

    def __init__(self, item):
        self.item, self.paused = item, False

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        if self.paused:
            raise StopIteration(self.item)
        self.paused = True


class Awaits:
    """An awaitable whose ``__await__`` gives ``what()``."""

    def __init__(self, what):
        self.what = what

    def __await__(self):
        return self.what()


@types.coroutine
def _iterable_coroutine():
    yield


def _generator(item):
    yield
    return item


STEPS = {
    "a plain iterator": lambda item: iter([item]),
    "a generator": _generator,
    "an __await__ giving a coroutine": lambda item: Awaits(_iterable_coroutine),
    "an __await__ giving no iterator": lambda item: Awaits(lambda: [item]),
    "an __await__ giving a plain iterator": PausesOnce,
    "an __await__ that raises": lambda item: Awaits(lambda: 1 / 0),
}


async def by_async_for(iterator):
    """What ``async for`` makes of ``iterator``: the items, and the error it raised."""
    got = []
    try:
        async for item in iterator:
            got.append(item)
    except TypeError as error:
        return got, f"TypeError: {error}"
    return got, None


@pytest.mark.parametrize("step", list(STEPS.values()), ids=list(STEPS))
async def test_drive_takes_or_refuses_each_step_as_async_for_does(impl, step):
    """A step ``async for`` refuses is the ``raise`` stop with its error, in both
    builds; one it accepts gives the items it gives."""
    got, error = await by_async_for(Steps(RUN, step))
    frames, stops = await drain(make(impl), Steps(RUN, step))
    assert frames == make(impl).encode_many(got)
    assert stops[-1] == (("raise", error) if error else ("end", None))


class WaitsOn(PausesOnce):
    """``PausesOnce``, waiting on a future that is never done instead."""

    def __next__(self):
        if self.paused:
            raise StopIteration(self.item)
        self.paused = True
        future = asyncio.get_running_loop().create_future()
        future._asyncio_future_blocking = True  # what a future's own `__await__` marks
        return future


async def test_a_cancel_while_a_plain_iterator_awaits_reaches_the_run_as_async_for_would(impl):
    """A step with no ``throw`` (an ``__await__`` giving a plain iterator) cannot
    take the cancel in: it is raised where the run awaits, as ``async for`` does."""

    async def consume(pull):
        task = asyncio.ensure_future(pull(Steps(RUN, WaitsOn)))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    await consume(by_async_for)
    await consume(lambda iterator: drain(make(impl), iterator))


@pytest.mark.parametrize(
    ("yield_at", "error", "message"),
    [
        (-1, OverflowError, "can't convert negative int to unsigned"),
        (2**64, OverflowError, "int too big to convert"),
        (1.5, TypeError, "'float' object cannot be interpreted as an integer"),
        (None, TypeError, "'NoneType' object cannot be interpreted as an integer"),
        ("5", TypeError, "'str' object cannot be interpreted as an integer"),
    ],
)
async def test_a_yield_at_that_is_no_byte_count_is_refused_before_anything_is_pulled(
    impl, yield_at, error, message
):
    pulled = []

    async def agent():
        pulled.append(True)
        yield c.text_delta("a")

    t = make(impl)
    with pytest.raises(error, match=message):
        t.drive(agent(), yield_at, STOP)
    assert pulled == [] and t.encode_many([]) == b"" and not t.finished
    assert t.drive(agent(), 2**64 - 1, STOP)[0] == "events"  # the largest is taken
