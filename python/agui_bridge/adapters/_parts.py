"""A user message's AG-UI content parts as each framework takes them.

pydantic-ai needs nothing here: its own AG-UI loader (``AGUIAdapter.load_messages``)
maps the parts to ``BinaryContent`` / ``ImageUrl`` / ``AudioUrl`` / ``VideoUrl`` /
``DocumentUrl`` / ``UploadedFile``. LangChain's content blocks come from
``blocks.to_blocks``. The OpenAI chat completions API gets ``openai_content``:
a part it has no form for (video, audio or a document by URL) becomes a line
of text naming it, so the model knows something was attached; nothing is
fetched.
"""

from __future__ import annotations

from typing import Any

from ..parts import MEDIA
from ._messages import text

# OpenAI's input_audio formats by MIME type.
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in MEDIA for p in content
    )


def _mime(source: dict) -> str | None:
    mime = source.get("mimeType")
    return mime.split(";", 1)[0].strip().lower() if isinstance(mime, str) else None


def _filename(part: dict, fallback: str) -> str:
    metadata = part.get("metadata")
    name = metadata.get("filename") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else fallback


def _named(part: dict) -> dict:
    source = part["source"]
    where = source["value"] if source["type"] != "data" else _filename(part, "inline data")
    return {"type": "text", "text": f"[{part['type']} attached: {where}]"}


def openai_content(content: Any) -> Any:
    """A user message's content for the chat completions API: text as is, parts
    as ``text`` / ``image_url`` / ``input_audio`` / ``file`` content parts."""
    if not has_media(content):
        return text(content)
    out: list[dict] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            out.append({"type": "text", "text": part["text"]})
            continue
        if kind not in MEDIA:
            continue
        source = part["source"]
        value, mime = source["value"], _mime(source)
        if kind == "image" and source["type"] in ("data", "url"):
            url = value if source["type"] == "url" else f"data:{mime};base64,{value}"
            out.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "audio" and source["type"] == "data" and mime in _AUDIO_FORMATS:
            audio = {"data": value, "format": _AUDIO_FORMATS[mime]}
            out.append({"type": "input_audio", "input_audio": audio})
        elif kind in ("document", "image", "audio") and source["type"] == "file":
            out.append({"type": "file", "file": {"file_id": value}})
        elif kind == "document" and source["type"] == "data":
            file = {"file_data": f"data:{mime};base64,{value}"}
            file["filename"] = _filename(part, "document")
            out.append({"type": "file", "file": file})
        else:
            out.append(_named(part))
    return out
