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

Branches (``branch_point``): the client's list is matched against the
thread's current branch by id. Where it stops before, or diverges from, what
the branch holds after the messages they share, the run starts a new branch
there: the current branch keeps the shared prefix, the client's own messages
follow it, and the store keeps the old branch aside (``store/branches.py``).
A regenerate (the list ends with a held user message the thread answered)
runs the agent on that message again.

A list holding none of the branch's messages appends: a client that sends
only its new messages (a fresh tab that knows the thread id) is told apart
from a conversation started over (assistant-ui's edit of the first message,
sent alone under a new id) by nothing in the request. An App whose clients
all resend what they show says so (``App(clients_resend=True)``): there
such an AG-UI request branches at the thread's start.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import orjson

from .context import Resumption
from .errors import HttpError
from .interrupts import aside_of, refuse_unanswered, reopened
from .store.branches import Cut
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
    cut: Cut | None = None  # the new branch the run starts (None: it appends)


def merge(
    thread,
    run_input,
    branches: bool = True,
    parent_head: str | None = None,
    clients_resend: bool = False,
) -> Turn:
    """The turn a request makes on ``thread`` (None: a new thread); without
    ``branches`` (a store that keeps none) the turn always appends.
    ``parent_head``: the last message of the branch when the request's
    ``parentRunId`` ended (the store's ``head``), the branch point it names.
    ``clients_resend``: the App's AG-UI clients resend the conversation they
    show (``started_over``)."""
    stored = thread.messages if thread is not None else []
    # What a stopped run kept aside: a resume naming them (from a page that
    # stopped reading and still holds them) re-opens them (interrupts.py).
    aside = aside_of(thread)
    pending = reopened(run_input.resume, thread)
    resume = resumption(run_input.resume, pending)
    refuse_unanswered(run_input.thread_id, pending, resume)  # 409 interrupt_pending
    held, known_calls = held_ids(thread)
    left = (held, known_calls)  # ids made by the run skip the branch it leaves too
    cut = None
    # Reasoning is for the answer after it: a list that ends on reasoning (a
    # retry after a Stop while the model thought) asks for that answer again,
    # and the reasoning goes with the answer it replaces.
    sent = run_input.messages
    while sent and sent[-1].get("role") == "reasoning":
        sent = sent[:-1]
    # A resume goes on with the branch it interrupted; one that cancels every
    # pending interrupt (what a client sends to edit or regenerate instead of
    # answering) is a new turn like any other.
    goes_on = resume is not None and not cancels_all(resume)
    if branches and not goes_on:
        kept = named_point(stored, parent_head)
        if kept is None:
            kept = branch_point(sent, stored, held)
        if kept is None and clients_resend and started_over(stored, run_input, held):
            kept = 0
        if kept is not None and kept < len(stored):
            cut = Cut(stored[kept - 1]["id"] if kept else None, run_input.run_id)
            stored = stored[:kept]
            held, known_calls = held_ids(None, stored)
    new, new_user, tool_results = new_messages(
        sent, run_input.thread_id, run_input.run_id, stored, held, known_calls
    )
    # By id: searching the list of results once per new message was quadratic.
    result_ids = {m["id"] for m in tool_results}
    history = list(stored) + [m for m in new if m is not new_user and m["id"] not in result_ids]
    if new_user is None and not goes_on and rerun(sent, stored):
        # The client asks again (a regenerate): the user message it ends with is the input.
        new_user = stored[-1]
        history = history[: len(stored) - 1] + history[len(stored) :]
    elif cut is not None and not new and not goes_on:
        # A regenerate of the answer to tool results: those results are its input again.
        again = rerun_results(sent, stored)
        if again:
            tool_results = again
            history = history[: len(stored) - len(again)] + history[len(stored) :]
    return Turn(
        history=history,
        new=new,
        new_user=new_user,
        tool_results=tool_results,
        pending=pending,
        resume=resume,
        state=merged_state(thread, run_input.state),
        held=thread_ids(held, known_calls, pending + aside).union(*left)
        if cut
        else thread_ids(held, known_calls, pending + aside),
        base=list(stored) + new,
        cut=cut,
    )


