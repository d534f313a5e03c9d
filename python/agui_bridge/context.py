"""What an agent gets: one ``RunContext`` per run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .parts import media_of

# The shapes of the ids the transformer generates ("{runId}:m1", ":r1", ":t1",
# ":i1") and the ingress gives an id-less user message (":u1"): a name of this
# shape could collide with an id generated after it was handed out.
_GENERATED = re.compile(r"[mrtiu][0-9]+")


@dataclass(frozen=True)
class Resumption:
    """The client's answer to the thread's pending interrupts.

    ``interrupts`` are the pending interrupts this run answers (as they were
    stored: ``{id, reason, message?, ...}``). ``decision`` is the decision of
    ``forwardedProps.command.resume``, or for AG-UI 1.0 ``resume`` entries the
    first entry's ``payload``; ``status`` is ``"resolved"`` or ``"cancelled"``;
    ``entries`` are the 1.0 entries as sent (empty for the forwardedProps form).
    """

    interrupts: tuple[dict, ...]
    decision: Any = None
    interrupt_id: str | None = None
    status: str = "resolved"
    entries: tuple[dict, ...] = ()

    @property
    def interrupt(self) -> dict | None:
        """The answered interrupt when there is one (the common case)."""
        if self.interrupt_id is not None:
            for interrupt in self.interrupts:
                if interrupt.get("id") == self.interrupt_id:
                    return interrupt
        return self.interrupts[0] if self.interrupts else None


@dataclass(frozen=True)
class RunContext:
    """One run of an agent.

    ``input`` is the text of this turn's new user message (``""`` when the run
    only carries tool results or a resume); ``input_message`` is that message
    as the thread stores it (its id included: an agent that hands the turn to
    a framework keyed by message id uses this id, never one made from the
    runId, which clients reuse), or ``None``. ``history`` is the conversation
    before this turn, as AG-UI messages (server-side, from the store, plus any
    earlier messages the client sent that the thread did not hold); its
    messages are shared with the store's cache, so copy one before changing it.
    ``tool_results`` are the newest ``tool`` messages that answer this thread's
    tool calls (frontend tools). ``state`` is the thread's shared state (the
    stored one, updated with the client's ``state``). ``identity`` is what
    ``authenticate`` returned (``None`` without auth).

    ``parts`` are the media parts (image, audio, video, document: AG-UI 1.0
    ``ContentPart``s) of this turn's user message, in order, as the thread
    stores them (``input`` holds its text parts, joined by newlines);
    ``input_message["content"]`` has every part in the order sent. A part's
    ``source`` is ``{"type": "data", "value": base64, "mimeType"}``, ``{"type":
    "url", "value"}`` (never fetched by the server) or ``{"type": "file",
    "value"}`` (a provider's handle); the adapters pass them on to the model.

    ``new_id(name)`` makes an id for a tool call, an interrupt or a task that
    no message, tool call or interrupt of the thread holds: ``"{runId}:{name}"``,
    or ``"{runId}:{name}-{n}"`` with the next free n when a client reused the
    runId. ``held`` is the set it checks and adds to (the thread's ids).
    """

    thread_id: str
    run_id: str
    agent_id: str
    input: str
    history: list[dict] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    resume: Resumption | None = None
    tools: list[dict] = field(default_factory=list)
    tool_results: list[dict] = field(default_factory=list)
    context: list[dict] = field(default_factory=list)
    forwarded_props: Any = None
    identity: Any = None
    messages: list[dict] = field(default_factory=list)
    held: set[str] = field(default_factory=set, repr=False, compare=False)
    input_message: dict | None = None
    # What the client declared (RunAgentInput.protocolVersion; contract section 8).
    protocol_version: str | None = None

    @property
    def parts(self) -> list[dict]:
        """This turn's media parts (see the class doc); ``[]`` without any."""
        message = self.input_message
        return media_of(message.get("content")) if message is not None else []

    def new_id(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise TypeError("new_id needs a non-empty name")
        if _GENERATED.fullmatch(name):
            raise ValueError(f"{name!r} has the shape of the ids the transformer generates")
        return fresh_id(f"{self.run_id}:{name}", self.held)


def fresh_id(base: str, held: set[str], sep: str = "-") -> str:
    """``base``, or ``base{sep}{n}`` with the smallest n from 2 that ``held`` lacks; held."""
    candidate = base
    n = 1
    while candidate in held:
        n += 1
        candidate = f"{base}{sep}{n}"
    held.add(candidate)
    return candidate


@dataclass(frozen=True)
class RunInfo:
    """What an ``on_event`` callback learns about the run an event belongs to."""

    agent_id: str
    thread_id: str
    run_id: str


__all__ = ["Resumption", "RunContext", "RunInfo"]
