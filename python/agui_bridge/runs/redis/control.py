"""A node's control channel (pub/sub): a cancel sent from any node reaches the
node that runs the run."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import orjson

from ..supersede import stop as superseded
from .client import Client, RedisError

log = logging.getLogger("agui_bridge.runs")


def channel_of(node: str) -> bytes:
    return b"agui:node:" + node.encode() + b":cancel"


async def send_cancel(
    client: Client, node: str, thread_id: str, run_id: str, why: str = "cancel"
) -> bool:
    """Asks ``node`` to stop a run (``why``: ``cancel``, or ``supersede``: stopped as
    ``runs.supersede.stop`` stops it); False when no node listens there (it is gone)."""
    message = [thread_id, run_id] if why == "cancel" else [thread_id, run_id, why]
    return bool(await client.call("publish", channel_of(node), orjson.dumps(message)))


class Control:
    """Keeps this node subscribed to its channel and stops the runs it is asked to."""

    def __init__(self, client: Client, node: str, local: dict):
        self.client = client
        self.node = node
        self.local = local  # the runs this node runs (their sinks), by (thread, run)
        self.task: asyncio.Task | None = None
        self.listening: asyncio.Event | None = None  # subscribed

    def ensure(self) -> None:
        """(Re)starts the listener when it is not running."""
        if self.task is None or self.task.done():
            self.listening = asyncio.Event()
            self.task = asyncio.get_running_loop().create_task(self._listen())

    async def subscribed(self, timeout: float) -> None:
        """Waits (bounded) until the channel is subscribed."""
        if self.listening is None or self.listening.is_set():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.listening.wait()

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.task = None

    async def _listen(self) -> None:
        channel = channel_of(self.node)
        while True:
            pubsub = self.client.blocking.pubsub()
            try:
                await pubsub.subscribe(channel)
                self.listening.set()
                async for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    thread_id, run_id, *why = orjson.loads(message["data"])
                    sink = self.local.get((thread_id, run_id))
                    if sink is None:
                        continue
                    if why == ["supersede"]:
                        superseded(sink.run)
                    else:
                        sink.run.stop()
            except asyncio.CancelledError:
                raise
            except RedisError as error:
                log.debug("the control channel dropped: %s", error)
            except Exception:
                log.exception("the control channel failed")
            finally:
                self.listening.clear()
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(0.5)
