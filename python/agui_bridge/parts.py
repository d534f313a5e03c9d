"""Attachments: what a user message's content parts may carry, judged at the door.

A user message's content is a string or a list of AG-UI 1.0 ``ContentPart``s:
``text``, and ``image`` / ``audio`` / ``video`` / ``document`` with a
``source`` that is ``data`` (base64 ``value`` + ``mimeType``), ``url`` or
``file`` (a provider's handle). The shapes are checked in ``shapes.py``; this
module adds what an App configures (``PartPolicy``) and the legacy part:

- the pre-1.0 ``{"type": "binary", mimeType, data | url | id, filename?}`` is
  upgraded to the media part ``@ag-ui/client`` 1.0 makes of it (its kind from
  the MIME type's top level, ``data``/``url`` source, ``metadata.filename``;
  an id alone becomes a ``file`` source), so the thread stores and replays
  1.0 parts only (a 1.0 client refuses ``binary``);
- inline data over ``max_part_bytes`` (decoded) is refused with 413
  (``PartTooLarge``), inline data that is not canonical base64 with 400;
- a ``url`` source whose scheme is not in ``url_schemes`` (default
  ``https``) is refused with 400: the server never fetches a URL, whoever
  reads the part does, and ``file:``, ``data:`` or ``http:`` would hand them
  what the App did not mean to pass on;
- with ``mime_types`` set (``"image/*"``, ``"application/pdf"``), a media part
  whose MIME type is absent or outside it is refused with 400.

Each refusal names the part (``messages[2].content[1]``). ``STORED_KEY`` is
the key under which a store keeps a data source's blob (``store/blobs.py``):
no part may carry it.
"""

from __future__ import annotations

import binascii
import threading
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import HttpError, PartTooLarge, RunInputError

DEFAULT_MAX_PART_BYTES = 8 << 20
MEDIA = ("image", "audio", "video", "document")
STORED_KEY = "aguiBlob"


@dataclass(frozen=True)
class PartPolicy:
    """What an App lets a content part carry (``App(max_part_bytes=...,
    url_schemes=..., mime_types=...)``)."""

    max_part_bytes: int = DEFAULT_MAX_PART_BYTES
    url_schemes: tuple[str, ...] = ("https",)
    mime_types: tuple[str, ...] | None = None

    def __post_init__(self):
        if not isinstance(self.max_part_bytes, int) or self.max_part_bytes <= 0:
            raise ValueError("max_part_bytes must be a positive number of bytes")
        object.__setattr__(self, "url_schemes", tuple(s.lower() for s in self.url_schemes))
        if self.mime_types is not None:
            object.__setattr__(self, "mime_types", tuple(m.lower() for m in self.mime_types))

    def encoded_bytes(self) -> int:
        """What one max-size part takes in a body (base64 grows it by 4/3)."""
        return 4 * -(-self.max_part_bytes // 3)

    def mime_allowed(self, mime) -> bool:
        if self.mime_types is None:
            return True
        if not isinstance(mime, str):
            return False
        mime = mime.split(";", 1)[0].strip().lower()
        top = mime.split("/", 1)[0]
        return mime in self.mime_types or f"{top}/*" in self.mime_types


DEFAULT_POLICY = PartPolicy()


# -- the legacy binary part ------------------------------------------------------


def _kind(mime: str) -> str:
    top = mime.split("/", 1)[0]
    return top if top in ("image", "audio", "video") else "document"


def _upgraded(part: dict, where: str) -> dict:
    mime = part.get("mimeType")
    if not isinstance(mime, str):
        raise RunInputError(f"{where}.mimeType must be a string (a legacy binary part)")
    for key in ("id", "url", "data", "filename"):
        if part.get(key) is not None and not isinstance(part[key], str):
            raise RunInputError(f"{where}.{key} must be a string")
    if part.get("data"):
        source = {"type": "data", "value": part["data"], "mimeType": mime}
    elif part.get("url"):
        source = {"type": "url", "value": part["url"], "mimeType": mime}
    elif part.get("id"):
        source = {"type": "file", "value": part["id"], "mimeType": mime}
    else:
        raise RunInputError(f"{where} (a legacy binary part) needs one of id, url or data")
    out: dict = {"type": _kind(mime), "source": source}
    if part.get("filename"):
        out["metadata"] = {"filename": part["filename"]}
    return out


def upgrade(message: dict, where: str) -> dict:
    """``message`` with its legacy ``binary`` parts as 1.0 media parts (the same
    dict when it has none). A converted part equal to a media part the content
    already holds is dropped, as ``@ag-ui/client`` does."""
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(p, dict) and p.get("type") == "binary" for p in content
    ):
        return message
    parts = []
    for n, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "binary":
            new = _upgraded(part, f"{where}.content[{n}]")
            if any(_same(other, new) for other in content):
                continue
            part = new
        parts.append(part)
    return {**message, "content": parts}


def _same(part, new: dict) -> bool:
    if not isinstance(part, dict) or part.get("type") != new["type"]:
        return False
    source = part.get("source")
    if not isinstance(source, dict):
        return False
    want = new["source"]
    return all(source.get(k) == want[k] for k in ("type", "value", "mimeType")) and (
        "metadata" not in new or part.get("metadata") == new["metadata"]
    )


# -- the App's policy --------------------------------------------------------------