def started_over(stored: list[dict], run_input, held) -> bool:
    """From a client that resends the conversation it shows, an AG-UI request
    holding none of the branch's messages is that conversation started over
    (the Agent Protocol's requests carry new input only: they append)."""
    return (
        run_input.conversation
        and bool(stored)
        and not any(isinstance(m.get("id"), str) and m["id"] in held for m in run_input.messages)
    )


# Messages a client may leave out when it resends the conversation (AG-UI 1.0
# reasoning and activity messages): a branch ending with them is not cut for that.
UNSENT_ROLES = ("reasoning", "activity")


def branch_point(messages, stored, held) -> int | None:
    """How many of the current branch's messages a run keeps when the client's
    list leaves the branch (None: it appends to the whole branch).

    The messages the client sends that the branch holds (by id) are shared
    until the first one it does not hold. The branch is left where the shared
    messages stop before its end (a regenerate, a client that diverged), at a
    newest user message resent with other content when nothing the client
    sends after it is held and the branch holds more after it (an edit under
    the same id), and at an assistant or reasoning message resent as a strict
    prefix of the stored one (what a page showed after a Stop). A client that
    sends none of the branch's messages appends.
    """
    if not stored:
        return None
    newest_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    # The tool results the list ends with: this turn's input.
    last_other = max((i for i, m in enumerate(messages) if m.get("role") != "tool"), default=-1)
    last = -1  # the branch position of the last shared message
    size = len(stored)
    # Made on first need: a branch resent in order needs neither, and searching
    # the branch once per message made a long reordered list quadratic.
    positions: dict[str, int] | None = None
    callers: dict[str, int] | None = None
    for index, message in enumerate(messages):
        message_id = message.get("id")
        role = message.get("role")
        if role == "activity" or not isinstance(message_id, str):
            continue
        if last + 1 < size and stored[last + 1].get("id") == message_id:
            position = last + 1  # the usual case: the branch resent in order
        elif message_id in held:
            if positions is None:
                positions = _positions(stored)
            position = positions.get(message_id)
            if position is None:
                continue  # a stored row left out of the thread (store/tail.py)
        elif role in ("system", "developer"):
            continue  # instructions a client puts first, often under fresh ids
        elif role == "tool":
            # A result follows its call (a client may send it without the call).
            if callers is None:
                callers = _callers(stored)
            last = max(last, callers.get(message.get("toolCallId"), -1))
            continue
        else:
            break  # the client's own messages start here
        kept = stored[position]
        if index == newest_user and _edited(kept, message):
            later = (m.get("id") for m in messages[index + 1 :])
            if not any(i in held for i in later):
                # Answered or not (a run that failed, or stopped before any output).
                return position
            return None  # today's rule: same_turn refuses it (409)
        if role in ("assistant", "reasoning") and _stopped(kept, message):
            return position
        if role == "tool" and index > last_other and _edited(kept, message):
            # A result answered again otherwise (the user changed their answer
            # to a frontend tool): the branch goes on from before it, with it.
            return position
        if position > last:
            last = position
    if last < 0:
        return None
    kept = last + 1
    if stored[last].get("role") != "user":
        # Activity messages right after a shared answer are that answer's run's:
        # they stay with it. Reasoning comes before the answer it is for (the
        # next one, which a cut replaces), and after a user message anything
        # left out is the answer a regenerate or an edit replaces.
        while kept < size and stored[kept].get("role") == "activity":
            kept += 1
    end = size
    while end > kept and stored[end - 1].get("role") in UNSENT_ROLES:
        end -= 1
    if kept < end:
        return kept
    if kept < size and rerun(messages, stored[:kept]):
        # Only messages clients leave out follow the user message the client's
        # list ends with (an answer that was all activity): a regenerate still.
        return kept
    return None


