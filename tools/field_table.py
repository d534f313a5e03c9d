"""The one field table: every dialect item's required fields and field kinds.

This file is the source; it writes ``rust/core/src/table.rs`` and
``python/agui_bridge/pure/table.py``, which the parsers and the native fast
paths read. ``python tools/field_table.py`` rewrites them, ``--check`` (run by
``make lint``) fails when either is stale. Change a row here, regenerate, and
both builds (parsers and fast paths alike) follow.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUST = ROOT / "rust/core/src/table.rs"
PYTHON = ROOT / "python/agui_bridge/pure/table.py"

# Rule 12: crumb fields are typed by name, whatever the crumb. Names ending in
# these suffixes are strings too (written as code in fields.*: a rule, not a row).
NAMED_KINDS = {
    "iteration": "int",
    "durationMs": "int",
    "error": "object",
    "responseSchema": "object",
    "usage": "object",
    **dict.fromkeys(
        [
            "delta",
            "uri",
            "mimeType",
            "message",
            "code",
            "reason",
            "status",
            "stepName",
            "loopId",
            "content",
            "id",
            "name",
            "encryptedValue",
            "subtype",
        ],
        "str",
    ),
}
STRING_SUFFIXES = ("Id", "Name")

# Crumbs (contract section 3): the required fields, in the order they are checked.
CRUMBS = {
    "agent:run:start": (),
    "text:delta": ("delta",),
    "file:generated": ("uri", "mimeType"),
    "tool:input:start": ("toolCallId", "toolName"),
    "tool:input:delta": ("toolCallId", "delta"),
    "tool:input:end": ("toolCallId",),
    "tool:call": ("toolCallId", "toolName", "input"),
    "tool:result": ("toolCallId", "result"),
    "tool:error": ("toolCallId", "error"),
    "agent:run:end": (),
    "agent:error": ("message",),
    "human:required": (),
    "pipeline:step:start": ("stepName",),
    "pipeline:step:end": ("stepName",),
    "subagent:run:start": ("subagentId", "parentAgentId"),
    "subagent:run:end": ("subagentId", "parentAgentId"),
    "task:start": ("taskRunId", "taskId"),
    "task:end": ("taskRunId", "taskId"),
    # Contract section 8.
    "reasoning:delta": ("delta",),
    "reasoning:end": (),
    "reasoning:encrypted": ("encryptedValue",),
}
# Any other `loop:*` crumb.
LOOP_REQUIRED = ("loopId",)

# Chunks (contract section 4): required fields, and the kinds of the row's own
# fields; every other field is a JSON value.
CHUNKS = {
    "token": (("content",), {"content": "str"}),
    "chunk": (("content",), {"content": "str"}),
    "tool_call": (("name",), {"id": "str", "name": "str"}),
    "tool_result": (("id",), {"id": "str"}),
    "plan_update": ((), {}),
    "interrupt": ((), {}),
    "done": ((), {}),
    "reasoning": (("content",), {"content": "str"}),
}

# Events (docs/events-dialect.md): required fields, and every field the row
# reads with its kind; fields not listed are not read at all.
EVENTS = {
    "RUN_STARTED": ((), {"threadId": "str", "runId": "str"}),
    "RUN_FINISHED": ((), {"result": "json", "outcome": "object", "usage": "json"}),
    "RUN_ERROR": (("message",), {"message": "str", "code": "str", "usage": "json"}),
    "TEXT_MESSAGE_START": (("messageId",), {"messageId": "str"}),
    "TEXT_MESSAGE_CONTENT": (("messageId", "delta"), {"messageId": "str", "delta": "str"}),
    "TEXT_MESSAGE_END": (("messageId",), {"messageId": "str"}),
    "TEXT_MESSAGE_CHUNK": ((), {"messageId": "str", "delta": "str"}),
    "TOOL_CALL_START": (
        ("toolCallId", "toolCallName"),
        {"toolCallId": "str", "toolCallName": "str"},
    ),
    "TOOL_CALL_ARGS": (("toolCallId", "delta"), {"toolCallId": "str", "delta": "str"}),
    "TOOL_CALL_END": (("toolCallId",), {"toolCallId": "str"}),
    "TOOL_CALL_CHUNK": ((), {"toolCallId": "str", "toolCallName": "str", "delta": "str"}),
    "TOOL_CALL_RESULT": (("toolCallId", "content"), {"toolCallId": "str", "content": "str"}),
    "STATE_SNAPSHOT": (("snapshot",), {"snapshot": "object"}),
    "STATE_DELTA": ((), {"delta": "json"}),
    "STEP_STARTED": (("stepName",), {"stepName": "str"}),
    "STEP_FINISHED": (("stepName",), {"stepName": "str"}),
    "CUSTOM": (("name",), {"name": "str", "value": "json"}),
    # Contract section 8: reasoning and activity, repaired like text.
    "REASONING_START": (("messageId",), {"messageId": "str"}),
    "REASONING_MESSAGE_START": (("messageId",), {"messageId": "str"}),
    "REASONING_MESSAGE_CONTENT": (("messageId", "delta"), {"messageId": "str", "delta": "str"}),
    "REASONING_MESSAGE_END": (("messageId",), {"messageId": "str"}),
    "REASONING_MESSAGE_CHUNK": ((), {"messageId": "str", "delta": "str"}),
    "REASONING_END": (("messageId",), {"messageId": "str"}),
    "REASONING_ENCRYPTED_VALUE": (
        ("subtype", "entityId", "encryptedValue"),
        {"subtype": "str", "entityId": "str", "encryptedValue": "str"},
    ),
    "ACTIVITY_SNAPSHOT": (
        ("messageId", "activityType", "content"),
        {"messageId": "str", "activityType": "str", "content": "object", "replace": "json"},
    ),
    "ACTIVITY_DELTA": (
        ("messageId", "activityType", "patch"),
        {"messageId": "str", "activityType": "str", "patch": "json"},
    ),
    # AG-UI 1.0 subagents (docs/events-dialect.md): the lifecycle only; the
    # subagentRunId other events may carry is not read.
    "SUBAGENT_STARTED": (
        ("subagentRunId", "name"),
        {
            "subagentRunId": "str",
            "name": "str",
            "description": "str",
            "parentSubagentRunId": "str",
            "parentToolCallId": "str",
            "parentMessageId": "str",
        },
    ),
    "SUBAGENT_FINISHED": (
        ("subagentRunId",),
        {"subagentRunId": "str", "result": "json", "outcome": "object"},
    ),
    "SUBAGENT_ERROR": (
        ("subagentRunId", "message"),
        {"subagentRunId": "str", "message": "str", "code": "str"},
    ),
}

RUST_KIND = {"str": "Str", "int": "Int", "object": "Object", "json": "Json"}
PY_KIND = {"str": "STRING", "int": "INTEGER", "object": "OBJECT", "json": "JSON"}


def _strs(names) -> str:
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


def _rust_kinds(kinds: dict) -> str:
    return "[" + ", ".join(f'("{n}", Kind::{RUST_KIND[k]})' for n, k in kinds.items()) + "]"


def rust() -> str:
    out = [
        "//! The field table (generated by `tools/field_table.py`: edit it, then run it).",
        "//!",
        "//! The parsers and the native fast paths read these rows; nothing else",
        "//! names an item's required fields or kinds.",
        "",
        "use crate::fields::Kind;",
        "",
        "/// A row: the item type, its required fields (in checking order), its typed fields.",
        "pub type Row = (",
        "    &'static str,",
        "    &'static [&'static str],",
        "    &'static [(&'static str, Kind)],",
        ");",
        "",
        "/// Rule 12: crumb fields typed by name (plus the `*Id`, `*Name` suffixes).",
        "pub const NAMED_KINDS: &[(&str, Kind)] = &"
        + _rust_kinds(NAMED_KINDS).replace("), (", "),\n    (").replace("[(", "[\n    (")
        + ";",
        f"pub const STRING_SUFFIXES: &[&str] = &{_strs(STRING_SUFFIXES)};",
        "",
        "/// Crumbs: the other fields are typed by name.",
        "pub const CRUMBS: &[Row] = &[",
    ]
    out += [f'    ("{t}", &{_strs(r)}, &[]),' for t, r in CRUMBS.items()]
    out += [
        "];",
        f"pub const LOOP_REQUIRED: &[&str] = &{_strs(LOOP_REQUIRED)};",
        "",
        "/// Chunks: the fields not listed are JSON values.",
        "pub const CHUNKS: &[Row] = &[",
    ]
    out += [f'    ("{t}", &{_strs(r)}, &{_rust_kinds(k)}),' for t, (r, k) in CHUNKS.items()]
    out += ["];", "", "/// Events: the fields not listed are not read."]
    out += ["pub const EVENTS: &[Row] = &["]
    out += [f'    ("{t}", &{_strs(r)}, &{_rust_kinds(k)}),' for t, (r, k) in EVENTS.items()]
    out += [
        "];",
        "",
        "/// String equality usable in constants.",
        "pub const fn same(a: &str, b: &str) -> bool {",
        "    let (a, b) = (a.as_bytes(), b.as_bytes());",
        "    if a.len() != b.len() {",
        "        return false;",
        "    }",
        "    let mut at = 0;",
        "    while at < a.len() {",
        "        if a[at] != b[at] {",
        "            return false;",
        "        }",
        "        at += 1;",
        "    }",
        "    true",
        "}",
        "",
        "/// The row of `item_type` in `rows` (usable in constants).",
        "pub const fn row(rows: &'static [Row], item_type: &str) -> Option<Row> {",
        "    let mut at = 0;",
        "    while at < rows.len() {",
        "        if same(rows[at].0, item_type) {",
        "            return Some(rows[at]);",
        "        }",
        "        at += 1;",
        "    }",
        "    None",
        "}",
        "",
        "/// The required fields of a row that must exist (usable in constants).",
        "pub const fn required(rows: &'static [Row], item_type: &str) -> &'static [&'static str] {",
        "    match row(rows, item_type) {",
        "        Some((_, required, _)) => required,",
        '        None => panic!("no such row in the field table"),',
        "    }",
        "}",
        "",
        "/// Whether two lists of names are equal, in order (usable in constants).",
        "pub const fn same_names(a: &[&str], b: &[&str]) -> bool {",
        "    if a.len() != b.len() {",
        "        return false;",
        "    }",
        "    let mut at = 0;",
        "    while at < a.len() {",
        "        if !same(a[at], b[at]) {",
        "            return false;",
        "        }",
        "        at += 1;",
        "    }",
        "    true",
        "}",
        "",
        "/// Whether `name` is in `names` (usable in constants).",
        "pub const fn contains(names: &[&str], name: &str) -> bool {",
        "    let mut at = 0;",
        "    while at < names.len() {",
        "        if same(names[at], name) {",
        "            return true;",
        "        }",
        "        at += 1;",
        "    }",
        "    false",
        "}",
        "",
        "/// Rule 12's kind of a crumb field (usable in constants).",
        "pub const fn kind_by_name(field: &str) -> Kind {",
        "    let mut at = 0;",
        "    while at < NAMED_KINDS.len() {",
        "        if same(NAMED_KINDS[at].0, field) {",
        "            return NAMED_KINDS[at].1;",
        "        }",
        "        at += 1;",
        "    }",
        "    let bytes = field.as_bytes();",
        "    let mut suffix = 0;",
        "    while suffix < STRING_SUFFIXES.len() {",
        "        let end = STRING_SUFFIXES[suffix].as_bytes();",
        "        if bytes.len() >= end.len() {",
        "            let mut at = 0;",
        "            let start = bytes.len() - end.len();",
        "            while at < end.len() && bytes[start + at] == end[at] {",
        "                at += 1;",
        "            }",
        "            if at == end.len() {",
        "                return Kind::Str;",
        "            }",
        "        }",
        "        suffix += 1;",
        "    }",
        "    Kind::Json",
        "}",
        "",
        "/// The kind of a field a row lists, JSON otherwise (usable in constants).",
        "pub const fn listed_kind(rows: &'static [Row], item_type: &str, field: &str) -> Kind {",
        "    let Some((_, _, kinds)) = row(rows, item_type) else {",
        '        panic!("no such row in the field table")',
        "    };",
        "    match kind_in(kinds, field) {",
        "        Some(kind) => kind,",
        "        None => Kind::Json,",
        "    }",
        "}",
        "",
        "/// The kind `kinds` lists `field` with, None if unlisted (usable in constants).",
        "pub const fn kind_in(kinds: &[(&str, Kind)], field: &str) -> Option<Kind> {",
        "    let mut at = 0;",
        "    while at < kinds.len() {",
        "        if same(kinds[at].0, field) {",
        "            return Some(kinds[at].1);",
        "        }",
        "        at += 1;",
        "    }",
        "    None",
        "}",
    ]
    return "\n".join(out) + "\n"


def _py_kinds(kinds: dict) -> str:
    return "{" + ", ".join(f'"{n}": {PY_KIND[k]}' for n, k in kinds.items()) + "}"


def python() -> str:
    out = [
        '"""The field table (generated by tools/field_table.py: edit it, then run it)."""',
        "",
        "from __future__ import annotations",
        "",
        'STRING = "a string"',
        'INTEGER = "an integer"',
        'OBJECT = "an object"',
        'JSON = "a JSON value"',
        "",
        "# Rule 12: crumb fields typed by name (plus the suffixes).",
        "NAMED_KINDS = {",
    ]
    out += [f'    "{n}": {PY_KIND[k]},' for n, k in NAMED_KINDS.items()]
    out += ["}", f"STRING_SUFFIXES = {tuple(STRING_SUFFIXES)!r}", "", "CRUMBS = {"]
    out += [f'    "{t}": {tuple(r)!r},' for t, r in CRUMBS.items()]
    out += ["}", f"LOOP_REQUIRED = {tuple(LOOP_REQUIRED)!r}", "", "CHUNKS = {"]
    out += [f'    "{t}": ({tuple(r)!r}, {_py_kinds(k)}),' for t, (r, k) in CHUNKS.items()]
    out += ["}", "", "EVENTS = {"]
    out += [f'    "{t}": ({tuple(r)!r}, {_py_kinds(k)}),' for t, (r, k) in EVENTS.items()]
    out += ["}"]
    return "\n".join(out) + "\n"


def formatted(command: list[str], text: str) -> str:
    """The text as the formatters `make lint` runs leave it."""
    return subprocess.run(command, input=text, capture_output=True, text=True, check=True).stdout


def main() -> int:
    check = "--check" in sys.argv
    stale = []
    ruff = Path(sys.executable).with_name("ruff")
    outputs = (
        (RUST, formatted(["rustfmt", "--edition", "2024", "--emit", "stdout"], rust())),
        (PYTHON, formatted([str(ruff), "format", "--stdin-filename", str(PYTHON), "-"], python())),
    )
    for path, text in outputs:
        if path.exists() and path.read_text() == text:
            continue
        if check:
            stale.append(path.relative_to(ROOT))
        else:
            path.write_text(text)
    if stale:
        print(f"stale: {', '.join(map(str, stale))}; run python tools/field_table.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
