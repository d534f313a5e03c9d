"""Awaiting what the agent's generator awaits, between ``t.drive`` calls.

``t.drive`` runs the agent's generator step by step itself (no bytecode per
item); when a step awaits something (a model's next chunk, a sleep), it hands
the step back. ``follow`` then does what ``await`` would have done from there
(it passes the awaited object up to the task, sends the task's answers and
throws its exceptions, a cancel, into the step) and drives on with the item
the step gives, for as long as the agent awaits between items: a paced
stream (an await per token) stays in this one frame, one ``drive`` call and
one ``queue`` of the frames per await. It returns the first other stop;
``StopAsyncIteration`` when the generator ends.
"""

from __future__ import annotations

import types


@types.coroutine
def follow(drive, agen, step, awaited, queue, yield_at, stop_at):
    while True:
        try:
            answer = yield awaited
        except GeneratorExit:
            step.close()
            raise
        except BaseException as error:  # a cancel, or what the awaited future raised
            item = yield from _continued(step, step.throw, error)
        else:
            if answer is None:
                # What an asyncio task sends once the awaited future is done:
                # from here the step is an iterator like any, delegated to natively.
                item = yield from step
            else:
                item = yield from _continued(step, step.send, answer)
        kind, frames, value = drive(agen, yield_at, stop_at, item)
        if kind != "await":
            return kind, frames, value
        if frames:
            queue(frames)
        step, awaited = value


@types.coroutine
def resume(step, awaited):
    """The item ``step`` gives once what it awaits is done (``follow``'s first part)."""
    try:
        answer = yield awaited
    except GeneratorExit:
        step.close()
        raise
    except BaseException as error:
        return (yield from _continued(step, step.throw, error))
    if answer is None:
        return (yield from step)
    return (yield from _continued(step, step.send, answer))


def _continued(step, act, value):
    """The rest of ``step`` after ``act(value)`` (its ``send`` or ``throw``)."""
    try:
        awaited = act(value)
    except StopIteration as returned:
        return returned.value
    return (yield from resume(step, awaited))
