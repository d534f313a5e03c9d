"""Turn merging: what a run's request adds to its thread, as plain functions.

No server and no store call here: the run gate (``gate.py``) loads the
thread and hands it in. ``merge(thread, run_input)`` is the whole rule; its
parts are the history the agent sees, the new messages the thread stores
(the user's turn), the tool results the request carries, and the resume of
pending interrupts. A request is refused (``HttpError``: 400 or 409) before
anything is stored.

Ids: a message is known by its id. The stored messages win over a resent
copy; an id-less message is kept only when it is the newest user message
(numbered ``{runId}:u{n}``, skipping the ids the thread holds).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import orjson

from .context import Resumption
from .errors import HttpError
from .interrupts import refuse_unanswered
from .store.ids import HeldIds

log = logging.getLogger("agui_bridge.ingress")


@dataclass
class Turn:
    history: list[dict]  # what the agent sees before this turn (stored + earlier new ones)
    new: list[dict]  # what the thread stores before the run starts: the user's turn
    new_user: dict | None  # the newest user message (None: a resume, state only)
    tool_results: list[dict]  # results for the thread's calls, after its last other message
    pending: list[dict]  # the thread's pending interrupts
    resume: Resumption | None
    state: dict  # the thread's state with the request's on top
    held: HeldIds  # every id the thread holds once ``new`` is stored
    base: list[dict]  # the thread's messages before the run's output (stored + new)


def merge(thread, run_input) -> Turn:
    """The turn a request makes on ``thread`` (None: a new thread)."""
    stored = thread.messages if thread is not None else []
    pending = thread.interrupts if thread is not None else []
    resume = resumption(run_input.resume, pending)
    refuse_unanswered(run_input.thread_id, pending, resume)  # 409 interrupt_pending
    held, known_calls = held_ids(thread)
    new, new_user, tool_results = new_messages(
        run_input.messages, run_input.thread_id, run_input.run_id, stored, held, known_calls
    )
    history = list(stored) + [m for m in new if m is not new_user and m not in tool_results]
    return Turn(
        history=history,
        new=new,
        new_user=new_user,
        tool_results=tool_results,
        pending=pending,
        resume=resume,
        state=merged_state(thread, run_input.state),
        held=thread_ids(held, known_calls, pending),
        base=list(stored) + new,
    )


def held_ids(thread) -> tuple[HeldIds, HeldIds]:
    """The message ids and the tool call ids the thread holds (this load's own:
    adding to them changes no other run's)."""
    if thread is not None and thread.ids is not None and thread.call_ids is not None:
        return HeldIds.of(thread.ids), HeldIds.of(thread.call_ids)
    stored = thread.messages if thread is not None else []
    held = HeldIds.of(m.get("id") for m in stored if isinstance(m.get("id"), str))
    calls = HeldIds.of(
        call.get("id")
        for m in stored
        if m.get("role") == "assistant"
        for call in (m.get("toolCalls") or ())
        if isinstance(call, dict) and isinstance(call.get("id"), str)
    )
    return held, calls


def new_messages(messages, thread_id, run_id, stored, held, known_calls):
    """``(new, new_user, tool_results)``: the request's messages the thread does
    not hold yet. ``held`` and ``known_calls`` get the new ids."""
    added: dict[str, dict] = {}  # this input's new messages by id
    # An Agent Protocol run may carry no user message (a resume, state only).
    newest_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    last_other = max((i for i, m in enumerate(messages) if m["role"] != "tool"), default=-1)
    new: list[dict] = []
    new_user = None
    tool_results: list[dict] = []
    for index, message in enumerate(messages):
        message_id = message.get("id")
        if isinstance(message_id, str) and message_id:
            if message_id in held:
                if index == newest_user:
                    same_turn(thread_id, _held(stored, added, message_id), message)
                continue
        elif index == newest_user:
            message = {**message, "id": user_id(run_id, held)}
        else:
            continue  # an id-less older message cannot be deduplicated
        role = message["role"]
        if role == "activity":
            continue
        if role == "tool":
            if message.get("toolCallId") not in known_calls:
                log.info("thread %s: dropped a tool message for an unknown call", thread_id)
                continue
            if index > last_other:
                tool_results.append(message)
        elif role == "assistant":
            for call in message.get("toolCalls") or ():
                if isinstance(call, dict):
                    known_calls.add(call.get("id"))
        if index == newest_user:
            new_user = message
        held.add(message["id"])
        added[message["id"]] = message
        new.append(message)
    return new, new_user, tool_results


def merged_state(thread, sent) -> dict:
    """The thread's state with the request's keys on top."""
    state = dict(thread.state) if thread is not None else {}
    if isinstance(sent, dict):
        state.update(sent)
    return state


def state_update(thread, added: list[dict], values: dict) -> tuple[list[dict], dict]:
    """An Agent Protocol state update: the messages the thread does not hold
    yet, and the state with ``values`` on top."""
    held = {m.get("id") for m in thread.messages}
    return [m for m in added if m["id"] not in held], {**thread.state, **values}


def same_turn(thread_id: str, held: dict, sent: dict) -> None:
    """The newest user message under an id the thread holds must be that message.

    Earlier messages of a resent array are taken as already in the history
    (the stored ones win). The newest user message is the turn: resent as it
    was, it is a retry; with other content it would be a turn silently lost,
    so the request is refused.
    """
    if held.get("role") != sent.get("role") or held.get("content") != sent.get("content"):
        raise HttpError(
            409,
            "message_id_conflict",
            f"thread {thread_id!r} already holds a different message {sent['id']!r};"
            " send a new message under a new id",
        )


def user_id(run_id: str, held) -> str:
    """The id of an id-less user message: ``{runId}:u{n}``, unique in the thread."""
    n = 1
    while f"{run_id}:u{n}" in held:
        n += 1
    return f"{run_id}:u{n}"


def thread_ids(messages: HeldIds, calls: HeldIds, pending: list[dict]) -> HeldIds:
    """Every id the thread holds once this run's input is saved: what new ids must skip."""
    # The stored ids are shared, not copied: a run's cost does not grow with its thread.
    ids = messages.union(calls, (i["id"] for i in pending if isinstance(i.get("id"), str)))
    ids.discard(None)
    return ids


def _held(stored: list[dict], added: dict, message_id: str) -> dict:
    """The held message with that id (the newest first: a resent turn is recent)."""
    found = added.get(message_id)
    if found is None:
        # {}: a stored row left out of the thread (store/tail.py) is no match.
        found = next((m for m in reversed(stored) if m.get("id") == message_id), {})
    return found


def resumption(resume, pending: list[dict]) -> Resumption | None:
    """The request's resume checked against the thread's pending interrupts."""
    if resume is None:
        return None
    if not pending:
        message = "this thread has no pending interrupt to resume"
        raise HttpError(400, "no_pending_interrupt", message)
    pending_ids = [i.get("id") for i in pending]
    if resume.entries:
        ids = [e["interruptId"] for e in resume.entries]
        unknown = [i for i in ids if i not in pending_ids]
        if unknown:
            raise HttpError(400, "unknown_interrupt", f"no pending interrupt {unknown[0]!r}")
        missing = [i for i in pending_ids if i not in ids]
        if missing:
            raise HttpError(
                400,
                "incomplete_resume",
                f"the resume must answer every pending interrupt (missing {missing[0]!r})",
            )
        first = resume.entries[0]
        return Resumption(
            interrupts=tuple(pending),
            decision=first.get("payload"),
            interrupt_id=first["interruptId"],
            status=first.get("status", "resolved"),
            entries=tuple(resume.entries),
        )
    if resume.interrupt_id is not None and resume.interrupt_id not in pending_ids:
        raise HttpError(400, "unknown_interrupt", f"no pending interrupt {resume.interrupt_id!r}")
    return Resumption(
        interrupts=tuple(pending), decision=resume.decision, interrupt_id=resume.interrupt_id
    )


def carried(messages) -> frozenset:
    """What a request's messages are, to tell a retry from new input.

    A message is its id; an id-less one (the ingress numbers it) is its role
    and content, so a new id-less turn under a reused runId is not a retry.
    """
    keys = set()
    for m in messages or ():
        if not isinstance(m, dict) or m.get("role") == "activity":
            continue
        message_id = m.get("id")
        if isinstance(message_id, str) and message_id:
            keys.add(message_id)
        else:
            keys.add(orjson.dumps([m.get("role"), m.get("content")], option=orjson.OPT_SORT_KEYS))
    return frozenset(keys)
