"""The browser harness itself (tests/browser.py): it drives the system Chromium
and sees what the page logs."""

from __future__ import annotations

import subprocess

from tests.browser import CHROMIUM, console_problems


def test_drives_the_system_chromium(browser):
    # Playwright's own build would be another version (and is not installed here).
    out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30)
    assert browser.version in out.stdout, (browser.version, out.stdout)


def test_console_messages_are_kept_and_judged(page, shots):
    page.set_content(
        "<title>harness</title><p>hello</p>"
        "<script>console.log('fine'); console.warn('careful'); console.error('broken');"
        "setTimeout(() => { throw new Error('uncaught') })</script>"
    )
    page.wait_for_function("1")
    page.wait_for_timeout(50)  # the setTimeout above; nothing else to await
    kinds = [kind for kind, _ in page.console]
    assert kinds == ["log", "warning", "error", "pageerror"], page.console
    assert [p.split(":")[0] for p in console_problems(page.console)] == [
        "warning",
        "error",
        "pageerror",
    ]
    path = shots("hello")
    assert path.name == "01-hello.png" and path.stat().st_size > 0
    # Expected here: cleared, so the teardown's check (the same function) passes.
    page.console.clear()