def data_size(value: str) -> int:
    """The decoded size of base64 ``value`` without decoding it."""
    pad = 2 if value.endswith("==") else 1 if value.endswith("=") else 0
    return len(value) // 4 * 3 - pad if len(value) % 4 == 0 else (len(value) * 3) // 4


def _data(source: dict, where: str, policy: PartPolicy) -> None:
    value = source["value"]
    size = data_size(value)
    if size > policy.max_part_bytes:
        raise PartTooLarge(
            f"{where}.source.value carries {size} bytes, over the limit of "
            f"{policy.max_part_bytes} (max_part_bytes)"
        )
    if not _CHECKED.seen(value) and not canonical(value):
        raise RunInputError(f"{where}.source.value must be canonical base64")


def canonical(value: str) -> bool:
    """Canonical base64 (strict: no whitespace, right padding; the last quantum's
    unused bits zero), so what a store keeps as bytes replays as sent."""
    try:
        binascii.a2b_base64(value, strict_mode=True)
        tail = value[-4:]
        if tail and binascii.b2a_base64(binascii.a2b_base64(tail), newline=False) != tail.encode():
            return False
    except (binascii.Error, ValueError):
        return False
    _CHECKED.add(value)
    return True


class _Checked:
    """The values found canonical lately, by length and hash (none kept): a
    client resends every attachment with each run (``@ag-ui/client``'s
    HttpAgent), and hashing a value costs a fraction of checking it again."""

    def __init__(self, size: int = 4096):
        self.size = size
        self._keys: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._lock = threading.Lock()

    def seen(self, value: str) -> bool:
        key = (len(value), hash(value))
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return True
        return False

    def add(self, value: str) -> None:
        key = (len(value), hash(value))
        with self._lock:
            self._keys[key] = None
            if len(self._keys) > self.size:
                self._keys.popitem(last=False)


_CHECKED = _Checked()


def _url(source: dict, where: str, policy: PartPolicy) -> None:
    try:
        scheme = urlsplit(source["value"]).scheme.lower()
    except ValueError as error:  # an IPv6 host left open, a bracket or a character NFKC changes
        raise RunInputError(f"{where}.source.value is not a valid URL: {error}") from None
    if scheme not in policy.url_schemes:
        allowed = ", ".join(policy.url_schemes) or "none"
        raise RunInputError(
            f"{where}.source.value: the URL scheme {scheme or '(none)'!r} is not allowed"
            f" (allowed: {allowed})"
        )


def check_policy(content, where: str, policy: PartPolicy) -> None:
    """The App's limits on the parts of one message's ``content`` (its shapes
    already checked: ``shapes.check_parts``)."""
    if not isinstance(content, list):
        return
    for n, part in enumerate(content):
        at = f"{where}[{n}]"
        source = part.get("source")
        if isinstance(source, dict) and STORED_KEY in source:
            # On any part: the stores' own reference to a blob, never a client's.
            raise RunInputError(f"{at}.source.{STORED_KEY} is reserved")
        if part.get("type") not in MEDIA:
            continue
        if not policy.mime_allowed(source.get("mimeType")):
            raise RunInputError(
                f"{at}.source.mimeType {source.get('mimeType')!r} is not allowed"
                f" (allowed: {', '.join(policy.mime_types or ())})"
            )
        if source["type"] == "data":
            _data(source, at, policy)
        elif source["type"] == "url":
            _url(source, at, policy)


# -- what a run gets -----------------------------------------------------------------


def text_of(content) -> str:
    """A user message's text: its string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if p.get("type") == "text")
    return ""


def media_of(content) -> list[dict]:
    """A message's media parts (image, audio, video, document), in order."""
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") in MEDIA]


def input_error(error: RunInputError, status: int = 400, code: str = "invalid_input") -> HttpError:
    """The JSON error a route answers for ``error``: 413 for a part over
    ``max_part_bytes``, else ``status`` with ``code``."""
    if isinstance(error, PartTooLarge):
        return HttpError(413, error.code, str(error))
    return HttpError(status, code, str(error))


# -- what a 0.0.x reader can take ------------------------------------------------------


def legacy_readable(messages: list) -> list:
    """``messages`` as a pre-1.0 client's schema takes them (``@ag-ui/core``
    0.0.58 parses every event and knows no ``file`` source): a media part with a
    ``file`` source becomes the legacy ``binary`` part naming it by ``id`` (its
    ``mimeType``, else ``application/octet-stream``; ``metadata.filename`` as
    ``filename``). The rest of 1.0's parts it takes as they are."""
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not any(_file_source(p) for p in content):
            out.append(message)
            continue
        parts = [_as_binary(p) if _file_source(p) else p for p in content]
        out.append({**message, "content": parts})
    return out


def _file_source(part) -> bool:
    return (
        isinstance(part, dict)
        and part.get("type") in MEDIA
        and isinstance(part.get("source"), dict)
        and part["source"].get("type") == "file"
    )


def _as_binary(part: dict) -> dict:
    source = part["source"]
    mime = source.get("mimeType")
    out = {
        "type": "binary",
        "mimeType": mime if isinstance(mime, str) else "application/octet-stream",
        "id": source["value"],
    }
    metadata = part.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("filename"), str):
        out["filename"] = metadata["filename"]
    return out
