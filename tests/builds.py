"""The two builds, for conftest.py's ``impl`` and ``both`` fixtures and the
native-only modules: the Rust extension must be there under ``CI=true``."""

from __future__ import annotations

import importlib
import os

import pytest

# ``make test-pure``: the package as a user without the extension gets it.
PURE = os.environ.get("AGUI_BRIDGE_PURE") == "1"


def native_build():
    """``agui_bridge._native``. Missing: a failure under ``CI=true`` (a CI run that
    skipped the Rust build has proved nothing about it), a skip elsewhere."""
    try:
        return importlib.import_module("agui_bridge._native")
    except ModuleNotFoundError as error:
        if error.name != "agui_bridge._native":
            raise
        reason = "the Rust extension is not built (make check or make build)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI needs it", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
