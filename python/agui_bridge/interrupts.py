"""A thread's pending interrupts, as AG-UI clients restore and answer them.

Stored interrupts are AG-UI 1.0 ``Interrupt`` objects (``{id, reason,
message?, toolCallId?, responseSchema?, ...}``: what ``RUN_FINISHED``'s
interrupt outcome carried). On reload a client gets them two ways from
``GET /threads/{id}/state``: ``pendingInterrupts`` (``AbstractAgent``'s own
field name in @ag-ui/client) and, where assistant-ui's AG-UI runtime looks,
on the last assistant message's ``metadata.custom.agui.interrupts`` (its
``fromAgUiMessages`` turns that message into one that requires action).

A pending interrupt is answered only by a resume: AG-UI 1.0 ``resume``
entries (``status: "cancelled"`` included: a cancel is an answer) or the
older single ``resume`` forms. Any other run on the thread is refused with
409 ``interrupt_pending`` naming them: settling them silently would drop the
question the user was asked.

A stopped run (``POST …/cancel``, a supersede, ``multitask_strategy``
interrupt) leaves nothing pending, whatever the client's version: a page
that stopped reading got no terminal event, and a 1.0 client is told
``cancelled``. What a client may still hold is kept aside (``runs/run.py``,
``Run._save``): the interrupts the run resumed (a page that stopped reading
holds them, and both @ag-ui/client versions then send nothing but their
resume) and those it asked, which a 0.0.x client reading to the end was
offered in its ``RUN_FINISHED`` (the transformer's bytes for 0.0.x are
unchanged).

Interrupts **kept aside** are not pending (no 409, the thread's status is
not ``interrupted``, the state shows none), but a resume that names only
interrupts kept aside, while none is pending, re-opens the ones it names
(``reopened``, ``answerable``); any other run settles them. They are stored in the same
list as the pending ones, each wrapped as ``{"keptAside": interrupt}``, so
every store keeps them as it is; ``Thread`` splits them off when loaded.
"""

from __future__ import annotations

from .errors import HttpError

KEPT_ASIDE = "keptAside"


def kept_aside(entry) -> bool:
    """A stored entry is an interrupt kept aside by a stopped run."""
    return isinstance(entry, dict) and "id" not in entry and isinstance(entry.get(KEPT_ASIDE), dict)


def split(entries) -> tuple[list[dict], list[dict]]:
    """The stored list as ``(pending, kept aside)``."""
    if not any(kept_aside(e) for e in entries):
        return list(entries), []
    pending = [e for e in entries if not kept_aside(e)]
    return pending, [e[KEPT_ASIDE] for e in entries if kept_aside(e)]


def stored(pending: list[dict], kept: list[dict]) -> list[dict]:
    """What a save stores: the pending interrupts, then those kept aside (each id once)."""
    if not kept:
        return pending
    ids = {i.get("id") for i in pending}
    out = list(pending)
    for interrupt in kept:
        if interrupt.get("id") not in ids:
            ids.add(interrupt.get("id"))
            out.append({KEPT_ASIDE: interrupt})
    return out


def aside_of(thread) -> list[dict]:
    """The interrupts a stopped run kept aside on ``thread`` (None: none)."""
    return list(getattr(thread, "kept_aside", None) or [])


def answerable(thread) -> list[dict]:
    """The interrupts a resume on ``thread`` may name: the pending ones, else,
    when none is pending, those kept aside by a stopped run (a resume naming
    them re-opens them: ``reopened``)."""
    if thread is None:
        return []
    return list(thread.interrupts) or aside_of(thread)


def reopened(resume, thread) -> list[dict]:
    """The interrupts a request resumes on ``thread``: the pending ones, or, when
    none is pending and the resume names only interrupts kept aside by a stopped
    run (what a page that stopped reading still holds), those it names (all of
    them for a resume that names none)."""
    pending = list(thread.interrupts) if thread is not None else []
    if pending or resume is None:
        return pending
    kept = answerable(thread)
    if not kept:
        return pending
    if resume.entries:
        named = {e.get("interruptId") for e in resume.entries}
    elif resume.interrupt_id is not None:
        named = {resume.interrupt_id}
    else:
        return kept
    chosen = [i for i in kept if i.get("id") in named]
    return chosen if len(chosen) == len(named) else pending


def agui_interrupts(pending: list[dict]) -> list[dict]:
    """The pending interrupts in AG-UI's ``Interrupt`` shape (``id`` and ``reason`` strings)."""
    out = []
    for interrupt in pending:
        if not isinstance(interrupt, dict) or not isinstance(interrupt.get("id"), str):
            continue
        entry = dict(interrupt)
        if not isinstance(entry.get("reason"), str):
            entry["reason"] = "human_required"
        out.append(entry)
    return out


def on_last_assistant(messages: list[dict], interrupts: list[dict]) -> list[dict]:
    """``messages`` with ``interrupts`` on the last assistant message's
    ``metadata.custom.agui.interrupts`` (copies: the stored messages are not changed)."""
    if not interrupts:
        return messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "assistant":
            continue
        metadata = dict(message.get("metadata") or {})
        custom = dict(metadata.get("custom") or {})
        agui = dict(custom.get("agui") or {})
        agui["interrupts"] = interrupts
        custom["agui"] = agui
        metadata["custom"] = custom
        out = list(messages)
        out[index] = {**message, "metadata": metadata}
        return out
    return messages


def refuse_unanswered(thread_id: str, pending: list[dict], resume) -> None:
    """409 ``interrupt_pending`` for a run that does not answer the thread's interrupts."""
    if not pending or resume is not None:
        return
    ids = [i.get("id") for i in pending if isinstance(i, dict)]
    named = ", ".join(repr(i) for i in ids)
    raise HttpError(
        409,
        "interrupt_pending",
        f"thread {thread_id!r} has pending interrupts ({named}): resume or cancel them"
        " (RunAgentInput.resume entries, status 'cancelled' to cancel) before a new turn",
    )
