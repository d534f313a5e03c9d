"""Coalescing through ``App`` and the real ``@ag-ui/client``: the client's messages
are the same with and without it, in fewer events (tests/coalesce_apps.py)."""

from __future__ import annotations

import pytest

from tests import test_interop as interop
from tests.test_interop import check_lifecycle, one_turn, run_client, serve_rsgi, types

# The interop suite's fixtures: node, and each client version.
node = interop.node
client_version = interop.client_version

MERGED = ("TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS")


@pytest.fixture(scope="module")
def urls():
    target = ["tests.coalesce_apps:make_app"]
    with (
        serve_rsgi(*target, extra=["--factory"]) as plain,
        serve_rsgi(*target, env={"COALESCE_MS": "30"}, extra=["--factory"]) as merged,
    ):
        yield plain, merged


def shape(messages):
    """The messages without their ids (the runs' ids differ)."""
    out = []
    for m in messages:
        calls = [c["function"] for c in m.get("toolCalls", [])]
        out.append((m["role"], m.get("content"), calls))
    return out


@pytest.mark.parametrize("agent", ["tokens", "events"])
def test_the_client_rebuilds_the_same_messages(node, client_version, urls, tmp_path, agent):
    plain, merged = urls
    runs = {}
    for name, url in (("plain", plain), ("merged", merged)):
        out = run_client(node, client_version, f"{url}/agui/{agent}", one_turn("go"), tmp_path)
        check_lifecycle(out["runs"][0])
        runs[name] = out
    assert shape(runs["merged"]["messages"]) == shape(runs["plain"]["messages"])
    counts = {n: sum(t in MERGED for t in types(o["runs"][0])) for n, o in runs.items()}
    assert counts["merged"] < counts["plain"] / 3, counts


def test_an_agent_may_turn_the_apps_coalescing_off(node, client_version, urls, tmp_path):
    _, merged = urls
    out = run_client(node, client_version, f"{merged}/agui/plain", one_turn("go"), tmp_path)
    tokens = run_client(node, client_version, f"{merged}/agui/tokens", one_turn("go"), tmp_path)
    assert shape(out["messages"]) == shape(tokens["messages"])
    # One event per delta: the 4 x 46 characters and the 6 words.
    assert types(out["runs"][0]).count("TEXT_MESSAGE_CONTENT") == 4 * 46 + 6
