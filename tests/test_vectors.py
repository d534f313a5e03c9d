"""Golden vectors (tests/vectors/*.json) through both builds, byte for byte.

Each vector was written from CONTRACT.md; the files are shared with the Rust
engineer's ``cargo test``. A vector replays its steps on a fresh transformer
(crumbs), translator (chunks) or repairer (events) and checks the events, the SSE bytes, the
error raised by each bad step, and the counters. A ``coalesce`` step turns
coalescing on (``t.coalesce(max_bytes)``), a ``flush`` step sends what it
holds (docs/coalescing.md).
"""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path

import pytest
from agui_bridge.errors import CrumbError

VECTORS_DIR = Path(__file__).parent / "vectors"
VECTOR_FILES = sorted(VECTORS_DIR.glob("*.json"))

# Vectors where the pure build disagrees with the contract and the fix is
# not ours to make: {file stem: reason}. Empty while both builds agree.
XFAIL: dict[str, str] = {}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def make_exception(spec: dict) -> BaseException:
    cls = getattr(builtins, spec["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = type(spec["type"], (Exception,), {})
    return cls(spec["message"])


def create(impl, vector: dict):
    kwargs = dict(vector.get("create", {}))
    if vector["dialect"] == "crumbs":
        return impl.create_agui_transformer(**kwargs)
    if vector["dialect"] == "events":
        return impl.create_agui_repairer(**kwargs)
    assert vector["dialect"] == "chunks"
    return impl.create_agui_translator(**kwargs)


def vector_params():
    params = []
    for path in VECTOR_FILES:
        marks = []
        if path.stem in XFAIL:
            marks.append(pytest.mark.xfail(reason=XFAIL[path.stem], strict=True))
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_vectors_exist():
    names = [load(p)["name"] for p in VECTOR_FILES]
    assert len(names) >= 60
    assert len(set(names)) == len(names), "vector names must be unique"
    dialects = {load(p)["dialect"] for p in VECTOR_FILES}
    assert dialects == {"crumbs", "chunks", "events"}


@pytest.mark.parametrize("path", vector_params())
def test_vector_events(impl, path):
    """t(item) per step: the events, the errors and the counters."""
    vector = load(path)
    t = create(impl, vector)
    events = []
    for index, step in enumerate(vector["steps"]):
        if "snapshot" in step:
            snapshot = t.snapshot()
            assert snapshot == step["snapshot"], f"step {index}"
            assert json.dumps(snapshot) == json.dumps(step["snapshot"]), f"step {index}: key order"
        elif "coalesce" in step:
            t.coalesce(step["coalesce"])
        elif "flush" in step:
            events += t.flush()
        elif "finish" in step:
            events += t.finish()
        elif "cancel" in step:
            events += t.cancel()
        elif "fail" in step:
            events += t.fail(make_exception(step["fail"]))
        elif "error" in step:
            before = (t.dropped, t.ignored, t.finished)
            with pytest.raises(CrumbError) as caught:
                t(step["input"])
            assert str(caught.value) == step["error"], f"step {index}"
            assert (t.dropped, t.ignored, t.finished) == before, f"step {index}"
        else:
            got = t(step["input"])
            assert isinstance(got, list), f"step {index}"
            events += got
    assert events == vector["events"]
    # Key order is part of the contract (rule 8): compare the orderings too.
    assert [list(e) for e in events] == [list(e) for e in vector["events"]]
    assert t.dropped == vector["dropped"]
    assert t.ignored == vector["ignored"]
    assert t.finished is vector["finished"]
    # Section 7: every event is numbered, ids on or off; dicts carry no id.
    first = vector.get("create", {}).get("first_id", 1)
    assert (t.next_id, t.last_id) == (first + len(events), first + len(events) - 1)
    assert not any("id" in event for event in events)


@pytest.mark.parametrize("path", vector_params())
def test_vector_encode_bytes(impl, path):
    """t.encode per step, finish_encoded and fail_encoded: exactly the sse bytes."""
    vector = load(path)
    t = create(impl, vector)
    out = b""
    for step in vector["steps"]:
        if "snapshot" in step:
            assert t.snapshot() == step["snapshot"]
        elif "coalesce" in step:
            t.coalesce(step["coalesce"])
        elif "flush" in step:
            out += t.flush_encoded()
        elif "finish" in step:
            out += t.finish_encoded()
        elif "cancel" in step:
            out += t.cancel_encoded()
        elif "fail" in step:
            out += t.fail_encoded(make_exception(step["fail"]))
        elif "error" in step:
            with pytest.raises(CrumbError, match="^" + re.escape(step["error"]) + "$"):
                t.encode(step["input"])
        else:
            chunk = t.encode(step["input"])
            assert isinstance(chunk, bytes)
            out += chunk
    assert out == vector["sse"].encode("utf-8")
    assert t.dropped == vector["dropped"]
    assert t.ignored == vector["ignored"]


@pytest.mark.parametrize("path", vector_params())
def test_vector_encode_many_matches_per_item(impl, path):
    """encode_many over every good input gives the bytes of t(item) per step."""
    vector = load(path)
    inputs = [s["input"] for s in vector["steps"] if "input" in s and "error" not in s]
    # Coalescing on from the start where a vector turns it on (flushes left out).
    caps = [s["coalesce"] for s in vector["steps"] if "coalesce" in s]

    def fresh():
        t = create(impl, vector)
        for cap in caps:
            t.coalesce(cap)
        return t

    per_item = fresh()
    expected = b"".join(per_item.encode(item) for item in inputs)
    batched = fresh()
    assert batched.encode_many(inputs) == expected
    assert batched.encode_many([]) == b""
    # Any iterable is a batch: a tuple and a generator give the same bytes.
    assert fresh().encode_many(tuple(inputs)) == expected
    assert fresh().encode_many(item for item in inputs) == expected
    assert (batched.dropped, batched.ignored, batched.finished) == (
        per_item.dropped,
        per_item.ignored,
        per_item.finished,
    )


@pytest.mark.parametrize("path", vector_params())
def test_vector_encode_sse_of_events(impl, path):
    """encode_sse of the expected events gives the same frames (without event ids)."""
    vector = load(path)
    assert impl.encode_sse(vector["events"]) == without_ids(vector["sse"]).encode("utf-8")


def without_ids(sse: str) -> str:
    return re.sub(r"^id: [0-9]+\n", "", sse, flags=re.MULTILINE)


def test_sse_framing_of_every_vector():
    """Sections 2 and 7: one data line per event, LF only, no \\u escapes of non-ASCII;
    with event ids, an ``id: n`` line first, n counting from first_id."""
    for path in VECTOR_FILES:
        vector = load(path)
        create = vector.get("create", {})
        frames = vector["sse"].split("\n\n")
        assert frames[-1] == ""
        assert len(frames) - 1 == len(vector["events"]), path.stem
        for n, (frame, event) in enumerate(
            zip(frames, vector["events"], strict=False), start=create.get("first_id", 1)
        ):
            if create.get("event_ids"):
                line = f"id: {n}\n"
                assert frame.startswith(line), path.stem
                frame = frame[len(line) :]
            assert frame.startswith("data: "), path.stem
            assert "\n" not in frame and "\r" not in frame, path.stem
            assert json.loads(frame[len("data: ") :]) == event, path.stem
            # Rule 8: absent optionals are omitted, never null.
            assert None not in event.values(), path.stem


@pytest.mark.parametrize("path", vector_params())
def test_vector_streams_are_valid_agui(path):
    """Every expected stream passes ag-ui-validate and parses as ag-ui-protocol 1.0 events.

    AGUI204 (streamed arguments join into JSON) is off: that content is the
    agent's (contract section 1), and one vector streams a truncated object on
    purpose to show the closers.
    """
    from ag_ui.core import Event
    from ag_ui_validate.pytest_plugin import validate_agui
    from pydantic import TypeAdapter

    vector = load(path)
    events = vector["events"]
    assert events[0]["type"] == "RUN_STARTED"
    assert vector["finished"], "every vector ends its run"
    report = validate_agui(events, severity_overrides={"AGUI204": "off"})
    bad = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    assert not bad, "\n".join(f"{d.rule} {d.severity}: {d.message}" for d in bad)
    adapter = TypeAdapter(Event)
    for event in events:
        model = adapter.validate_python(event)
        assert not model.model_extra, event
        assert json.loads(model.model_dump_json(by_alias=True)) == event


# ---- framing rules a fixed vector cannot pin: generated run ids, the public selector ----

HEX32 = re.compile(r"^[0-9a-f]{32}$")


def test_ids_not_given_at_creation_are_uuid4_hex(impl):
    for create_fn in (impl.create_agui_transformer, impl.create_agui_translator):
        t = create_fn()
        (started,) = t.finish()[:1]
        assert started["type"] == "RUN_STARTED"
        assert HEX32.match(started["threadId"]) and HEX32.match(started["runId"])
        assert started["threadId"] != started["runId"]
        other = create_fn().finish()[0]
        assert other["runId"] != started["runId"]


def test_generated_run_id_prefixes_generated_ids(impl):
    t = impl.create_agui_transformer(thread_id="t1")
    started, opened, _ = t({"type": "text:delta", "delta": "x"})
    assert started["threadId"] == "t1"
    assert opened["messageId"] == started["runId"] + ":m1"


def test_run_start_without_ids_on_an_id_less_transformer(impl):
    t = impl.create_agui_transformer()
    (started,) = t({"type": "agent:run:start", "sessionId": "s"})
    assert started["threadId"] == "s"
    assert HEX32.match(started["runId"])


def test_implementation_flag_and_pure_override():
    import os
    import subprocess
    import sys

    code = "import agui_bridge; print(agui_bridge.IMPLEMENTATION)"
    source = str(Path(__file__).resolve().parent.parent / "python")
    path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "AGUI_BRIDGE_PURE": "1", "PYTHONPATH": path}
    forced = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert forced.stdout.strip() == "python"
    env.pop("AGUI_BRIDGE_PURE")
    default = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    try:
        import agui_bridge._native  # noqa: F401
    except ModuleNotFoundError:
        expected = "python"
    else:
        expected = "rust"
    assert default.stdout.strip() == expected
