"""agui-bridge: serve Python agents to AG-UI frontends, correct and fast."""

from __future__ import annotations

from importlib import metadata as _metadata

from . import crumbs
from ._select import load_build
from .errors import AguiBridgeError, CrumbError, RunInputError
from .run_input import Resume, RunInput, map_run_input

try:
    # The one version source is Cargo.toml's: maturin writes it into the package metadata.
    __version__: str = _metadata.version("agui-bridge")
except _metadata.PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"

_build = load_build()

IMPLEMENTATION: str = _build.IMPLEMENTATION
create_agui_transformer = _build.create_agui_transformer
create_agui_translator = _build.create_agui_translator
create_agui_repairer = _build.create_agui_repairer
encode_sse = _build.encode_sse

# The ingress maps through the build chosen above, so it is imported after it.
from .app import App, Forbidden, Unauthorized  # noqa: E402
from .coalesce import FLUSH, Coalesce  # noqa: E402
from .context import RunContext  # noqa: E402

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
    "create_agui_repairer",
    "create_agui_transformer",
    "create_agui_translator",
    "crumbs",
    "encode_sse",
    "map_run_input",
]
