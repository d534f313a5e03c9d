"""The transformer benchmark of issues 2, 3 and 14: ``python benches/transformer.py``.

A realistic 1,000-item run in each dialect (mostly 1-8 character text
deltas, a few streamed tool calls, fallback tool calls, results, steps; for
the events dialect, the AG-UI events of the crumbs run, as an agent that
already speaks AG-UI yields them), and per item, in one process on this
machine, side by side:

- native ``encode`` per item (``agui_bridge._native``),
- native ``encode_many`` on the whole run,
- pure ``encode`` per item (``agui_bridge.pure``),
- the official SDK path: the same events built as ``ag_ui.core`` pydantic
  models and encoded one by one with ``ag_ui.encoder.EventEncoder().encode``
  (the SDK path gets the events for free: none of the mapping is timed).

Each figure is the median over many rounds of one whole run, divided by the
number of items, measured with ``time.perf_counter_ns`` and the garbage
collector paused (as ``timeit`` does). Every stream's items are rebuilt by
one rule (``as_received``: an orjson round trip) right before its timed
section, so where they lie in memory is the same for every dialect. The
script refuses to run when the native module is missing or a debug build,
unless ``--allow-missing-native`` (then only pure vs SDK is measured).
``--out FILE`` also writes the report.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import platform
import random
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from ag_ui import core as sdk  # noqa: E402
from ag_ui.encoder import EventEncoder  # noqa: E402
from agui_bridge import pure  # noqa: E402

N_ITEMS = 1000
THREAD, RUN = "bench-thread", "bench-run"

_PROSE = (
    "The quick brown fox jumps over the lazy dog while the agent streams its answer "
    "token by token, with café, naïve, 東京 and a few emoji 🎉 for good measure. "
    "Results are summarised below: revenue grew 12.5% year over year, and costs fell."
)
WORDS = _PROSE.split(" ")


def text_pieces(rng: random.Random, count: int) -> list[str]:
    """``count`` deltas of 1-8 characters, cut from running text."""
    stream = " ".join(rng.choice(WORDS) for _ in range(count * 2))
    pieces, at = [], 0
    while len(pieces) < count:
        size = rng.randint(1, 8)
        piece = stream[at : at + size]
        if not piece:
            at = 0
            continue
        pieces.append(piece)
        at += size
    return pieces


def crumbs_run() -> list[dict]:
    rng = random.Random(20261202)
    tools = ["search", "fetch_page", "calculator", "lookup_user"]
    non_text: dict[int, list[dict]] = {}
    # 6 streamed tool calls (start, 8 deltas, end, tool:call no-op, result)
    for n, at in enumerate([90, 230, 380, 520, 660, 800]):
        cid = f"call_s{n}"
        args = '{"query":"quarterly revenue by region","limit":10,"lang":"en"}'
        cuts = sorted(rng.sample(range(1, len(args)), 7))
        parts = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        non_text[at] = [
            {"type": "tool:input:start", "toolCallId": cid, "toolName": tools[n % 4]},
            *({"type": "tool:input:delta", "toolCallId": cid, "delta": p} for p in parts),
            {"type": "tool:input:end", "toolCallId": cid},
            {"type": "tool:call", "toolCallId": cid, "toolName": tools[n % 4], "input": {}},
            {
                "type": "tool:result",
                "toolCallId": cid,
                "result": {"rows": [{"region": "EMEA", "revenue": 1.25e6}], "count": 1},
            },
        ]
    # 4 fallback tool calls with results, 1 error result
    for n, at in enumerate([150, 450, 600, 900]):
        cid = f"call_f{n}"
        non_text[at] = [
            {
                "type": "tool:call",
                "toolCallId": cid,
                "toolName": "calculator",
                "input": {"expression": "12.5 * 4", "precision": 2},
            },
            {"type": "tool:result", "toolCallId": cid, "result": "50.0"}
            if n != 2
            else {
                "type": "tool:error",
                "toolCallId": cid,
                "error": {"code": "E_TIMEOUT", "message": "took too long"},
            },
        ]
    # steps
    for n, (start, end) in enumerate([(40, 300), (310, 700), (710, 950)]):
        non_text.setdefault(start, []).append({"type": "pipeline:step:start", "stepName": f"s{n}"})
        non_text.setdefault(end, []).append({"type": "pipeline:step:end", "stepName": f"s{n}"})
    head = [
        {"type": "agent:run:start", "runId": RUN, "sessionId": THREAD},
        {"type": "pipeline:step:start", "stepName": "answer"},
    ]
    tail = [
        {"type": "pipeline:step:end", "stepName": "answer"},
        {"type": "agent:run:end", "result": {"status": "ok", "tokens": 812}},
    ]
    n_other = sum(len(v) for v in non_text.values())
    texts = iter(text_pieces(rng, N_ITEMS - len(head) - len(tail) - n_other))
    body: list[dict] = []
    position = 0
    while len(body) < N_ITEMS - len(head) - len(tail):
        body += non_text.pop(position, [])
        position += 1
        piece = next(texts, None)
        if piece is not None:
            body.append({"type": "text:delta", "delta": piece})
    assert not non_text
    run = head + body + tail
    assert len(run) == N_ITEMS, len(run)
    return run


def chunks_run() -> list:
    rng = random.Random(20261203)
    special: dict[int, list] = {}
    for n, at in enumerate([90, 150, 230, 380, 450, 520, 600, 660, 800, 900]):
        cid = f"call_{n}"
        special[at] = [
            {
                "type": "tool_call",
                "id": cid,
                "name": "search",
                "input": {"query": "quarterly revenue by region", "limit": 10},
            },
            {"type": "tool_result", "id": cid, "output": {"rows": [1, 2, 3], "score": 0.75}},
        ]
    for n, at in enumerate([40, 310, 710]):
        special.setdefault(at, []).append(
            {"type": "plan_update", "plan": [{"step": n, "status": "running"}]}
        )
    special.setdefault(500, []).append({"type": "subagent.started", "id": "sa1", "name": "critic"})
    special.setdefault(700, []).append({"type": "progress", "pct": 70})
    tail = [{"type": "done", "output": {"answer": "ok", "tokens": 812}}]
    n_other = sum(len(v) for v in special.values())
    texts = iter(text_pieces(rng, N_ITEMS - len(tail) - n_other))
    body: list = []
    position = 0
    while len(body) < N_ITEMS - len(tail):
        body += special.pop(position, [])
        position += 1
        piece = next(texts, None)
        if piece is not None:
            # Most agents yield bare strings; some wrap them as token chunks.
            body.append(piece if position % 5 else {"type": "token", "content": piece})
    assert not special
    run = body + tail
    assert len(run) == N_ITEMS, len(run)
    return run


# ---- the SDK path ----

SDK_CLASSES = {
    "RUN_STARTED": sdk.RunStartedEvent,
    "RUN_FINISHED": sdk.RunFinishedEvent,
    "RUN_ERROR": sdk.RunErrorEvent,
    "STEP_STARTED": sdk.StepStartedEvent,
    "STEP_FINISHED": sdk.StepFinishedEvent,
    "TEXT_MESSAGE_START": sdk.TextMessageStartEvent,
    "TEXT_MESSAGE_CONTENT": sdk.TextMessageContentEvent,
    "TEXT_MESSAGE_END": sdk.TextMessageEndEvent,
    "TOOL_CALL_START": sdk.ToolCallStartEvent,
    "TOOL_CALL_ARGS": sdk.ToolCallArgsEvent,
    "TOOL_CALL_END": sdk.ToolCallEndEvent,
    "TOOL_CALL_RESULT": sdk.ToolCallResultEvent,
    "STATE_SNAPSHOT": sdk.StateSnapshotEvent,
    "CUSTOM": sdk.CustomEvent,
}


def events_run() -> list[dict]:
    """The AG-UI events of the crumbs run: what an agent speaking AG-UI yields."""
    t = pure.create_agui_transformer(THREAD, RUN)
    return [event for item in crumbs_run() for event in t(item)] + t.finish()


def snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def sdk_plan(events_per_item: list[list[dict]]) -> list[list[tuple]]:
    """Per item, the (model class, keyword arguments) of each of its events."""
    return [
        [
            (SDK_CLASSES[e["type"]], {snake(k): v for k, v in e.items() if k != "type"})
            for e in events
        ]
        for events in events_per_item
    ]


# ---- the native module ----


def elf_has_debug_info(path: str) -> bool:
    """True when the shared object carries DWARF (.debug_info): a debug build."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # only 64-bit ELF is checked
        return False
    endian = "<" if data[5] == 1 else ">"
    shoff = struct.unpack_from(endian + "Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
    strtab = struct.unpack_from(endian + "QQ", data, shoff + shstrndx * shentsize + 0x18)
    names = data[strtab[0] : strtab[0] + strtab[1]]
    for index in range(shnum):
        name_at = struct.unpack_from(endian + "I", data, shoff + index * shentsize)[0]
        if names[name_at : names.index(b"\0", name_at)] == b".debug_info":
            return True
    return False


def load_native(allow_missing: bool):
    try:
        native = importlib.import_module("agui_bridge._native")
    except ModuleNotFoundError:
        if allow_missing:
            return None, "missing (agui_bridge._native is not built)"
        sys.exit("refusing to run: agui_bridge._native is missing (run `make build`)")
    profile = getattr(native, "BUILD_PROFILE", None)
    debug = profile == "debug" if profile is not None else elf_has_debug_info(native.__file__)
    if debug:
        if allow_missing:
            return None, f"a debug build ({native.__file__}), not measured"
        sys.exit(
            f"refusing to run: {native.__file__} is a debug build "
            "(rebuild with `maturin develop --release`)"
        )
    return native, f"release build ({Path(native.__file__).name})"


# ---- timing ----


def measure(modes: dict, rounds: int) -> dict[str, float]:
    """Median ns per run of each mode; modes are interleaved round by round."""
    samples: dict[str, list[int]] = {name: [] for name in modes}
    for fn in modes.values():  # warm up
        fn()
        fn()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in modes.items():
                start = time.perf_counter_ns()
                fn()
                samples[name].append(time.perf_counter_ns() - start)
    finally:
        if enabled:
            gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def as_received(items: list) -> list:
    """The stream as an agent that parses a model's JSON stream holds it.

    Every dialect's items are rebuilt this way (an orjson round trip: fresh
    dicts and strings, allocated together) right before its timed section.
    Without it, where the inputs lie in memory depends on how each stream was
    made: the events stream comes out of the pure transformer among its own
    objects, after the sections before it churned the heap, and that alone
    made its native ``encode`` about 20 % slower against the crumbs' than the
    same two streams copied afresh (RESULTS.md, issue 23). One procedure for
    all streams, so no dialect's items carry another section's heap history.
    """
    import orjson

    received = orjson.loads(orjson.dumps(items))
    assert received == items
    return received


def text_only(dialect: str, items: list) -> list:
    """The run's text deltas alone, after what starts the run (and, for events,
    the message): every item on the fastest path. What ``encode_many`` gains
    there is the most it can gain on a run, whatever else the run holds."""
    if dialect == "crumbs":
        return [items[0], *(item for item in items if item["type"] == "text:delta")]
    if dialect == "chunks":
        return [item for item in items if isinstance(item, str) or item["type"] == "token"]
    start, message = items[0], "bench-message"
    deltas = [item["delta"] for item in items if item["type"] == "TEXT_MESSAGE_CONTENT"]
    return [
        start,
        {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": d} for d in deltas),
    ]


def modes_for(dialect: str, items: list, native):
    def create(impl):
        if dialect == "crumbs":
            return impl.create_agui_transformer(THREAD, RUN)
        if dialect == "events":
            return impl.create_agui_repairer(THREAD, RUN)
        return impl.create_agui_translator(THREAD, RUN)

    reference = create(pure)
    events_per_item = [reference(item) for item in items]
    expected = pure.encode_sse([e for events in events_per_item for e in events])
    plan = sdk_plan(events_per_item)
    encoder = EventEncoder()

    def per_item(impl, stream):
        # What a server does: encode each item as it arrives and write the bytes out.
        def run():
            encode = create(impl).encode
            for item in stream:
                encode(item)

        return run

    def per_item_bytes(impl):
        encode = create(impl).encode
        return b"".join([encode(item) for item in items])

    def many(impl, stream):
        return lambda: create(impl).encode_many(stream)

    def sdk_path():
        encode = encoder.encode
        return "".join([encode(cls(**kwargs)) for events in plan for cls, kwargs in events])

    def per_item_crumbs(impl, stream):
        def run():
            encode = impl.create_agui_transformer(THREAD, RUN).encode
            for item in stream:
                encode(item)

        return run

    # Every path must produce the same bytes before any of it is timed.
    outputs = {"pure encode": per_item_bytes(pure)}
    if native is not None:
        outputs["native encode"] = per_item_bytes(native)
        outputs["native encode_many"] = many(native, items)()
    for name, got in outputs.items():
        if got != expected:
            sys.exit(f"{dialect}: {name} bytes differ from the pure reference; not measuring")
    frames_ours = expected.split(b"\n\n")
    frames_sdk = sdk_path().encode().split(b"\n\n")
    same = sum(a == b for a, b in zip(frames_ours, frames_sdk, strict=False))
    checks = [f"SDK frames byte-identical to ours: {same - 1} of {len(frames_ours) - 1}"]

    # The timed inputs, every stream prepared by the same rule, last.
    stream = as_received(items)
    modes = {}
    if native is not None:
        modes["native encode"] = per_item(native, stream)
        modes["native encode_many"] = many(native, stream)
    modes["pure encode"] = per_item(pure, stream)
    if native is not None:
        texts = as_received(text_only(dialect, items))
        modes["native encode (text only)"] = per_item(native, texts)
        modes["native encode_many (text only)"] = many(native, texts)
    if native is not None and dialect == "events":
        # The same stream as crumbs (events_run is made from crumbs_run), timed
        # in the same rounds: the events dialect's cost per event against theirs.
        # Each of the two runs follows a pure-Python path (the events one the SDK
        # path of the round before), so both start with the caches as cold:
        # timed after native encode_many instead, the crumbs' run started warm.
        modes["native encode (crumbs)"] = per_item_crumbs(native, as_received(crumbs_run()))
    modes["SDK path"] = sdk_path

    n_events = sum(len(e) for e in events_per_item)
    return modes, n_events, checks


def passes(ratio: float, need: float) -> bool:
    """``need``: a lower bound (1.0: strictly faster), or minus an upper bound."""
    if need < 0:
        return ratio <= -need
    return ratio > need if need == 1.0 else ratio >= need


def report(dialect: str, items: list, native, rounds: int) -> tuple[list[str], bool, list]:
    modes, n_events, checks = modes_for(dialect, items, native)
    medians = measure(modes, rounds)
    per = {name: ns / len(items) for name, ns in medians.items()}
    lines = [
        f"### {dialect}: {len(items)} items -> {n_events} events, median of {rounds} rounds",
        "",
        "| path | ns per item | µs per run | vs SDK |",
        "|---|---:|---:|---:|",
    ]
    for name, ns in per.items():
        if "(text only)" in name:
            continue  # not this run's items: shown below, per item of its own
        lines.append(
            f"| {name} | {ns:,.0f} | {medians[name] / 1000:,.1f} | {per['SDK path'] / ns:,.1f}x |"
        )
    lines.append("")
    if native is not None:
        n_texts = len(text_only(dialect, items))
        each, many_each = (
            medians[f"native {path} (text only)"] / n_texts for path in ("encode", "encode_many")
        )
        lines += [
            f"Information: the run's {n_texts} text deltas alone (every item on the fastest"
            f" path): per-item encode {each:,.0f} ns, encode_many {many_each:,.0f} ns an item,"
            f" {each / many_each:.2f}x (what encode_many can gain at most on any run)",
            "",
        ]
    targets = []
    if native is not None:
        targets += [
            ("native encode ≥ 20x SDK path", per["SDK path"] / per["native encode"], 20.0),
            ("native encode ≥ 4x pure encode", per["pure encode"] / per["native encode"], 4.0),
        ]
    targets.append(("pure encode faster than SDK path", per["SDK path"] / per["pure encode"], 1.0))
    if native is not None and dialect == "events":
        # Both runs make the same 1,024 events: run time against run time.
        targets.append(
            (
                "events encode per event ≤ 1.25x crumbs' (same stream)",
                medians["native encode"] / medians["native encode (crumbs)"],
                -1.25,
            )
        )
    if native is not None:
        targets.append(
            (
                "encode_many ≥ 2x native per-item encode",
                per["native encode"] / per["native encode_many"],
                2.0,
            )
        )
    ok = True
    lines += ["| target | ratio | result |", "|---|---:|---|"]
    for label, ratio, need in targets:
        passed = passes(ratio, need)
        ok &= passed
        lines.append(f"| {label} | {ratio:,.2f}x | {'PASS' if passed else 'FAIL'} |")
    if native is None:
        lines.append("| native targets | n/a | NOT MEASURED (no release native build) |")
        ok = False
    lines += ["", *checks, ""]
    return lines, ok, [(f"{dialect}: {label}", ratio, need) for label, ratio, need in targets]


def write_figures(path: Path, command: str, figures: list) -> None:
    """The targets as make bench's table reads them (benches/summary.py)."""
    import json
    import os

    rows = []
    for label, ratio, need in figures:
        bound = f"≤ {-need:g}x" if need < 0 else ("> 1x" if need == 1.0 else f"≥ {need:g}x")
        ok = passes(ratio, need)
        rows.append({"figure": label, "value": f"{ratio:.2f}x", "target": bound, "pass": ok})
    load = os.getloadavg()[0]
    path.write_text(json.dumps({"command": command, "load": load, "rows": rows}), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--allow-missing-native", action="store_true")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument("--json", type=Path, help="also write the targets as JSON (make bench)")
    parser.add_argument(
        "--dialects", default="crumbs,chunks,events", help="comma-separated, in this order"
    )
    args = parser.parse_args()
    runs = {"crumbs": crumbs_run, "chunks": chunks_run, "events": events_run}

    native, native_state = load_native(args.allow_missing_native)
    import orjson
    import pydantic

    head = [
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"Command: {' '.join(['python', 'benches/transformer.py', *sys.argv[1:]])}",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}, pydantic {pydantic.VERSION}, "
        f"orjson {orjson.__version__}",
        f"Native: {native_state}",
        "",
    ]
    print("\n".join(head))
    out = list(head)
    all_ok = True
    figures = []
    for dialect in args.dialects.split(","):
        lines, ok, targets = report(dialect, runs[dialect](), native, args.rounds)
        figures += targets
        all_ok &= ok
        print("\n".join(lines), flush=True)
        out += lines
    verdict = "ALL TARGETS PASS" if all_ok else "SOME TARGETS FAIL OR WERE NOT MEASURED"
    print(verdict)
    out.append(verdict)
    if args.out:
        args.out.write_text("\n".join(out) + "\n", encoding="utf-8")
    if args.json:
        write_figures(args.json, "python benches/transformer.py " + " ".join(sys.argv[1:]), figures)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
