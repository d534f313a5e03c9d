"""Picks the Rust build, or the pure one when it is absent or forced: the one
module the transformers are defined for the package (modules inside it import
them from here, not from the package root)."""

from __future__ import annotations

import importlib
import os


def load_build():
    if os.environ.get("AGUI_BRIDGE_PURE") == "1":
        from . import pure

        return pure
    try:
        native = importlib.import_module("agui_bridge._native")
    except ModuleNotFoundError as error:
        # Only a missing extension falls back: a broken build must fail loudly.
        if error.name != "agui_bridge._native":
            raise
        from . import pure

        return pure
    return native


BUILD = load_build()
IMPLEMENTATION: str = BUILD.IMPLEMENTATION
create_agui_transformer = BUILD.create_agui_transformer
create_agui_translator = BUILD.create_agui_translator
create_agui_repairer = BUILD.create_agui_repairer
encode_sse = BUILD.encode_sse
