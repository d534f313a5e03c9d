"""Browser tests: Debian's Chromium, headless, driven by Playwright for Python.

Loaded as a pytest plugin (``pytest_plugins`` in conftest.py), so any test
module can ask for these fixtures:

- ``browser`` (one per test module): Chromium at ``/usr/bin/chromium`` (or
  ``$AGUI_CHROMIUM``). Playwright never downloads a browser here
  (``playwright install`` cannot run on these machines): it drives the system
  one through ``executable_path``. Missing: a skip, but a failure under
  ``CI=true`` (``make chromium`` installs it).
- ``page``: a fresh context and page. Every console message is kept
  (``page.console``, a list of ``(type, text)``; all of them are written to
  ``console.log`` beside the screenshots); a console error or warning, or an
  uncaught exception in the page, fails the test when it ends.
- ``shots``: ``shots("sent")`` saves a full-page screenshot of ``page`` as
  ``NN-sent.png`` under ``shots.folder`` (one folder per test, under
  ``$AGUI_SCREENSHOTS``, default ``.artifacts/screenshots``); the folders are
  printed at the end of the pytest run. ``shots("name", other_page)`` saves
  another page's.

Every test using ``browser`` or ``page`` is marked ``browser`` (``make
test-pure`` leaves them out: the browser does not see which build served it).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("AGUI_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("AGUI_SCREENSHOTS", ROOT / ".artifacts" / "screenshots"))
# Seconds any one page action or expectation may take (a loaded 2-core machine).
TIMEOUT = 15.0
FAILING_CONSOLE = ("error", "warning")

_folders: list[Path] = []


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests need Chromium in CI: {reason}", pytrace=False)
    pytest.skip(f"no browser: {reason}")


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives headless Chromium (tests/browser.py)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"browser", "page", "shots"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


def pytest_terminal_summary(terminalreporter):
    if _folders:
        terminalreporter.write_sep("-", "browser screenshots")
        for folder in _folders:
            terminalreporter.write_line(str(folder))


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the whole test module."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"{CHROMIUM} is not installed (make chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (make dev)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            # /dev/shm is small in containers; Chromium falls back to /tmp.
            args=["--disable-dev-shm-usage"],
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Shots:
    """Numbered screenshots of one test, in one folder."""

    def __init__(self, folder: Path, page):
        self.folder = folder
        self.page = page
        self.count = 0

    def __call__(self, name: str, page=None) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{_slug(name)}.png"
        (page or self.page).screenshot(path=str(path), full_page=True)
        return path


def _slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-")


def _folder_of(request) -> Path:
    module = Path(request.node.fspath).stem
    test = _slug(request.node.name)
    folder = SCREENSHOTS / module / test
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def console_problems(messages: list) -> list[str]:
    """The messages that fail a test: console errors, warnings and uncaught exceptions."""
    return [f"{k}: {t}" for k, t in messages if k in FAILING_CONSOLE or k == "pageerror"]


def _watch(page, messages: list, name: str = "") -> None:
    """Keeps every console message and uncaught error of ``page`` in ``messages``."""
    prefix = f"[{name}] " if name else ""

    def on_console(message):
        where = message.location or {}
        at = f" ({where.get('url') or 'inline'}:{where.get('lineNumber', 0)})"
        messages.append((message.type, prefix + message.text + at))

    page.on("console", on_console)
    page.on("pageerror", lambda e: messages.append(("pageerror", f"{prefix}{e}")))


@pytest.fixture
def context(browser, request):
    """A fresh browser context; every page opened in it is watched like ``page``."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    ctx.set_default_timeout(TIMEOUT * 1000)
    ctx.console = []
    pages = []

    def on_page(new_page):
        pages.append(new_page)
        _watch(new_page, ctx.console, f"page {len(pages)}" if len(pages) > 1 else "")

    ctx.on("page", on_page)
    folder = _folder_of(request)
    ctx.screenshots = folder
    _folders.append(folder)
    try:
        yield ctx
    finally:
        (folder / "console.log").write_text(
            "".join(f"{kind}: {text}\n" for kind, text in ctx.console)
        )
        ctx.close()
    bad = console_problems(ctx.console)
    if bad:
        pytest.fail("the browser console was not clean:\n" + "\n".join(bad), pytrace=False)


@pytest.fixture
def page(context):
    """A page whose console errors and warnings fail the test (``page.console``: all of it)."""
    new_page = context.new_page()
    new_page.console = context.console
    return new_page


@pytest.fixture
def shots(page, context):
    """``shots("step")``: a numbered screenshot of ``page`` (or of the page given)."""
    return Shots(context.screenshots, page)
