"""The crumbs dialect (contract section 3, seed 000)."""

from __future__ import annotations

from ..errors import CrumbError
from .fields import check_error_object, parse_fields
from .framing import check_subtype
from .json_values import compact, copy_json, is_unicode
from .stream import EventStream
from .table import CRUMBS, LOOP_REQUIRED

_REQUIRED = CRUMBS
_LOOP_REQUIRED = LOOP_REQUIRED
# The agent-supplied ids that open something (contract section 6); a result
# may still answer a call the thread holds (rule 6 drops it in this run).
_FRESH_IDS = {
    "tool:input:start": "toolCallId",
    "tool:call": "toolCallId",
    "human:required": "interruptId",
}
_LOOP_OWN_FIELDS = frozenset({"type", "loopId", "phase", "iteration"})


def is_file_reference(value) -> bool:
    if not isinstance(value, dict):
        return False
    if not isinstance(value.get("uri"), str) or not isinstance(value.get("mimeType"), str):
        return False
    if "name" in value and not isinstance(value["name"], str):
        return False
    return value.keys() <= {"uri", "mimeType", "name"}


def _file_value(fields: dict) -> dict:
    value = {"uri": fields["uri"], "mimeType": fields["mimeType"]}
    if fields.get("name") is not None:
        value["name"] = fields["name"]
    return value


