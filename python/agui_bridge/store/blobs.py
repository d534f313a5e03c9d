"""Inline attachment data kept out of the thread's rows: a content-addressed blob table.

A user (or tool) message's media part with a ``data`` source carries its bytes
as base64 (``parts.py``). A store keeps them once, under their SHA-256, in its
blob table, and the message's row holds the part with ``aguiBlob: <sha256>``
in place of ``value`` (``split``). A load puts the value back (``join``) from
a per-process cache of blobs (``BlobCache``: the same image in many messages
or threads is one string in memory, read from the table once), so every
reader (a run, the state route, a join's ``MESSAGES_SNAPSHOT``, the Agent
Protocol) gets the message whole, as sent: the door (``parts.py``) lets in
only canonical base64, which the stored bytes re-encode to exactly.

What that buys a run: a thread's rows are small whatever it holds, a load
reads the rows it has not decoded yet and the blobs it has not cached yet,
and a save writes each distinct blob once (``INSERT ... DO NOTHING``).
Hashing runs off the event loop (``split_off_loop``).

Blobs are shared between threads, so deleting a thread leaves its blobs;
``blob_refs`` (thread, hash) lets a delete or a sweep drop the blobs no
thread refers to any more (``orphans`` in each store).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from ..parts import MEDIA, STORED_KEY

# Blob text cached per process, over all threads (least recently used go first).
MAX_CACHED_CHARS = 256 << 20
# Past this much inline data a save hashes in a thread, not on the event loop.
_ON_LOOP_CHARS = 64 << 10


def _media_source(part) -> dict | None:
    """A media part's source: the only sources the blob table keeps or fills in
    (another part's ``source`` is the client's own field, stored as sent: a text
    part naming a blob must not be filled in with another thread's bytes)."""
    if not isinstance(part, dict) or part.get("type") not in MEDIA:
        return None
    source = part.get("source")
    return source if isinstance(source, dict) else None


def _data_parts(message: dict) -> Iterable[dict]:
    content = message.get("content")
    if not isinstance(content, list):
        return ()
    return (
        part
        for part in content
        if isinstance(part, dict)
        and part.get("type") in MEDIA
        and isinstance(part.get("source"), dict)
        and part["source"].get("type") == "data"
    )


def inline_chars(messages: Iterable[dict]) -> int:
    """How much inline base64 ``messages`` carry."""
    return sum(
        len(part["source"].get("value") or "")
        for message in messages
        for part in _data_parts(message)
    )


def split(message: dict, blobs: dict[str, bytes], texts: dict[str, str] | None = None) -> dict:
    """``message`` as its row keeps it: each data source's ``value`` replaced by
    ``aguiBlob`` (its bytes' SHA-256), the bytes added to ``blobs`` (and the
    base64 text to ``texts``, when given). The same dict when it carries no
    inline data."""
    content = message.get("content")
    if not any(True for _ in _data_parts(message)):
        return message
    parts = []
    for part in content:
        source = _media_source(part)
        if source is not None and source.get("type") == "data" and "value" in source:
            raw = binascii.a2b_base64(source["value"])
            digest = hashlib.sha256(raw).hexdigest()
            blobs.setdefault(digest, raw)
            if texts is not None:
                texts.setdefault(digest, source["value"])
            kept = {k: v for k, v in source.items() if k != "value"}
            kept[STORED_KEY] = digest
            part = {**part, "source": kept}
        parts.append(part)
    return {**message, "content": parts}


def split_all(messages: list[dict], texts: dict[str, str] | None = None):
    """Each of ``messages`` as ``split`` keeps it, and the blobs: (rows, {hash: bytes})."""
    blobs: dict[str, bytes] = {}
    return [split(message, blobs, texts) for message in messages], blobs


async def split_off_loop(messages: list[dict], texts: dict[str, str] | None = None):
    """``split_all``, in a thread when there is more than a little to hash."""
    if inline_chars(messages) > _ON_LOOP_CHARS:
        return await asyncio.to_thread(split_all, messages, texts)
    return split_all(messages, texts)


def refs(message) -> list[str]:
    """The blob hashes a stored row refers to."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        source = _media_source(part)
        if source is not None and isinstance(source.get(STORED_KEY), str):
            out.append(source[STORED_KEY])
    return out


def join(message, value_of: Callable[[str], str | None]):
    """A stored row as the message that was sent: each ``aguiBlob`` replaced by its
    ``value`` (a blob the table lacks leaves the part out of the message: a row
    stored without its blob is not a message anyone sent)."""
    hashes = refs(message)
    if not hashes:
        return message
    parts = []
    for part in message["content"]:
        source = _media_source(part)
        if source is not None and isinstance(source.get(STORED_KEY), str):
            value = value_of(source[STORED_KEY])
            if value is None:
                continue
            whole = {k: v for k, v in source.items() if k != STORED_KEY}
            whole["value"] = value
            # The keys in the order sent: type, value, mimeType, then the rest.
            order = {"type": whole.pop("type"), "value": whole.pop("value")}
            part = {**part, "source": {**order, **whole}}
        parts.append(part)
    return {**message, "content": parts}


class BlobCache:
    """Blobs as base64 text by hash, bounded by their total length (LRU)."""

    def __init__(self, max_chars: int = MAX_CACHED_CHARS):
        self.max_chars = max_chars
        self._blobs: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> str | None:
        with self._lock:
            value = self._blobs.get(digest)
            if value is not None:
                self._blobs.move_to_end(digest)
            return value

    def put_raw(self, digest: str, raw: bytes) -> str:
        return self.put(digest, base64.b64encode(raw).decode("ascii"))

    def put(self, digest: str, value: str) -> str:
        with self._lock:
            held = self._blobs.get(digest)
            if held is not None:
                return held
            if len(value) > self.max_chars:
                return value
            self._blobs[digest] = value
            self._chars += len(value)
            while self._chars > self.max_chars:
                _, evicted = self._blobs.popitem(last=False)
                self._chars -= len(evicted)
            return value

    def held(self, messages: list) -> tuple[dict[str, str], list[str]]:
        """For the blobs ``messages`` refer to: those this cache holds (kept by
        the caller, so an eviction meanwhile loses none) and the hashes it lacks."""
        hashes = {h for message in messages for h in refs(message)}
        present: dict[str, str] = {}
        with self._lock:
            for digest in hashes:
                value = self._blobs.get(digest)
                if value is not None:
                    self._blobs.move_to_end(digest)
                    present[digest] = value
        return present, sorted(hashes - present.keys())

    def join_all(self, messages: list, present: dict[str, str], fetched: dict[str, bytes]) -> list:
        """``join`` each of ``messages`` from ``present`` (``held``) and ``fetched``
        (hash -> bytes read from the table for what ``held`` lacked)."""
        values = dict(present)
        for digest, raw in fetched.items():
            values[digest] = self.put_raw(digest, raw)
        return [join(message, values.get) for message in messages]
