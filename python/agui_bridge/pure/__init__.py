"""The pure-Python build: the reference the Rust build matches byte for byte."""

from .chunk_dialect import ChunkTranslator, create_agui_translator
from .crumb_dialect import CrumbTransformer, create_agui_transformer
from .sse import encode_sse

IMPLEMENTATION = "python"

__all__ = [
    "IMPLEMENTATION",
    "ChunkTranslator",
    "CrumbTransformer",
    "create_agui_transformer",
    "create_agui_translator",
    "encode_sse",
]
