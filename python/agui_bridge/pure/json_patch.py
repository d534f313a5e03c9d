"""STATE_DELTA: an RFC 6902 JSON Patch applied to the run state, all or nothing.

The patch is checked and applied to a copy while the event is parsed, so a
patch that does not apply raises ``CrumbError`` and the run state stays as
it was (rule 10). docs/events-dialect.md lists the rules and messages; the
Rust core's ``patch.rs`` is the same, message for message.
"""

from __future__ import annotations

import re

from ..errors import CrumbError
from .json_values import compact, copy_json

# Each operation's members besides op and path (ag_ui's JsonPatchOperation).
_MEMBERS = {
    "add": ("value",),
    "remove": (),
    "replace": ("value",),
    "move": ("from",),
    "copy": ("from",),
    "test": ("value",),
}
OPS = tuple(_MEMBERS)
_OPS_TEXT = ", ".join(OPS)
# RFC 6901: an array index is 0 or digits without a leading zero (ASCII only).
_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")
_ABSENT = object()


def apply_patch(item_type: str, state: dict, delta) -> tuple[dict, list]:
    """The state after ``delta`` (a normalized JSON value), and the patch as sent.

    ``state`` is not changed. Each operation is sent with only its schema's
    members, in the schema's order (rule 8): ``op``, ``from``, ``path``, ``value``.
    """
    if not isinstance(delta, list):
        raise CrumbError(f"{item_type}: 'delta' must be an array")
    doc = copy_json(state)
    sent = []
    for index, op in enumerate(delta):
        doc = _apply_op(f"{item_type}: delta[{index}]", f"{item_type}: 'delta[{index}]", doc, op)
        out = {"op": op["op"]}
        if "from" in _MEMBERS[op["op"]]:
            out["from"] = op["from"]
        out["path"] = op["path"]
        if "value" in _MEMBERS[op["op"]]:
            out["value"] = op["value"]
        sent.append(out)
    return doc, sent


def _pointer(field_name: str, op: dict, name: str):
    """The tokens of ``op[name]``, a JSON pointer, or raises."""
    pointer = op.get(name)
    if not isinstance(pointer, str):
        raise CrumbError(f"{field_name}.{name}' must be a string")
    if pointer and (pointer[0] != "/" or _BAD_ESCAPE.search(pointer)):
        raise CrumbError(f"{field_name}.{name}' must be a JSON pointer")
    if not pointer:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _apply_op(where: str, field_name: str, doc, op):
    if not isinstance(op, dict):
        raise CrumbError(f"{field_name}' must be an object")
    name = op.get("op")
    if name not in OPS:
        raise CrumbError(f"{field_name}.op' must be one of {_OPS_TEXT}")
    path = _pointer(field_name, op, "path")
    source = _pointer(field_name, op, "from") if "from" in _MEMBERS[name] else None
    if "value" in _MEMBERS[name] and "value" not in op:
        raise CrumbError(f"{field_name}.value' is missing")
    at = f"{where} {name}:"
    missing = f"{at} nothing at {compact(op['path'])}"
    if name == "test":
        if not _equal(_get(doc, path), op["value"]):
            raise CrumbError(f"{at} the value at {compact(op['path'])} differs")
        return doc
    if name == "remove":
        return _remove(doc, path, missing, at)
    if name == "replace":
        return _replace(doc, path, copy_json(op["value"]), missing, at)
    if name == "add":
        return _add(doc, path, copy_json(op["value"]), missing, at)
    value = _get(doc, source)
    if value is _ABSENT:
        raise CrumbError(f"{at} nothing at {compact(op['from'])}")
    if name == "copy":
        return _add(doc, path, copy_json(value), missing, at)
    if op["path"].startswith(op["from"] + "/"):
        raise CrumbError(f"{at} {compact(op['path'])} is inside {compact(op['from'])}")
    doc = _remove(doc, source, missing, at)
    return _add(doc, path, value, missing, at)


def _index(token: str, size: int):
    """The list index a token names, or None (``-`` is ``size``, one past the end)."""
    if token == "-":
        return size
    if _INDEX.fullmatch(token):
        return int(token)
    return None


def _get(doc, tokens):
    for token in tokens:
        if isinstance(doc, dict):
            doc = doc.get(token, _ABSENT)
            if doc is _ABSENT:
                return _ABSENT
        elif isinstance(doc, list):
            at = _index(token, len(doc))
            if at is None or at >= len(doc):
                return _ABSENT
            doc = doc[at]
        else:
            return _ABSENT
    return doc


def _must_stay_object(doc, at: str):
    if not isinstance(doc, dict):
        raise CrumbError(f"{at} the state must stay an object")
    return doc


def _add(doc, tokens, value, missing: str, at: str):
    if not tokens:
        return _must_stay_object(value, at)
    parent = _get(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = _index(last, len(parent))
        if index is None or index > len(parent):
            raise CrumbError(missing)
        parent.insert(index, value)
    else:
        raise CrumbError(missing)
    return doc


def _replace(doc, tokens, value, missing: str, at: str):
    """``doc`` with the value at ``tokens`` (which must exist) replaced in place."""
    if not tokens:
        return _must_stay_object(value, at)
    parent = _get(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
    elif isinstance(parent, list):
        index = _index(last, len(parent))
        if index is None or index >= len(parent):
            raise CrumbError(missing)
        parent[index] = value
    else:
        raise CrumbError(missing)
    return doc


def _remove(doc, tokens, missing: str, at: str):
    """``doc`` without the value at ``tokens`` (which must exist)."""
    if not tokens:
        raise CrumbError(f"{at} the state must stay an object")
    parent = _get(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list):
        index = _index(last, len(parent))
        if index is None or index >= len(parent):
            raise CrumbError(missing)
        del parent[index]
    else:
        raise CrumbError(missing)
    return doc


def _equal(a, b) -> bool:
    """JSON equality: numbers by value (1 == 1.0), never a bool for a number."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[key], b[key]) for key in a)
    return False
