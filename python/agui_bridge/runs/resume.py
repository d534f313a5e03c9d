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

_PENDING = object()  # the step has not given its item yet


def _throw_into(step, error):
    """``step.throw(error)``; a step with no ``throw`` (a plain iterator) raises
    it where the agent awaits, as ``await`` does."""
    throw = getattr(step, "throw", None)
    if throw is None:
        raise error
    return throw(error)


@types.coroutine
def follow(drive, agen, step, awaited, queue, yield_at, stop_at):
    while True:
        item = _PENDING
        while item is _PENDING:
            thrown = answer = None
            try:
                answer = yield awaited
            except GeneratorExit:
                # A plain iterator (an `__await__` may give one) has nothing to close.
                close = getattr(step, "close", None)
                if close is not None:
                    close()
                raise
            except BaseException as error:  # a cancel, or what the awaited future raised
                thrown = error
            if thrown is None and answer is None:
                # What an asyncio task sends once the awaited future is done:
                # from here the step is an iterator like any, delegated to natively.
                item = yield from step
                break
            # Passed on here, not in the handler above: neither is the handler
            # still active for the agent once it has dealt with the error, nor
            # does a step that keeps failing nest a frame per failure.
            try:
                awaited = _throw_into(step, thrown) if thrown is not None else step.send(answer)
            except StopIteration as returned:
                item = returned.value
            finally:
                thrown = None
        kind, frames, value = drive(agen, yield_at, stop_at, item)
        if kind != "await":
            return kind, frames, value
        if frames:
            queue(frames)
        step, awaited = value
