"""AG-UI 1.0 subagents in the events dialect (docs/events-dialect.md, "Subagents").

The rules ``@ag-ui/client`` 1.0.0's verifier holds a stream to: a subagent id
starts once per run, a parent must have started in the run, FINISHED and
ERROR need an open id, and no subagent is open at the run's end. A client
that did not declare 1.0 reads a subagent as the step ``subagent_{id}``, the
crumbs' mapping (contract section 3), and nothing else of it: its schema
has no SUBAGENT_* and the thread's state must not depend on who is reading.

The open subagents live on the framer (``subagents``: id -> the
SUBAGENT_STARTED sent, in order of starting; ``subagent_ids``: every id the
run started), since its terminal events close them.
"""

from __future__ import annotations

from ..errors import CrumbError
from .json_values import copy_json

_OUTCOMES = ("success", "suspended")


def step_name(subagent_id: str) -> str:
    return f"subagent_{subagent_id}"


def check_outcome(item_type: str, outcome) -> None:
    """A SUBAGENT_FINISHED outcome the 1.0 schema knows, or the error naming the field."""
    if outcome is None:
        return
    if outcome.get("type") not in _OUTCOMES:
        raise CrumbError(f'{item_type}: \'outcome.type\' must be "success" or "suspended"')
    ids = outcome.get("interruptIds")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        raise CrumbError(f"{item_type}: 'outcome.interruptIds' must be an array of strings")


def start(framer, f: dict, parent_message_id: str | None) -> None:
    """SUBAGENT_STARTED: a repeated id is dropped; a parent subagent or tool call
    this run never started, and a message it never streamed, are left out."""
    subagent_id = f["subagentRunId"]
    if subagent_id in framer.subagent_ids:
        framer.dropped += 1
        return
    parent = f.get("parentSubagentRunId")
    framer.subagent_ids.add(subagent_id)
    if not framer.protocol_v1:
        framer.subagents[subagent_id] = None
        framer.step_start(step_name(subagent_id))
        return
    event = {"type": "SUBAGENT_STARTED", "subagentRunId": subagent_id, "name": f["name"]}
    if f.get("description") is not None:
        event["description"] = f["description"]
    if parent is not None and parent in framer.subagent_ids and parent != subagent_id:
        event["parentSubagentRunId"] = parent
    tool_call_id = f.get("parentToolCallId")
    if tool_call_id is not None and tool_call_id in framer.known_tools:
        event["parentToolCallId"] = tool_call_id
    if parent_message_id is not None:
        event["parentMessageId"] = parent_message_id
    # Kept for a joining reader (``opening``): a copy, the returned event is the caller's.
    framer.subagents[subagent_id] = dict(event)
    framer.emit(event)


def finished(framer, f: dict) -> None:
    """SUBAGENT_FINISHED {result?, outcome?} of an open subagent, else dropped."""
    if not _end(framer, f["subagentRunId"]):
        return
    event = {"type": "SUBAGENT_FINISHED", "subagentRunId": f["subagentRunId"]}
    if f.get("result") is not None:
        event["result"] = f["result"]
    outcome = f.get("outcome")
    if outcome is not None:
        # Only the schema's members, as STATE_DELTA's operations are sent.
        reduced = {"type": outcome["type"]}
        if outcome["type"] == "suspended" and outcome.get("interruptIds") is not None:
            reduced["interruptIds"] = copy_json(outcome["interruptIds"])
        event["outcome"] = reduced
    framer.emit(event)


def error(framer, f: dict) -> None:
    """SUBAGENT_ERROR {message, code?} of an open subagent, else dropped."""
    if _end(framer, f["subagentRunId"]):
        framer.emit(_error_event(f["subagentRunId"], f["message"], f.get("code")))


def _end(framer, subagent_id: str) -> bool:
    """Closes an open subagent: True when a 1.0 client is to be told how it ended."""
    if subagent_id not in framer.subagents:
        framer.dropped += 1
        return False
    del framer.subagents[subagent_id]
    if framer.protocol_v1:
        return True
    framer.step_end(step_name(subagent_id))
    return False


def _error_event(subagent_id: str, message: str, code: str | None) -> dict:
    event = {"type": "SUBAGENT_ERROR", "subagentRunId": subagent_id, "message": message}
    if code is not None:
        event["code"] = code
    return event


def close_open(framer, message: str | None = None, code: str | None = None) -> None:
    """Before the terminal event (after rule 3's closers, which end a 0.0.x
    client's subagent steps): the open subagents, the latest started first,
    FINISHED before RUN_FINISHED, ERROR with the run's message before RUN_ERROR."""
    if not framer.subagents:
        return
    open_ids = list(framer.subagents)
    framer.subagents.clear()
    if not framer.protocol_v1:
        return
    for subagent_id in reversed(open_ids):
        if message is None:
            framer.emit({"type": "SUBAGENT_FINISHED", "subagentRunId": subagent_id})
        else:
            framer.emit(_error_event(subagent_id, message, code))


def opening(framer) -> list[dict]:
    """The SUBAGENT_STARTED of each open subagent, for a reader joining now."""
    return [dict(e) for e in framer.subagents.values() if e is not None]
