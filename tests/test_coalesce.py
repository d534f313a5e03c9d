"""Coalescing (``t.coalesce(max_bytes)``): consecutive deltas merged in the transformer.

- Both builds give the same events, frames, snapshots and ``holding`` at
  every step, on random runs of each dialect, random caps and flush points.
- The merged stream is exactly the plain one with runs of consecutive
  ``TEXT_MESSAGE_CONTENT`` for one message (``TOOL_CALL_ARGS`` for one call)
  joined, greedily up to the byte cap, never across another event or a
  flush: nothing else moves, and the terminal events are never held.
- The run's messages (``snapshot()``, what the store saves) are the same
  with and without it; a held delta is not in the snapshot until it is sent.
"""

from __future__ import annotations

import importlib
import os

import pytest
from agui_bridge.errors import CrumbError
from hypothesis import given
from hypothesis import strategies as st

from tests.test_differential import (
    SETTINGS,
    check_valid,
    chunk_runs,
    crumb_runs,
    ending,
    event_runs,
    make,
)

MERGED = {"TEXT_MESSAGE_CONTENT": "messageId", "TOOL_CALL_ARGS": "toolCallId"}


@st.composite
def coalesced(draw, runs):
    items, how, options = draw(runs)
    cap = draw(st.sampled_from([1, 3, 8, 64, 2**20]))
    flushes = draw(st.sets(st.integers(0, max(len(items) - 1, 0))))
    return items, how, options, cap, flushes


RUNS = {"crumbs": crumb_runs(), "chunks": chunk_runs(), "events": event_runs()}


def outcome(call, *args):
    try:
        return ("ok", call(*args))
    except CrumbError as error:
        return ("error", str(error))


def steps(impl, dialect, items, how, options, cap, flushes):
    """Per item: its events (or error), the flush's events, holding, the snapshot."""
    t = make(impl, dialect, options)
    if cap is not None:
        t.coalesce(cap)
    out = []
    for at, item in enumerate(items):
        got = outcome(t, item)
        flushed = t.flush() if at in flushes else []
        out.append((got, flushed, t.holding, t.snapshot()))
    out.append((("end", ending(t, how, False)), [], t.holding, t.snapshot()))
    return out, (t.dropped, t.ignored, t.finished, t.last_id)


def frames(impl, dialect, items, how, options, cap, flushes):
    t = make(impl, dialect, options)
    t.coalesce(cap)
    out = []
    for at, item in enumerate(items):
        out.append(outcome(t.encode, item))
        if at in flushes:
            out.append(t.flush_encoded())
    out.append(ending(t, how, True))
    return out


def stream(outcomes):
    events = []
    for got, flushed, *_ in outcomes:
        if got[0] in ("ok", "end"):
            events += got[1]
        events += flushed
    return events


def merged(outcomes, cap, flushed):
    """The plain run's events with the deltas joined as coalescing must join them;
    the last group stays held unless a flush (``flushed``) sends it."""
    out, group, size = [], None, 0

    def close():
        nonlocal group, size
        if group is not None:
            out.append(group)
        group, size = None, 0

    for got, *_ in outcomes:
        for event in got[1] if got[0] in ("ok", "end") else []:
            key = MERGED.get(event["type"])
            if key is None:
                close()
                out.append(event)
                continue
            n = len(event["delta"].encode())
            # The type first: a text group has no toolCallId to compare (and back).
            same = group is not None and group["type"] == event["type"] and group[key] == event[key]
            if not same or size + n > cap:
                close()
            if group is None:
                group = dict(event)
            else:
                group["delta"] += event["delta"]
            size += n
            if size >= cap:
                close()
    if flushed:
        close()
    return out


def split_at_flushes(outcomes, flushes):
    """The plain outcomes cut where a flush came: a group never spans one."""
    parts, part = [], []
    for at, entry in enumerate(outcomes):
        part.append(entry)
        if at in flushes:
            parts.append(part)
            part = []
    parts.append(part)
    return parts


