"""What a request says in numbers and versions: one integer rule, one
``Last-Event-ID`` rule, the version a stream's reader declares.

A number in a header, a query or a JSON string is ASCII decimal digits (a
``-`` in front where negatives mean something), at most 18 of them: Python's
``str.isdigit`` and ``int`` accept other digits (``²``, ``٣``) and signs
(``--5`` passes a strip of ``-``), and ``int`` then refuses some of what
``isdigit`` accepted. A value outside the rule is a 400 (the Agent Protocol's
endpoints answer 422 for every 400), never a 500.
"""

from __future__ import annotations

from urllib.parse import unquote

from ..errors import HttpError

_DIGITS = frozenset(b"0123456789")


def integer(text: str, signed: bool = False) -> int | None:
    """``text`` as an int when it is 1 to 18 ASCII digits (after one ``-`` if
    ``signed``), else None."""
    raw = text.encode("utf-8", "replace")
    digits = raw[1:] if signed and raw[:1] == b"-" else raw
    if not 0 < len(digits) <= 18 or not _DIGITS.issuperset(digits):
        return None
    return int(raw)


def bounded(value, name: str, default: int, low: int, high: int) -> int:
    """A JSON or query value that must be an integer from ``low`` to ``high`` (400)."""
    if value is None:
        return default
    if isinstance(value, str):
        value = integer(value.strip(), signed=True)
    if type(value) is not int or not low <= value <= high:
        raise HttpError(400, "invalid_request", f"'{name}' must be an integer from {low} to {high}")
    return value


def query_value(query_string: str | None, name: str) -> str | None:
    """The last ``name=`` of a query string, percent-decoded; None when absent."""
    found = None
    for pair in (query_string or "").split("&"):
        key, _, raw = pair.partition("=")
        if key == name:
            found = unquote(raw.replace("+", " "))
    return found


def last_event_id(conn) -> int | None:
    """The event id a stream resumes after: ``Last-Event-ID``, else ``?last_event_id=``.

    None when neither is given (or empty): the reader joins. ``-1`` (what
    LangGraph clients send for "from the start") is 0: from the first event.
    Anything else that is not an event id is a 400.
    """
    value = conn.headers.get("last-event-id")
    if value is None:
        value = query_value(conn.query_string, "last_event_id")
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value == "-1":
        return 0
    n = integer(value)
    if n is None:
        raise HttpError(400, "invalid_cursor", "Last-Event-ID must be a non-negative integer")
    return n


def protocol_version(conn) -> str | None:
    """The AG-UI version a GET stream's reader declares: ``agui-protocol-version``,
    else ``?protocol_version=`` (an EventSource sets no header); None when
    neither is given: a reader that did not declare 1.0 reads 0.0.x shapes
    (contract section 8, ``runs.downgrade``)."""
    value = conn.headers.get("agui-protocol-version")
    if value is None:
        value = query_value(conn.query_string, "protocol_version")
    return value.strip() if value is not None else None