class CrumbTransformer(EventStream):
    __slots__ = ("_files", "_interrupt_ids", "_interrupts", "_loop", "_streamed")

    def __init__(self, *args, **framing):
        super().__init__(*args, **framing)
        self._streamed: set[str] = set()
        self._interrupts: list[dict] = []
        self._interrupt_ids: set[str] = set()
        self._files: set[str] = set()
        self._loop: dict | None = None

    @property
    def interrupts(self) -> list[dict]:
        """The interrupts recorded by human:required so far (copies)."""
        return copy_json(self._interrupts)

    def _pending_interrupts(self) -> list[dict]:
        # Those of human:required, which a run that ended in RUN_ERROR never offered.
        return [] if self._framer.errored else self.interrupts

    def _parse(self, crumb):
        if not isinstance(crumb, dict):
            raise CrumbError(f"crumb must be a dict, not {type(crumb).__name__}")
        crumb_type = crumb.get("type")
        # A lone surrogate is not a JSON string (rule 11), so such a type is no type.
        if not isinstance(crumb_type, str) or not is_unicode(crumb_type):
            raise CrumbError("crumb has no string 'type'")
        required = _REQUIRED.get(crumb_type)
        if required is None:
            if not crumb_type.startswith("loop:"):
                return crumb_type, None
            required = _LOOP_REQUIRED
        fields = parse_fields(crumb_type, crumb, required)
        if "error" in fields:
            check_error_object(crumb_type, fields["error"])
        if crumb_type == "reasoning:encrypted":
            check_subtype(crumb_type, fields.get("subtype"))
        fresh = _FRESH_IDS.get(crumb_type)
        if fresh is not None and fresh in fields:
            self._framer.check_fresh(crumb_type, fresh, fields[fresh])
        return crumb_type, fields

    def _apply(self, parsed) -> None:
        crumb_type, fields = parsed
        framer = self._framer
        if crumb_type == "agent:run:start":
            if framer.started:
                framer.dropped += 1
            else:
                framer.start(fields.get("sessionId"), fields.get("runId"))
            return
        if not framer.started:
            framer.start()
        if fields is None:
            framer.ignored += 1
            return
        handler = _HANDLERS.get(crumb_type)
        if handler is not None:
            handler(self, fields)
        else:
            self._loop_crumb(crumb_type[len("loop:") :], fields)

    def _text(self, f):
        self._framer.text(f["delta"])

    def _file(self, f):
        self._announce(_file_value(f))

    def _announce(self, value: dict) -> None:
        if value["uri"] in self._files:
            self._framer.dropped += 1
            return
        self._files.add(value["uri"])
        self._framer.custom("FILE_GENERATED", value)

    def _input_start(self, f):
        if self._framer.tool_start(f["toolCallId"], f["toolName"]):
            self._streamed.add(f["toolCallId"])

    def _input_delta(self, f):
        self._framer.tool_args(f["toolCallId"], f["delta"])

    def _input_end(self, f):
        self._framer.tool_end(f["toolCallId"])

    def _call(self, f):
        tool_call_id = f["toolCallId"]
        if tool_call_id in self._streamed:
            return
        framer = self._framer
        if framer.tool_start(tool_call_id, f["toolName"]):
            framer.tool_args(tool_call_id, compact(f["input"]))
            framer.tool_end(tool_call_id)

    def _result(self, f):
        result = f["result"]
        self._framer.tool_result(
            f["toolCallId"], result if isinstance(result, str) else compact(result)
        )

    def _error(self, f):
        error = f["error"]
        content = compact({"error": {"code": error["code"], "message": error["message"]}})
        self._framer.tool_result(f["toolCallId"], content)

    def _run_end(self, f):
        framer = self._framer
        result = f.get("result")
        framer.close_all()
        if is_file_reference(result) and result["uri"] not in self._files:
            self._announce(_file_value(result))
        outcome = None
        if self._interrupts:
            outcome = {"type": "interrupt", "interrupts": self.interrupts}
        framer.run_finished(result, outcome)

    def _agent_error(self, f):
        self._framer.run_error(f["message"], f.get("code"))

    def _human(self, f):
        framer = self._framer
        interrupt_id = f.get("interruptId")
        if interrupt_id is not None and interrupt_id in self._interrupt_ids:
            framer.dropped += 1
            return
        if interrupt_id is None:
            interrupt_id = framer.new_id("i")
        else:
            framer.used_ids.add(interrupt_id)
        self._interrupt_ids.add(interrupt_id)
        interrupt = {"id": interrupt_id, "reason": f.get("reason", "human_required")}
        for key in ("message", "toolCallId", "responseSchema"):
            if key in f:
                interrupt[key] = f[key]
        self._interrupts.append(interrupt)
        framer.close_text()

    def _step_start(self, f):
        self._framer.step_start(f["stepName"])

    def _step_end(self, f):
        self._framer.step_end(f["stepName"])

    def _subagent(self, f, starting: bool):
        framer = self._framer
        name = f"subagent_{f['subagentId']}"
        subagent = {
            "parentAgentId": f["parentAgentId"],
            "subagentId": f["subagentId"],
            "status": f.get("status", "running" if starting else "completed"),
        }
        if "output" in f:
            subagent["output"] = f["output"]
        framer.step_start(name) if starting else framer.step_end(name)
        framer.snapshot({"subagent": subagent})

    def _task(self, f, starting: bool):
        framer = self._framer
        name = f"task_{f['taskRunId']}"
        task = {"taskRunId": f["taskRunId"], "taskId": f["taskId"]}
        if "model" in f:
            task["model"] = f["model"]
        task["status"] = f.get("status", "running" if starting else "completed")
        for key in ("durationMs", "usage", "error"):
            if key in f:
                task[key] = f[key]
        framer.step_start(name) if starting else framer.step_end(name)
        framer.snapshot({"task": task})

    def _loop_crumb(self, phase: str, f):
        framer = self._framer
        loop_id = f["loopId"]
        previous = self._loop
        if previous is None or previous["loopId"] != loop_id:
            previous = {"loopId": loop_id, "phase": phase, "iteration": 0}
        loop = dict(previous)
        loop["phase"] = phase
        if "iteration" in f:
            loop["iteration"] = f["iteration"]
        for key, value in f.items():
            if key not in _LOOP_OWN_FIELDS:
                loop[key] = value
        self._loop = loop
        if phase == "iteration:start":
            framer.step_start(f"loop_{loop_id}_{loop['iteration']}")
        elif phase == "iteration:end":
            framer.step_end(f"loop_{loop_id}_{loop['iteration']}")
        framer.snapshot({"loop": loop})

    def _finish(self) -> None:
        self._run_end({})

    def _task_end(self, f):
        if "usage" in f:
            self._framer.usage.add(f["usage"], f.get("model"))
        self._task(f, False)

    def _reasoning_delta(self, f):
        self._framer.reasoning(f["delta"])

    def _reasoning_end(self, f):
        self._framer.end_reasoning()

    def _reasoning_encrypted(self, f):
        self._framer.encrypted(f.get("subtype", "message"), f.get("entityId"), f["encryptedValue"])


_HANDLERS = {
    "text:delta": CrumbTransformer._text,
    "file:generated": CrumbTransformer._file,
    "tool:input:start": CrumbTransformer._input_start,
    "tool:input:delta": CrumbTransformer._input_delta,
    "tool:input:end": CrumbTransformer._input_end,
    "tool:call": CrumbTransformer._call,
    "tool:result": CrumbTransformer._result,
    "tool:error": CrumbTransformer._error,
    "agent:run:end": CrumbTransformer._run_end,
    "agent:error": CrumbTransformer._agent_error,
    "human:required": CrumbTransformer._human,
    "pipeline:step:start": CrumbTransformer._step_start,
    "pipeline:step:end": CrumbTransformer._step_end,
    "subagent:run:start": lambda self, f: self._subagent(f, True),
    "subagent:run:end": lambda self, f: self._subagent(f, False),
    "task:start": lambda self, f: self._task(f, True),
    "task:end": CrumbTransformer._task_end,
    "reasoning:delta": CrumbTransformer._reasoning_delta,
    "reasoning:end": CrumbTransformer._reasoning_end,
    "reasoning:encrypted": CrumbTransformer._reasoning_encrypted,
}


# The class is its own factory: one signature, EventStream's.
create_agui_transformer = CrumbTransformer