@pytest.fixture(scope="module")
def both():
    if os.environ.get("AGUI_BRIDGE_PURE") == "1":
        pytest.skip("AGUI_BRIDGE_PURE=1: the Rust build is deselected")
    return importlib.import_module("agui_bridge._native"), importlib.import_module(
        "agui_bridge.pure"
    )


@pytest.mark.native_only
@pytest.mark.parametrize("dialect", list(RUNS))
def test_coalesced_builds_agree(both, dialect):
    native, pure = both

    @SETTINGS
    @given(run=coalesced(RUNS[dialect]))
    def check(run):
        items, how, options, cap, flushes = run
        args = (dialect, items, how, options, cap, flushes)
        assert steps(native, *args) == steps(pure, *args)
        assert frames(native, *args) == frames(pure, *args)

    check()


@pytest.mark.parametrize("dialect", list(RUNS))
def test_coalescing_only_joins_consecutive_deltas(impl, dialect):
    @SETTINGS
    @given(run=coalesced(RUNS[dialect]))
    def check(run):
        items, how, options, cap, flushes = run
        plain, plain_counters = steps(impl, dialect, items, how, options, None, set())
        held, held_counters = steps(impl, dialect, items, how, options, cap, flushes)
        expected = []
        parts = split_at_flushes(plain, flushes)
        for at, part in enumerate(parts):
            expected += merged(part, cap, flushed=at < len(parts) - 1)
        got = stream(held)
        assert got == expected
        # The same items dropped and ignored; fewer (or as many) events.
        assert held_counters[:3] == plain_counters[:3]
        assert held_counters[3] - plain_counters[3] == len(got) - len(stream(plain))
        # What the store saves: the same messages.
        assert held[-1][3]["messages"] == plain[-1][3]["messages"]
        if plain_counters[2]:
            assert not held[-1][2], "nothing is held once the run ended"
            check_valid(got, dialect)

    check()


def test_a_held_delta_is_sent_by_the_next_event_and_not_in_the_snapshot(impl):
    t = impl.create_agui_transformer("t1", "r1")
    t.coalesce(1024)
    assert [e["type"] for e in t({"type": "text:delta", "delta": "Hel"})] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
    ]
    assert t({"type": "text:delta", "delta": "lo"}) == []
    assert t.holding
    # A joining reader gets what was sent, and the held text after last_id.
    snap = t.snapshot()
    assert snap["last_id"] == 2
    assert [e["type"] for e in snap["open"]] == ["TEXT_MESSAGE_START"]
    events = t({"type": "tool:call", "toolCallId": "c1", "toolName": "f", "input": {}})
    assert events[:2] == [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r1:m1", "delta": "Hello"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r1:m1"},
    ]
    assert not t.holding
    assert t.flush() == [] and t.flush_encoded() == b""


def test_the_cap_and_flush_send_what_is_held(impl):
    t = impl.create_agui_repairer("t1", "r1", event_ids=True)
    t.coalesce(4)
    t({"type": "TEXT_MESSAGE_START", "messageId": "m"})
    content = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}
    # The message opens with its first delta, which is held.
    assert t({**content, "delta": "ab"}) == [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
    ]
    # 2 + 3 > 4: "ab" goes, "cde" is held.
    assert t({**content, "delta": "cde"}) == [{**content, "delta": "ab"}]
    # 3 + 1 = 4: merged and sent at once.
    assert t.encode({**content, "delta": "f"}) == (
        b'id: 4\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"cdef"}\n\n'
    )
    assert t({**content, "delta": "é"}) == []
    assert t.flush_events_and_frames() == (
        [{**content, "delta": "é"}],
        'id: 5\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"é"}\n\n'.encode(),
    )
    assert t.last_id == 5


def test_coalesce_takes_a_positive_integer(impl):
    t = impl.create_agui_transformer()
    for wrong, error in [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)]:
        with pytest.raises(error, match="max_bytes"):
            t.coalesce(wrong)
