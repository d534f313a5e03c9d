"""Where a granian worker's time goes while it streams (issue 23).

``python benches/server_profile.py`` (``make bench-profile``).

One granian worker serves ``benches/bench_app.py`` (the App on a memory
store, event ids on) as in ``benches/server.py``; the same load client runs
``--rounds`` rounds of ``--streams`` streams of 10,000 deltas. Meanwhile:

- the CPU time of each of the worker's threads, from ``/proc`` (the Python
  thread runs the app and the event loop; granian's Rust threads do the
  socket I/O), over the events the client received;
- ``py-spy record --nonblocking`` samples the Python thread's stacks, and
  each sample goes to the part of the server its innermost known frame
  belongs to (native code called from Python counts for its caller):

  agent        the agent's own code (``bench_agent``)
  run loop     ``Run._drive``: ``Run._pull``, whose ``t.drive`` steps the
               agent's generator and maps its items in native code (so the
               mapping of the text deltas counts here: py-spy sees no frame
               inside it), ``follow``; ``Run._iterate``'s ``async for`` and
               hot-path check (runs with listeners or coalescing); the
               queueing (``_publish``, ``flush``)
  transformer  encoding the frames outside ``drive`` (``_encode_items``:
               ``encode_many``; ``_apply``: the other items)
  log          ``runs/log.py``: append, read, waking the readers
  cursor       ``runs/cursor.py`` but its writes: the reader's loop
  writes       handing the bytes to granian (``RsgiConn.send``)
  per run      the request, the gate, the run's start and end, the save
  event loop   asyncio/uvloop and granian's glue with no frame of ours

py-spy attaches with ptrace (root, or ``kernel.yama.ptrace_scope`` 0). Its
sampling slows the worker a little; the shares, not the rates, are the
figure. Prints a markdown table (and ``--out FILE`` writes it).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server import granian_server, run_streams  # noqa: E402

# (category, what identifies its frames: "file:function" suffixes or files)
PARTS = [
    ("agent", ("bench_app.py:bench_agent",)),
    ("transformer", ("run.py:Run._encode_items", "run.py:Run._apply", "run.py:Run.begin")),
    ("log", ("runs/log.py:",)),
    ("writes", ("ingress/rsgi.py:RsgiConn.send", "runs/cursor.py:_send")),
    ("cursor", ("runs/cursor.py:",)),
    (
        "run loop",
        (
            "run.py:Run._drive",
            "run.py:Run._pull",
            "run.py:Run._iterate",
            "run.py:Run._publish",
            "run.py:Run.flush",
            "runs/resume.py:",
        ),
    ),
    (
        "per run",
        (
            "agui_bridge/",  # anything else of ours: the request, the gate, the end, the save
        ),
    ),
]
ORDER = [name for name, _ in PARTS] + ["event loop"]


def classify(stack: list[str]) -> str:
    """The part of the innermost frame of ours (``stack``: outermost first)."""
    for frame in reversed(stack):
        for name, marks in PARTS:
            if any(mark in frame for mark in marks):
                return name
    return "event loop"


def _frame_key(frame: str) -> str:
    # py-spy's raw format: "function (path/file.py:line)"
    name, _, where = frame.rpartition(" (")
    path = where.rsplit(":", 1)[0]
    return f"{path}:{name}"


def read_samples(path: Path) -> collections.Counter:
    parts: collections.Counter = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_frame_key(f) for f in stack.split(";")]
        if not any("granian/server/mp.py" in f for f in frames):
            continue  # another thread than the worker's Python one
        parts[classify(frames)] += int(count)
    return parts


def thread_cpu(pid: int) -> dict[int, float]:
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(task)] = (int(fields[11]) + int(fields[12])) / tick
    return out


async def load(port: int, streams: int, rounds: int) -> int:
    frames = 0
    for _ in range(rounds):
        result = await run_streams(port, streams, 10_000, 0.0, timeout=300)
        if result["complete"] != streams:
            raise RuntimeError("a stream was incomplete")
        frames += result["frames"]
    return frames


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="keep py-spy's samples (collapsed stacks) here")
    parser.add_argument(
        "--checkout", type=Path, help="serve another checkout (built) than this one: a before"
    )
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("py-spy is missing: pip install -r requirements-dev.txt", file=sys.stderr)
        return 2
    import uvloop

    server = granian_server("agui-bridge+granian", {})
    if args.checkout is not None:
        server.root = args.checkout.resolve()
    server.start()
    try:
        uvloop.run(load(server.port, 4, 1))  # warm up
        loadavg = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as scratch:
            raw = Path(scratch) / "samples.txt"
            record = ["record", "--nonblocking", "-r", str(args.rate), "-f", "raw", "-o", str(raw)]
            sampler = subprocess.Popen(
                [spy, *record, "-p", str(server.worker)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # attached
            before = thread_cpu(server.worker)
            started = time.perf_counter()
            frames = uvloop.run(load(server.port, args.streams, args.rounds))
            wall = time.perf_counter() - started
            after = thread_cpu(server.worker)
            sampler.send_signal(signal.SIGINT)
            sampler.wait(60)
            parts = read_samples(raw)
            if args.raw:
                shutil.copyfile(raw, args.raw)
    finally:
        server.stop()
    main_thread = server.worker  # the Python thread's id is the process id
    python_cpu = after[main_thread] - before.get(main_thread, 0.0)
    rust_cpu = sum(after[t] - before.get(t, 0.0) for t in after if t != main_thread)
    total = sum(parts.values()) or 1
    per_event = python_cpu / frames * 1e6
    command = " ".join(["python", "benches/server_profile.py", *sys.argv[1:]])
    lines = [
        f"Command: `{command}`; load average {loadavg:.1f} at the start; "
        f"{args.rounds} rounds of {args.streams} streams x 10,000 deltas, "
        f"{frames:,} events in {wall:.1f} s ({frames / wall:,.0f} events/s while sampled).",
        "",
        f"Worker CPU per event: Python thread {per_event:.2f} µs, granian's Rust threads "
        f"{rust_cpu / frames * 1e6:.2f} µs ({rust_cpu / max(python_cpu, 1e-9):.0%} of the "
        f"Python thread's). {total:,} samples of the Python thread:",
        "",
        "| part | share of the Python thread | µs per event |",
        "|---|---:|---:|",
    ]
    for name in ORDER:
        share = parts.get(name, 0) / total
        lines.append(f"| {name} | {share:.1%} | {share * per_event:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
