"""Every transformer test runs on both builds through the ``impl`` fixture."""

from __future__ import annotations

import importlib
import os

import pytest


def _builds():
    builds = [pytest.param("python", id="py")]
    if os.environ.get("AGUI_BRIDGE_PURE") != "1":
        builds.insert(0, pytest.param("rust", id="rust", marks=pytest.mark.native_only))
    return builds


def pytest_configure(config):
    config.addinivalue_line("markers", "native_only: needs the Rust build")


@pytest.fixture(params=_builds(), scope="session")
def impl(request):
    """The module of one build: ``agui_bridge._native`` or ``agui_bridge.pure``."""
    if request.param == "rust":
        # In CI the extension must be there; a missing one is a failure, not a skip.
        return importlib.import_module("agui_bridge._native")
    return importlib.import_module("agui_bridge.pure")
