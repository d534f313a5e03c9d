"""Awaiting the rest of an async generator's step that ``drive`` stopped at.

``t.drive`` runs the agent's generator step by step itself (no bytecode per
item); when a step awaits something (a model's next chunk, a sleep), it hands
the step back. ``await resume(step, awaited)`` then does what ``await`` would
have done from there: it passes ``awaited`` up to the task, sends the task's
answers and throws its exceptions (a cancel) into the step, and gives the
item the step finally returns (``StopAsyncIteration`` when the generator ends).
"""

from __future__ import annotations

import types


@types.coroutine
def resume(step, awaited):
    try:
        answer = yield awaited
    except GeneratorExit:
        step.close()
        raise
    except BaseException as error:  # a cancel, or what the awaited future raised
        return (yield from _continued(step, step.throw, error))
    if answer is None:
        # What an asyncio task sends once the awaited future is done: from
        # here the step is an iterator like any, delegated to natively.
        return (yield from step)
    return (yield from _continued(step, step.send, answer))


def _continued(step, act, value):
    """The rest of ``step`` after ``act(value)`` (its ``send`` or ``throw``)."""
    try:
        awaited = act(value)
    except StopIteration as returned:
        return returned.value
    return (yield from resume(step, awaited))
