"""The chunks dialect (contract section 4, seed 001)."""

from __future__ import annotations

from ..errors import CrumbError
from .fields import parse_fields
from .framing import check_text
from .json_values import compact, copy_json, is_unicode
from .messages import chunk_interrupt
from .stream import EventStream
from .table import CHUNKS

# Chunks type only the fields of their own row; everything else is a JSON value.
_ROWS = CHUNKS

_TEXT = "text"
_IGNORED = "ignored"
_OBJECT = "object"
_CUSTOM = "custom"


def _named(value) -> bool:
    return isinstance(value, str) and value != ""


class ChunkTranslator(EventStream):
    __slots__ = ("_custom_prefix", "_interrupts")

    close_text_always = True

    def __init__(self, thread_id, run_id, state=None, custom_prefix="dawn", **framing):
        check_text(custom_prefix, "custom_prefix")
        super().__init__(thread_id, run_id, state, **framing)
        self._custom_prefix = custom_prefix
        # One pending interrupt per interrupt chunk, for snapshot().
        self._interrupts: list[dict] = []

    def _parse(self, chunk):
        if isinstance(chunk, str):
            if not is_unicode(chunk):
                raise CrumbError("token: 'content' must be a JSON value")
            return _TEXT, chunk
        if not isinstance(chunk, dict):
            return _IGNORED, None
        chunk_type = chunk.get("type")
        # A lone surrogate is not a JSON string (rule 11), so such a type is no type.
        if not isinstance(chunk_type, str) or not is_unicode(chunk_type):
            return _OBJECT, parse_fields("chunk", chunk, (), {}, keep_none=True)
        row = _ROWS.get(chunk_type)
        if row is None:
            fields = parse_fields(chunk_type, chunk, (), {}, keep_none=True)
            if chunk_type.startswith("subagent."):
                return _CUSTOM, (chunk_type, fields)
            return _OBJECT, fields
        required, kinds = row
        fields = parse_fields(chunk_type, chunk, required, kinds, keep_none=True)
        if chunk_type == "tool_call" and fields.get("id") is not None:
            self._framer.check_fresh(chunk_type, "id", fields["id"])
        return chunk_type, fields

    def _apply(self, parsed) -> None:
        kind, fields = parsed
        framer = self._framer
        if not framer.started:
            framer.start()
        if kind is _TEXT:
            framer.text(fields)
        elif kind is _IGNORED:
            framer.ignored += 1
        elif kind in ("token", "chunk"):
            framer.text(fields["content"])
        elif kind == "tool_call":
            tool_call_id = fields.get("id")
            if tool_call_id is None:
                tool_call_id = framer.new_id("t")
            if framer.tool_start(tool_call_id, fields["name"]):
                tool_input = fields.get("input")
                framer.tool_args(tool_call_id, compact({} if tool_input is None else tool_input))
                framer.tool_end(tool_call_id)
        elif kind == "tool_result":
            output = fields.get("output")
            framer.tool_result(fields["id"], output if isinstance(output, str) else compact(output))
        elif kind == "plan_update":
            framer.snapshot({"plan": fields.get("plan")})
        elif kind == "interrupt":
            # The id a resume names must be on the wire: one the chunk carries,
            # else one generated here.
            if not (_named(fields.get("interruptId")) or _named(fields.get("id"))):
                fields.pop("interruptId", None)
                fields["interruptId"] = framer.new_id("i")
            self._interrupts.append(chunk_interrupt(fields))
            framer.custom("on_interrupt", fields)
        elif kind == "done":
            self._done(fields.get("output"))
        elif kind == "reasoning":
            framer.reasoning(fields["content"])
        elif kind is _CUSTOM:
            chunk_type, value = fields
            framer.custom(f"{self._custom_prefix}.{chunk_type}", value)
        else:
            framer.snapshot(fields)

    def _pending_interrupts(self) -> list[dict]:
        return copy_json(self._interrupts)

    def _done(self, output) -> None:
        framer = self._framer
        error = output.get("error") if isinstance(output, dict) else None
        if error is None:
            framer.run_finished(output)
            return
        if isinstance(error, str):
            message = error
        elif isinstance(error, dict) and isinstance(error.get("message"), str):
            message = error["message"]
        else:
            message = compact(error)
        code = error.get("code") if isinstance(error, dict) else None
        framer.run_error(message, code if isinstance(code, str) else None)

    def _finish(self) -> None:
        self._framer.run_finished()


def create_agui_translator(thread_id=None, run_id=None, *args, **framing) -> ChunkTranslator:
    return ChunkTranslator(thread_id, run_id, *args, **framing)
