"""The one rule a stopping worker applies to the tasks it still has under way."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


async def wait_then_cancel(tasks: Iterable[asyncio.Task], timeout: float) -> set[asyncio.Task]:
    """Waits for ``tasks`` at most ``timeout`` seconds, then cancels those still
    going and waits for them to end: they are returned (none left behind to
    run against what the worker closes next)."""
    tasks = list(tasks)
    if not tasks:
        return set()
    _, left = await asyncio.wait(tasks, timeout=max(0.0, timeout))
    for task in left:
        task.cancel()
    if left:
        await asyncio.wait(left)
    return left
