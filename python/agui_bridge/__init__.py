"""agui-bridge: serve Python agents to AG-UI frontends, correct and fast."""

from __future__ import annotations

from importlib import metadata as _metadata

from . import crumbs
from ._select import (
    IMPLEMENTATION,
    create_agui_repairer,
    create_agui_transformer,
    create_agui_translator,
    encode_sse,
)
from .errors import AguiBridgeError, CrumbError, RunInputError
from .run_input import Resume, RunInput, map_run_input

try:
    # The one version source is Cargo.toml's: maturin writes it into the package metadata.
    __version__: str = _metadata.version("agui-bridge")
except _metadata.PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"

from .app import App, Forbidden, Unauthorized
from .coalesce import FLUSH, Coalesce
from .context import RunContext
from .webhooks import Webhooks

__all__ = [
    "FLUSH",
    "IMPLEMENTATION",
    "AguiBridgeError",
    "App",
    "Coalesce",
    "CrumbError",
    "Forbidden",
    "Resume",
    "RunContext",
    "RunInput",
    "RunInputError",
    "Unauthorized",
    "Webhooks",
    "create_agui_repairer",
    "create_agui_transformer",
    "create_agui_translator",
    "crumbs",
    "encode_sse",
    "map_run_input",
]
