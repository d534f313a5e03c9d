"""The pure-Python build: the reference the Rust build matches byte for byte."""

from .chunk_dialect import ChunkTranslator, create_agui_translator
from .crumb_dialect import CrumbTransformer, create_agui_transformer
from .events_dialect import EventRepairer, create_agui_repairer
from .sse import encode_sse

IMPLEMENTATION = "python"

__all__ = [
    "IMPLEMENTATION",
    "ChunkTranslator",
    "CrumbTransformer",
    "EventRepairer",
    "create_agui_repairer",
    "create_agui_transformer",
    "create_agui_translator",
    "encode_sse",
]
