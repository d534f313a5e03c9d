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
"""

from __future__ import annotations

from .errors import HttpError


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
