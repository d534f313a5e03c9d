"""AG-UI content parts and LangChain's content blocks, both ways.

LangChain (and the Agent Protocol, whose messages are LangChain's) carries a
message's attachments as standard content blocks: ``text``, and ``image`` /
``audio`` / ``video`` / ``file`` with ``base64`` + ``mime_type``, a ``url`` or
a ``file_id``. ``to_blocks`` makes them of AG-UI parts (the LangGraph adapter's
input, the Agent Protocol's messages); ``from_blocks`` reads them back, and
also the older forms clients still send (``source_type`` blocks, OpenAI's
``image_url`` / ``input_audio`` / ``file`` parts), so a part goes out and comes
back the same: its id is the block's ``id``, its ``metadata`` the block's
``extras`` (a ``file`` source's ``provider`` among them).
"""

from __future__ import annotations

from typing import Any

from .errors import RunInputError
from .parts import MEDIA

_SOURCE_KEYS = {"data": "base64", "url": "url", "file": "file_id"}
_KINDS = {"image": "image", "audio": "audio", "video": "video", "file": "document"}
_AUDIO_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}


def _has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in MEDIA for p in content
    )


def to_blocks(content: Any) -> Any:
    """AG-UI content as LangChain content: content without media parts as it is
    (a string, or text parts, which are LangChain text blocks too), else a list
    of standard blocks."""
    if not _has_media(content):
        return content
    out: list[dict] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            out.append(_with_id({"type": "text", "text": part["text"]}, part))
            continue
        source = part["source"]
        block: dict = {"type": "file" if kind == "document" else kind}
        block[_SOURCE_KEYS[source["type"]]] = source["value"]
        if isinstance(source.get("mimeType"), str):
            block["mime_type"] = source["mimeType"]
        _with_id(block, part)
        extras = dict(part["metadata"]) if isinstance(part.get("metadata"), dict) else {}
        if source["type"] == "file" and isinstance(source.get("provider"), str):
            extras["provider"] = source["provider"]
        if extras:
            block["extras"] = extras
        out.append(block)
    return out


def _with_id(block: dict, part: dict) -> dict:
    if isinstance(part.get("id"), str):
        block["id"] = part["id"]
    return block


def from_blocks(content: list, where: str) -> list:
    """LangChain content blocks (or AG-UI parts, kept as they are) as AG-UI parts;
    ``RunInputError`` naming a block it cannot read."""
    return [_part(block, f"{where}[{n}]") for n, block in enumerate(content)]


def _part(block, where: str) -> dict:
    if not isinstance(block, dict):
        if isinstance(block, str):
            return {"type": "text", "text": block}
        raise RunInputError(f"{where} must be a content block object")
    kind = block.get("type")
    if kind in ("text", "binary") or "source" in block:
        return block  # AG-UI's own (shapes.py checks it; parts.upgrade a legacy binary)
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return {"type": "image", "source": _from_url(url, where)}
    if kind == "input_audio":
        audio = block.get("input_audio") or {}
        mime = _AUDIO_MIME.get(audio.get("format"), "audio/wav")
        source = {"type": "data", "value": audio.get("data"), "mimeType": mime}
        return {"type": "audio", "source": source}
    if kind == "file" and isinstance(block.get("file"), dict):
        return _openai_file(block["file"], where)
    if kind in _KINDS:
        return _standard(block, _KINDS[kind], where)
    raise RunInputError(f"{where}.type {kind!r} is not a content block this server reads")


def _standard(block: dict, kind: str, where: str) -> dict:
    mime = block.get("mime_type")
    source_type = block.get("source_type")  # LangChain's older blocks
    if source_type is not None:
        key = {"base64": "data", "url": "url", "id": "id"}.get(source_type)
        if key is None or key not in block:
            raise RunInputError(f"{where}.source_type must be base64, url or id with its value")
        value, as_source = block[key], {"data": "data", "url": "url", "id": "file"}[key]
    else:
        found = [k for k in ("base64", "url", "file_id") if k in block]
        if len(found) != 1:
            raise RunInputError(f"{where} needs one of base64, url or file_id")
        value = block[found[0]]
        as_source = {"base64": "data", "url": "url", "file_id": "file"}[found[0]]
    source: dict = {"type": as_source, "value": value}
    if mime is not None:
        source["mimeType"] = mime
    part: dict = {"type": kind}
    if isinstance(block.get("id"), str):
        part["id"] = block["id"]
    part["source"] = source
    extras = block.get("extras")
    if isinstance(extras, dict) and extras:
        metadata = dict(extras)
        if as_source == "file" and isinstance(metadata.get("provider"), str):
            source["provider"] = metadata.pop("provider")
        if metadata:
            part["metadata"] = metadata
    return part


def _from_url(url, where: str) -> dict:
    if not isinstance(url, str):
        raise RunInputError(f"{where}.image_url must be a URL (or {{url}})")
    if url.startswith("data:") and ";base64," in url:
        head, _, value = url.partition(";base64,")
        return {"type": "data", "value": value, "mimeType": head[len("data:") :]}
    return {"type": "url", "value": url}


def _openai_file(file: dict, where: str) -> dict:
    part: dict = {"type": "document"}
    if isinstance(file.get("file_id"), str):
        part["source"] = {"type": "file", "value": file["file_id"]}
    elif isinstance(file.get("file_data"), str):
        part["source"] = _from_url(file["file_data"], f"{where}.file.file_data")
    else:
        raise RunInputError(f"{where}.file needs a file_id or file_data")
    if isinstance(file.get("filename"), str):
        part["metadata"] = {"filename": file["filename"]}
    return part
