"""Rules 10 and 12: typed fields of an input item, checked before anything changes."""

from __future__ import annotations

from ..errors import CrumbError
from .json_values import NotJson, field_name, is_unicode, normalize
from .table import INTEGER, JSON, NAMED_KINDS, OBJECT, STRING, STRING_SUFFIXES

_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1


def kind_by_name(field: str) -> str:
    """Rule 12 types a crumb field by its name, whatever the crumb (the field table's rule)."""
    kind = NAMED_KINDS.get(field)
    if kind is not None:
        return kind
    return STRING if field.endswith(STRING_SUFFIXES) else JSON


def _wrong(item_type: str, field: str, kind: str) -> CrumbError:
    return CrumbError(f"{item_type}: '{field}' must be {kind}")


def check(item_type: str, field: str, value, kind: str):
    """Returns the normalized value of a present, non-None field, or raises."""
    if kind is STRING:
        if not isinstance(value, str):
            raise _wrong(item_type, field, STRING)
        if not is_unicode(value):
            raise _wrong(item_type, field, JSON)
        return value
    if kind is INTEGER:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _wrong(item_type, field, INTEGER)
        if not _I64_MIN <= value <= _U64_MAX:
            raise _wrong(item_type, field, JSON)
        return value
    if kind is OBJECT and not isinstance(value, dict):
        raise _wrong(item_type, field, OBJECT)
    try:
        return normalize(value)
    except NotJson:
        raise _wrong(item_type, field, JSON) from None


def check_error_object(item_type: str, error: dict) -> None:
    """Crumbs carry errors as {code: string, message: string}."""
    for part in ("code", "message"):
        value = error.get(part)
        if not isinstance(value, str):
            raise _wrong(item_type, f"error.{part}", STRING)


def parse_fields(
    item_type: str,
    item: dict,
    required: tuple,
    kinds=None,
    keep_none: bool = False,
    only_listed: bool = False,
) -> dict:
    """Checks the required fields first, then every other field in item order.

    ``kinds`` maps a field to its kind; fields not in it are typed by name
    (crumbs) unless ``kinds`` is given, in which case they are JSON values
    (chunks type only the fields of their row). ``None`` values mean absent
    unless ``keep_none`` (a chunk's payload is a value, where null is data).
    With ``only_listed`` the fields not in ``kinds`` are not read at all (an
    AG-UI event's ``timestamp``, ``rawEvent``… never reach the output).
    """
    out = {}
    for field in required:
        value = item.get(field)
        kind = kinds.get(field, JSON) if kinds is not None else kind_by_name(field)
        if value is None:
            raise _wrong(item_type, field, kind)
        out[field] = check(item_type, field, value, kind)
    for field, value in item.items():
        if field == "type" or field in out:
            continue
        if only_listed and field not in kinds:
            continue
        field = field_name(item_type, field)
        if value is None:
            if keep_none:
                out[field] = None
            continue
        kind = kinds.get(field, JSON) if kinds is not None else kind_by_name(field)
        out[field] = check(item_type, field, value, kind)
    return out
