"""What ``async for`` iterates for one step of an async iterator: the rule both
builds' ``drive`` apply to what ``__anext__()`` gives.

An async generator's ``__anext__()`` gives its own step object (``ASEND``),
stepped as it is: both builds check for that type first and come here only
for other async iterators (an ``async def __anext__``, a future, a class of
an SDK's). Here are CPython's rules for those (``GET_ANEXT`` and ``await``),
errors and messages included, so a step ``async for`` refuses is refused
alike by both builds, and one it accepts is stepped as it would step it.
"""

from __future__ import annotations

import contextlib
import inspect
import types


async def _one():
    yield


def _asend_type() -> type:
    agen = _one()
    step = agen.__anext__()
    # Closed here (never started, it runs nothing), so that an event loop's
    # finalizer hook is not left a task to close it.
    with contextlib.suppress(StopIteration):
        agen.aclose().send(None)
    return type(step)


ASEND = _asend_type()


def _is_coroutine(step) -> bool:
    """A coroutine, or a generator made one by ``types.coroutine``."""
    if isinstance(step, types.CoroutineType):
        return True
    return isinstance(step, types.GeneratorType) and bool(
        step.gi_code.co_flags & inspect.CO_ITERABLE_COROUTINE
    )


def step_iterator(step):
    """The iterator ``await step`` runs; the ``TypeError`` ``async for`` raises
    for a step that is no awaitable, or whose ``__await__`` fails."""
    if isinstance(step, ASEND) or _is_coroutine(step):
        return step
    try:
        return _awaited_iterator(step)
    except Exception as error:  # whatever failed, `async for` says this (its cause: what)
        raise TypeError(
            f"'async for' received an invalid object from __anext__: {type(step).__name__}"
        ) from error


def _awaited_iterator(step):
    dunder_await = getattr(type(step), "__await__", None)
    if dunder_await is None:
        raise TypeError(f"object {type(step).__name__} can't be used in 'await' expression")
    iterator = dunder_await(step)
    if _is_coroutine(iterator):
        raise TypeError("__await__() returned a coroutine")
    if not hasattr(type(iterator), "__next__"):
        raise TypeError(f"__await__() returned non-iterator of type '{type(iterator).__name__}'")
    return iterator


def send_none(iterator):
    """Resumes ``iterator`` as ``await`` does (``PyIter_Send`` with ``None``): by
    ``next`` when it is an iterator, else by its ``send`` (a coroutine)."""
    if hasattr(type(iterator), "__next__"):
        return next(iterator)
    return iterator.send(None)