def named_point(stored: list[dict], head: str | None) -> int | None:
    """How many messages the branch point a ``parentRunId`` names keeps: those
    up to the one its run ended on (all of them: the run appends). None: none
    named, or its head is not on the current branch (the id rule applies)."""
    if head is None:
        return None
    for index in range(len(stored) - 1, -1, -1):
        if stored[index].get("id") == head:
            return index + 1
    return None


def _positions(stored: list[dict]) -> dict[str, int]:
    """Each message's position on the branch by its id (a thread holds an id
    once: the stores key its messages by id)."""
    return {m["id"]: index for index, m in enumerate(stored) if isinstance(m.get("id"), str)}


def _callers(stored: list[dict]) -> dict[str, int]:
    """The branch position of the assistant message that made each tool call
    (a call id made twice: the later one)."""
    callers = {}
    for index, message in enumerate(stored):
        if message.get("role") != "assistant":
            continue
        for call in message.get("toolCalls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                callers[call["id"]] = index
    return callers


def _edited(held: dict, sent: dict) -> bool:
    return held.get("role") != sent.get("role") or held.get("content") != sent.get("content")


def _stopped(held: dict, sent: dict) -> bool:
    """An assistant (or reasoning) message the client shows cut short: its text
    a strict prefix of the stored one's (whitespace at its end aside: clients
    trim), or its text all there and its tool calls fewer, or the last one's
    arguments cut (the calls stream after the text)."""
    if held.get("role") != sent.get("role"):
        return False
    shown, stored = sent.get("content"), held.get("content")
    if not (isinstance(shown, str) and isinstance(stored, str)):
        return False
    calls = _calls_shown(held, sent)
    if calls is None:
        return False  # calls the stored answer does not have: not a stop
    if shown.rstrip() == stored.rstrip():
        return calls
    return bool(shown.strip()) and stored.startswith(shown)


def _calls_shown(held: dict, sent: dict) -> bool | None:
    """Whether the sent tool calls are the stored ones cut short (fewer, or the
    last one's arguments a strict prefix); None when they are not the stored
    ones' beginning at all."""
    stored, shown = held.get("toolCalls") or [], sent.get("toolCalls") or []
    if not (isinstance(stored, list) and isinstance(shown, list)) or len(shown) > len(stored):
        return None
    cut = len(shown) < len(stored)
    for was, now in zip(stored, shown, strict=False):
        if not (isinstance(was, dict) and isinstance(now, dict)) or was.get("id") != now.get("id"):
            return None
        whole, part = _arguments(was), _arguments(now)
        if whole is None or part is None or not whole.startswith(part):
            return None
        cut = cut or len(part) < len(whole)
    return cut


def _arguments(call: dict) -> str | None:
    function = call.get("function")
    arguments = function.get("arguments") if isinstance(function, dict) else None
    return arguments if isinstance(arguments, str) else "" if arguments is None else None


def rerun(messages, stored: list[dict]) -> bool:
    """The client's newest message is a user message the kept branch ends with:
    the client asks for that turn again."""
    if not stored or stored[-1].get("role") != "user":
        return False
    sent = [m for m in messages if m.get("role") != "activity"]
    return bool(sent) and sent[-1].get("role") == "user" and sent[-1].get("id") == stored[-1]["id"]


def rerun_results(messages, stored: list[dict]) -> list[dict]:
    """The tool results the kept branch ends with, when the client's list ends with
    the last of them (it asks again for the answer to them); else none."""
    results = []
    for message in reversed(stored):
        if message.get("role") != "tool":
            break
        results.append(message)
    if not results:
        return []
    sent = [m for m in messages if m.get("role") not in UNSENT_ROLES]
    if not sent or sent[-1].get("id") != stored[-1]["id"]:
        return []
    return results[::-1]


def cancels_all(resume: Resumption) -> bool:
    """The resume cancels every pending interrupt (AG-UI 1.0 entries, all
    ``status: "cancelled"``): nothing goes on from where the run stopped."""
    return bool(resume.entries) and all(e.get("status") == "cancelled" for e in resume.entries)


def held_ids(thread, stored: list[dict] | None = None) -> tuple[HeldIds, HeldIds]:
    """The message ids and the tool call ids the thread holds (this load's own:
    adding to them changes no other run's); given ``stored``, those of these messages."""
    if thread is not None and thread.ids is not None and thread.call_ids is not None:
        return HeldIds.of(thread.ids), HeldIds.of(thread.call_ids)
    if stored is None:
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
    unplaced = 0  # older tool messages answering no call of the thread
    for index, message in enumerate(messages):
        message_id = message.get("id")
        if isinstance(message_id, str) and message_id:
            if message_id in held:
                if index == newest_user:
                    same_turn(thread_id, _held(stored, added, message_id), message)
                continue
        elif index == newest_user:
            message = {**message, "id": user_id(run_id, held)}
        elif message["role"] == "tool" and index > last_other:
            # A result the run is to get: without an id it could not be stored once.
            raise HttpError(400, "invalid_input", f"messages[{index}] (tool) has no id")
        else:
            continue  # an id-less older message cannot be deduplicated
        role = message["role"]
        if role == "activity":
            continue
        if role == "tool":
            if message.get("toolCallId") not in known_calls:
                if index > last_other:
                    # A result for this turn answering nothing: refused, not lost.
                    raise HttpError(
                        400,
                        "unknown_tool_call",
                        f"messages[{index}] (tool) answers tool call"
                        f" {message.get('toolCallId')!r}, which thread {thread_id!r} never made",
                    )
                # Older history the thread cannot place: an answer to no call
                # would make every later model call on the thread fail.
                unplaced += 1
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
    if unplaced:
        log.info("thread %s: left out %d tool messages for unknown calls", thread_id, unplaced)
    return new, new_user, tool_results


def merged_state(thread, sent) -> dict:
    """The thread's state with the request's keys on top."""
    state = dict(thread.state) if thread is not None else {}
    if isinstance(sent, dict):
        state.update(sent)
    return state


def state_update(
    thread, added: list[dict], values: dict, step: int | None = None
) -> tuple[list[dict], dict, Cut | None]:
    """An Agent Protocol state update, as LangGraph's add_messages applies one:
    ``(messages to save, state, cut)``. A message under an id the current branch
    holds replaces that one where it stands (resent unchanged, nothing to do),
    the others are appended; ``step``: the update forks the branch after its
    first ``step`` messages. Stored messages never change, so a replace or a
    fork is a cut (``store/branches.py``): the old branch is kept, and the new
    one is saved from the first message that differs."""
    kept = len(thread.messages) if step is None else step
    messages = thread.messages[:kept]
    positions = _positions(messages)
    for message in added:
        at = positions.get(message["id"])
        if at is None:
            positions[message["id"]] = len(messages)
            messages.append(message)
        elif messages[at] != message:
            messages[at] = message
            kept = min(kept, at)
    state = {**thread.state, **values}
    if kept == len(thread.messages):
        return messages[kept:], state, None
    return messages[kept:], state, Cut(messages[kept - 1]["id"] if kept else None)


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
    The newest user message is the turn: it is its id, role and content, so
    the turn resent with other content under the runId that carried it is an
    edit (``branch_point``) or a conflict (``same_turn``), as under any
    runId, never that run's stream again with the edit dropped. Its content
    counts by a digest: a run's keys are kept for as long as its log (on
    Redis too), and a turn may carry attachments.
    """
    kept = [m for m in messages or () if isinstance(m, dict) and m.get("role") != "activity"]
    newest = max((i for i, m in enumerate(kept) if m.get("role") == "user"), default=-1)
    keys = set()
    for index, m in enumerate(kept):
        message_id = m.get("id")
        named = isinstance(message_id, str) and message_id
        if named and index != newest:
            keys.add(message_id)
            continue
        said = orjson.dumps([m.get("role"), m.get("content")], option=orjson.OPT_SORT_KEYS)
        if not named:
            keys.add(said)
        else:
            # Three items: never one of the id-less keys (two).
            digest = hashlib.blake2b(said, digest_size=16).hexdigest()
            keys.add(orjson.dumps([message_id, m.get("role"), digest]))
    return frozenset(keys)
