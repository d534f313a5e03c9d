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
        # The activity messages of the run and their content (as the client has it).
        self.activities: dict[str, dict] = {}

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
        """ACTIVITY_SNAPSHOT, under an id nothing else of the run or thread uses."""
        message_id = f["messageId"]
        if message_id not in self.activities and (
            message_id in framer.used_ids or message_id in framer.held
        ):
            framer.dropped += 1
            return
        # replace=False keeps an existing activity's content, as the client does.
        if not (message_id in self.activities and f.get("replace") is False):
            self.activities[message_id] = copy_json(f["content"])
        framer.used_ids.add(message_id)
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
        members. An empty patch sends nothing."""
        content = self.activities.get(f["messageId"])
        if content is None:
            framer.dropped += 1
            return
        try:
            patched, sent = apply_patch("ACTIVITY_DELTA", content, f["patch"])
        except CrumbError:
            framer.dropped += 1
            return
        self.activities[f["messageId"]] = patched
        if not sent:
            return
        framer.emit(
            {
                "type": "ACTIVITY_DELTA",
                "messageId": f["messageId"],
                "activityType": f["activityType"],
                "patch": sent,
            }
        )
