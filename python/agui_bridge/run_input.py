"""map_run_input: a RunAgentInput body to the turn an agent runs on.

One Python implementation serves both builds: it runs once per request, not
per event, so it is not on the hot path.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from .errors import RunInputError
from .parts import DEFAULT_POLICY, PartPolicy, check_policy, text_of, upgrade
from .shapes import check_id, check_message

# Containers nested in one body, the body itself counting as one. Everything a
# run stores and reads back is part of a body this deep at most, wrapped in a
# few more levels (a stored message, the state response, a STATE_SNAPSHOT), so
# it stays well inside the transformer's limit (128) and orjson's (254).
MAX_DEPTH = 64


@dataclass(frozen=True)
class Resume:
    """How the client answers pending interrupts.

    ``entries`` are AG-UI 1.0 ``resume`` entries (interruptId, status,
    payload); ``decision``/``interrupt_id`` come from
    ``forwardedProps.command.resume``. When both are sent, the entries win.
    """

    entries: tuple[dict, ...] = ()
    decision: Any = None
    interrupt_id: str | None = None


@dataclass(frozen=True)
class RunInput:
    thread_id: str
    run_id: str
    input: str
    history: list[dict]
    messages: list[dict]
    state: Any = None
    tools: list[dict] = field(default_factory=list)
    context: list[dict] = field(default_factory=list)
    forwarded_props: Any = None
    resume: Resume | None = None
    # What the client declared (contract section 8): absent for 0.0.x clients.
    protocol_version: str | None = None
    # AG-UI 1.0 ``parentRunId``: the run whose end the new branch starts from (turns.py).
    parent_run_id: str | None = None
    # The messages are the client's conversation as it holds it (AG-UI's
    # RunAgentInput), not only its new input (the Agent Protocol's): turns.py.
    conversation: bool = False


def _text_of(content) -> str:
    """The newest user message's text (``parts.text_of``; its media parts go to
    the run as ``ctx.parts``)."""
    return text_of(content)


def _entries(resume) -> tuple[dict, ...]:
    if not isinstance(resume, list):
        raise RunInputError("'resume' must be a list of {interruptId, status, payload?}")
    entries = []
    for entry in resume:
        if not (isinstance(entry, dict) and isinstance(entry.get("interruptId"), str)):
            raise RunInputError("'resume' entries must be objects with a string 'interruptId'")
        status = entry.get("status", "resolved")
        if status not in ("resolved", "cancelled"):
            raise RunInputError("'resume' entry status must be 'resolved' or 'cancelled'")
        entries.append(entry)
    return tuple(entries)


def _command_resume(forwarded_props):
    if not isinstance(forwarded_props, dict):
        return None
    command = forwarded_props.get("command")
    if not isinstance(command, dict) or command.get("resume") is None:
        return None
    resume = command["resume"]
    if isinstance(resume, str):
        return Resume(decision=resume)
    decided = decision_of(resume, "forwardedProps.command.resume")
    if decided is not None:
        return decided
    raise RunInputError(
        "'forwardedProps.command.resume' must be a decision string or {decision, interruptId?}"
    )


def decision_of(value, where: str) -> Resume | None:
    """A ``{decision, interruptId?}`` resume (both protocols' ``command.resume``
    take it), else None; RunInputError for an interruptId that is not a string."""
    if not isinstance(value, dict) or "decision" not in value:
        return None
    interrupt_id = value.get("interruptId")
    if interrupt_id is not None and not isinstance(interrupt_id, str):
        raise RunInputError(f"'{where}.interruptId' must be a string")
    return Resume(decision=value["decision"], interrupt_id=interrupt_id)


def _resume(body: dict) -> Resume | None:
    if body.get("resume") is not None:
        entries = _entries(body["resume"])
        if entries:
            # The 1.0 entries win, so the older form is not even read.
            return Resume(entries=entries)
    return _command_resume(body.get("forwardedProps"))


def _list(body: dict, key: str) -> list:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RunInputError(f"'{key}' must be a list")
    return value


def _check_depth(body) -> None:
    level = [body]
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            raise RunInputError(f"the body is nested deeper than {MAX_DEPTH} levels")
        deeper = []
        for value in level:
            children = value.values() if type(value) is dict else value
            deeper.extend(v for v in children if type(v) is dict or type(v) is list)
        level = deeper
        depth += 1


def check_messages(messages: list, policy: PartPolicy, where: str = "messages") -> list:
    """Each message checked (``shapes.check_message``, the App's ``PartPolicy``),
    legacy ``binary`` parts upgraded (``parts.upgrade``): the messages to keep."""
    out = []
    for index, message in enumerate(messages):
        at = f"{where}[{index}]"
        if isinstance(message, dict):
            message = upgrade(message, f"{at} ({message.get('role')})")
        check_message(message, at)
        check_policy(message.get("content"), f"{at} ({message['role']}).content", policy)
        out.append(message)
    return out


def map_run_input(body, policy: PartPolicy = DEFAULT_POLICY) -> RunInput:
    """Validates a RunAgentInput leniently and returns the turn it asks for
    (its content parts judged by ``policy``, the App's)."""
    if not isinstance(body, dict):
        raise RunInputError("the body must be a JSON object (RunAgentInput)")
    _check_depth(body)
    thread_id = body.get("threadId")
    check_id(thread_id, "'threadId'")
    run_id = body.get("runId")
    if run_id is None or run_id == "":
        run_id = uuid4().hex
    else:
        check_id(run_id, "'runId'")
        if "/" in run_id or run_id in (".", ".."):
            # Its routes (…/runs/{runId}/cancel, /events) take it as one path
            # segment, which clients' URLs drop when it is a dot segment: a run
            # that could be neither stopped nor read by id is not started.
            raise RunInputError("'runId' must not contain '/' nor be '.' or '..'")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RunInputError("'messages' must be a non-empty list")
    messages = check_messages(messages, policy)
    newest_user = None
    for index, message in enumerate(messages):
        if message["role"] == "user":
            newest_user = index
    if newest_user is None:
        raise RunInputError("'messages' has no user message")
    return RunInput(
        thread_id=thread_id,
        run_id=run_id,
        input=_text_of(messages[newest_user].get("content")),
        history=messages[:newest_user],
        messages=messages,
        state=body.get("state"),
        tools=_list(body, "tools"),
        context=_list(body, "context"),
        forwarded_props=body.get("forwardedProps"),
        resume=_resume(body),
        protocol_version=_protocol_version(body),
        parent_run_id=_parent_run_id(body),
        conversation=True,
    )


def _parent_run_id(body: dict) -> str | None:
    parent = body.get("parentRunId")
    if parent is None or parent == "":
        return None
    check_id(parent, "'parentRunId'")
    return parent


# A run's body past this many bytes is parsed and checked in a thread (the
# ingress): its inline attachments' base64 takes milliseconds per MiB to check.
# The same for a join prelude rewritten for a reader of another AG-UI version.
OFF_LOOP_BYTES = 256 << 10


async def off_loop(size: int, fn, *args):
    """``fn(*args)`` for ``size`` bytes of JSON (a request body, a join prelude):
    parsing it or checking its parts, in a thread past ``OFF_LOOP_BYTES`` (never on
    the event loop), else here (a small body costs less than the hop). Every
    protocol's routes use this rule."""
    if size > OFF_LOOP_BYTES:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


def _protocol_version(body: dict) -> str | None:
    declared = body.get("protocolVersion")
    if declared is not None and not isinstance(declared, str):
        raise RunInputError("'protocolVersion' must be a string")
    return declared
