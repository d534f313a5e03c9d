"""The in-process thread store (``memory://``): for tests and demos."""

from __future__ import annotations

import copy


class MemoryStore:
    def __init__(self):
        self._threads: dict[str, dict] = {}

    async def load(self, thread_id: str):
        from . import Thread

        record = self._threads.get(thread_id)
        if record is None:
            return None
        return Thread(
            thread_id=thread_id,
            agent_id=record["agent_id"],
            messages=copy.deepcopy(record["messages"]),
            state=copy.deepcopy(record["state"]),
            interrupts=copy.deepcopy(record["interrupts"]),
        )

    async def save(self, thread_id, agent_id, new_messages, state, interrupts) -> None:
        record = self._threads.setdefault(
            thread_id,
            {"agent_id": agent_id, "messages": [], "ids": set(), "state": {}, "interrupts": []},
        )
        if record["agent_id"] is None:
            record["agent_id"] = agent_id
        for message in new_messages:
            message_id = message.get("id")
            if message_id in record["ids"]:
                continue
            record["ids"].add(message_id)
            record["messages"].append(copy.deepcopy(message))
        record["state"] = copy.deepcopy(state)
        record["interrupts"] = copy.deepcopy(interrupts)

    async def close(self) -> None:
        pass
