"""Rule 11 of the contract: what counts as a JSON value, and its normal form.

Both builds must agree on every accepted value and every rejected one, so the
checks here are explicit rather than left to what orjson happens to accept
(orjson would also serialize datetimes, dataclasses and numpy arrays).
"""

from __future__ import annotations

import math

import orjson

from ..errors import CrumbError

# Deep enough for any real payload, shallow enough that orjson's own
# recursion limit (255) is never reached once the value sits inside an event.
MAX_DEPTH = 128

_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1


class NotJson(Exception):
    """Raised inside the walk; the caller turns it into a CrumbError."""


def is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalize(value, depth: int = 0):
    """Returns the value as both builds emit it: tuples as lists, NaN as None."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        if not is_unicode(value):
            raise NotJson
        return value
    if isinstance(value, int):
        if not _I64_MIN <= value <= _U64_MAX:
            raise NotJson
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        # orjson refuses float subclasses; the value is what counts.
        return value if type(value) is float else float.__float__(value)
    if depth >= MAX_DEPTH:
        raise NotJson
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            text = key_text(key)
            if text is None:
                raise NotJson
            out[text] = normalize(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [normalize(item, depth + 1) for item in value]
    raise NotJson


def copy_json(value):
    """A deep copy of a normalized value (only dicts and lists need copying)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def key_text(key) -> str | None:
    """A dict key as both builds write it: a str subclass (a ``StrEnum``
    member) as its text, which is what orjson takes and the native build
    reads; None for a key that is no valid text."""
    if not isinstance(key, str) or not is_unicode(key):
        return None
    return key if type(key) is str else str.__str__(key)


def field_name(item_type: str, key) -> str:
    """An item's field name as its events carry it (``key_text``), or refused."""
    text = key_text(key)
    if text is None:
        raise CrumbError(f"{item_type}: field names must be strings")
    return text


def json_field(item_type: str, field: str, value):
    try:
        return normalize(value)
    except NotJson:
        raise CrumbError(f"{item_type}: '{field}' must be a JSON value") from None


def compact(value) -> str:
    """Compact JSON text of an already normalized value."""
    return orjson.dumps(value).decode()


dumps = orjson.dumps


def frames(events: list[dict]) -> bytes:
    return b"".join([b"data: " + orjson.dumps(e) + b"\n\n" for e in events])
