"""The events dialect's reasoning and activity (docs/events-dialect.md): the
agent's ``REASONING_*`` and ``ACTIVITY_*`` repaired as its text is (contract
section 8). The framing core opens and closes reasoning messages; this keeps
the agent's ids apart from the ones they stream under."""

from __future__ import annotations

from ..errors import CrumbError
from .framing import Framer
from .json_patch import apply_patch
from .json_values import copy_json


class Repair:
    __slots__ = ("activities", "ended", "messages", "spans")

    def __init__(self):
        # The agent's reasoning message id -> the id it streams under (None: no content yet).
        self.messages: dict[str, str | None] = {}
        self.ended: set[str] = set()
        # The agent's spans (REASONING_START): open or not.
        self.spans: dict[str, bool] = {}
        # The agent's activity id -> the id it streams under (its content is the
        # run's messages': they are stored with the thread).
        self.activities: dict[str, str] = {}

    def start_span(self, framer: Framer, message_id: str) -> None:
        if message_id in self.spans:
            framer.dropped += 1
        else:
            self.spans[message_id] = True

    def end_span(self, framer: Framer, message_id: str) -> None:
        """REASONING_END closes the span, and with it the reasoning it holds."""
        if self.spans.get(message_id) is not True:
            framer.dropped += 1
            return
        self.spans[message_id] = False
        framer.close_reasoning()

    def start(self, framer: Framer, message_id: str) -> None:
        """REASONING_MESSAGE_START announces the id; content opens it."""
        if message_id in self.messages:
            framer.dropped += 1
        else:
            self.messages[message_id] = None

    def content(self, framer: Framer, message_id: str, delta: str) -> None:
        if message_id in self.ended:
            framer.dropped += 1
            return
        if not delta:
            self.messages.setdefault(message_id, None)
            return
        streamed = self.messages.get(message_id)
        if streamed is None or streamed != framer.reasoning_id:
            # Ids are never reused in a run: a message the core closed goes on
            # under a fresh id, as text does.
            taken = message_id in framer.used_ids or message_id in framer.held
            streamed = framer.new_id("th") if taken else message_id
            framer.open_reasoning_as(streamed)
            self.messages[message_id] = streamed
        framer.reasoning(delta)

    def chunk(self, framer: Framer, message_id: str | None, delta: str) -> None:
        if message_id is None:
            framer.reasoning(delta)
        else:
            self.content(framer, message_id, delta)

    def end(self, framer: Framer, message_id: str) -> None:
        if message_id not in self.messages or message_id in self.ended:
            framer.dropped += 1
            return
        self.ended.add(message_id)
        streamed = self.messages[message_id]
        if streamed is not None and streamed == framer.reasoning_id:
            framer.close_reasoning()

    def encrypted(self, framer: Framer, subtype: str, entity_id: str, value: str) -> None:
        """A ``message`` entity is named by the agent's id."""
        if subtype == "message" and self.messages.get(entity_id) is not None:
            entity_id = self.messages[entity_id]
        framer.encrypted(subtype, entity_id, value)

    def activity_snapshot(self, framer: Framer, f: dict) -> None:
        """ACTIVITY_SNAPSHOT. An id the run used for something else or the thread
        holds (an activity of an earlier run included) goes out under a fresh
        one: the client's reducer would replace that message in place, where
        the stored thread cannot follow."""
        agent_id = f["messageId"]
        message_id = self.activities.get(agent_id)
        known = message_id is not None
        if message_id is None:
            taken = agent_id in framer.used_ids or agent_id in framer.held
            message_id = framer.new_id("a") if taken else agent_id
            framer.used_ids.add(message_id)
            self.activities[agent_id] = message_id
        # replace=False keeps an existing activity (content and type), as the client does.
        if not (known and f.get("replace") is False):
            framer.messages.set_activity(message_id, f["activityType"], copy_json(f["content"]))
        event = {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": message_id,
            "activityType": f["activityType"],
            "content": f["content"],
        }
        if isinstance(f.get("replace"), bool):
            event["replace"] = f["replace"]
        framer.emit(event)

    def activity_delta(self, framer: Framer, f: dict) -> None:
        """ACTIVITY_DELTA: a JSON Patch of an activity this run made, applied to its
        content as the client will (RFC 6902, as STATE_DELTA); one that does not
        apply is dropped, and each operation is sent reduced to its schema's
        members. An empty patch sends nothing. The client takes the delta's
        ``activityType`` as the activity's."""
        message_id = self.activities.get(f["messageId"])
        if message_id is None:
            framer.dropped += 1
            return
        content = framer.messages.activity(message_id)
        try:
            patched, sent = apply_patch("ACTIVITY_DELTA", content, f["patch"])
        except CrumbError:
            framer.dropped += 1
            return
        if not sent:
            return
        framer.messages.set_activity(message_id, f["activityType"], patched)
        framer.emit(
            {
                "type": "ACTIVITY_DELTA",
                "messageId": message_id,
                "activityType": f["activityType"],
                "patch": sent,
            }
        )
