"""The Agent Protocol's stream modes: what each costs per token event (issue 22).

    python benches/stream_modes.py                 # the figures in benches/RESULTS.md
    python benches/stream_modes.py --tokens 2000   # a smoke run

A stream is a reader of the run's log: each AG-UI event is turned into the
parts of the modes asked for (``agent_protocol/stream.py``'s ``Projector``)
and each part into an SSE frame (``reader.sse``). Timed here, in this process
with no server: a run of ``--tokens`` text deltas (and its START/END, the run's
own events) fed through a fresh projector per mode set, every part framed; the
best of ``--repeats``, as microseconds per token event, side by side with
``messages-tuple`` (what the LangGraph SDK streams tokens with). ``events`` is
what ``@ag-ui/langgraph`` (CopilotKit's LangGraph agent) asks for, with
``values``, ``updates`` and ``messages-tuple`` beside it.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from agui_bridge.agent_protocol.reader import sse  # noqa: E402
from agui_bridge.agent_protocol.stream import Projector  # noqa: E402

MODE_SETS = (
    ("messages-tuple",),
    ("events",),
    ("events", "messages-tuple"),
    ("events", "values", "updates", "messages-tuple"),
)


def run_events(tokens: int) -> list[dict]:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    ]
    events += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "tok "} for _ in range(tokens)
    ]
    events += [
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    return events


def per_token(modes, events, tokens: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        projector = Projector(modes, "agent", "t", "r", [], {})
        started = time.perf_counter()
        for event in events:
            for name, data in projector.feed(event):
                sse(name, data)
        best = min(best, time.perf_counter() - started)
    return best / tokens * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    events = run_events(args.tokens)
    print(f"python {platform.python_version()}, {args.tokens} tokens, best of {args.repeats}")
    base = None
    for modes in MODE_SETS:
        cost = per_token(modes, events, args.tokens, args.repeats)
        base = base or cost
        print(f"{' + '.join(modes):45s} {cost:8.2f} us/token  {cost / base:5.2f}x")


if __name__ == "__main__":
    main()
