"""Metrics overhead: benches/bench_app.py with Prometheus metrics off and on, one run.

    python benches/metrics.py            # figures to stdout and benches/results/metrics.md
    python benches/metrics.py --quick    # smaller counts, nothing written

The same App, agent and load client as ``benches/server.py`` (its helpers), on
granian's ASGI interface (what ``agui-bridge serve`` runs), one worker each;
"on" is ``App(metrics=True)`` with a ``PROMETHEUS_MULTIPROC_DIR`` (as
``agui-bridge serve`` sets it), so the worker also writes its counts there
every second as in production. Also measured: the server worker's CPU time
per event (all its threads, /proc schedstat), steadier than events/s on a
loaded machine. The servers take
turns run by run. Figures: events/s of one 10,000-delta stream, of 16
concurrent ones, and of 256 concurrent short runs (5 deltas: where the
per-request and per-run counting weighs most), medians of the repeats.
Target: on >= 95 % of off for each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches.cpu_time import worker_cpu  # noqa: E402
from benches.server import granian_server, run_streams  # noqa: E402

RESULTS = ROOT / "benches" / "results" / "metrics.md"
PHASES = (("one 10k-delta stream", 1, 10_000), ("16 concurrent 10k-delta streams", 16, 10_000),
          ("256 concurrent 5-delta runs", 256, 5))  # fmt: skip


class Incomplete(Exception):
    pass


async def one(server, streams: int, deltas: int) -> tuple[float, float]:
    """(events/s, server CPU ns per event) of one load."""
    before = worker_cpu(server.worker)
    result = await run_streams(server.port, streams, deltas, 0.0, timeout=300)
    used = worker_cpu(server.worker) - before
    if result["complete"] != streams:
        raise Incomplete(f"{server.name}: {streams - result['complete']} runs incomplete")
    return result["events_per_s"], used * 1e9 / result["frames"]


async def measure(servers: dict, repeats: int, scale: float) -> dict:
    """Per load, ``repeats`` pairs: off then on, or on then off (alternately), back to back,
    so a burst of other load hits a pair alike; the ratios are taken pair by pair."""
    for server in servers.values():
        await run_streams(server.port, 4, 1000, 0.0, timeout=60)
        await run_streams(server.port, 64, 20, 0.0, timeout=60)
    out = {}
    redone = out["redone"] = []
    for name, streams, deltas in PHASES:
        deltas = max(5, int(deltas * scale)) if deltas > 5 else deltas
        rows = {"off": [], "on": [], "ratio": [], "cpu_off": [], "cpu_on": [], "cpu_ratio": []}
        for n in range(repeats):
            order = ("off", "on") if n % 2 == 0 else ("on", "off")
            for _attempt in range(3):
                try:
                    got = {key: await one(servers[key], streams, deltas) for key in order}
                    break
                except Incomplete as error:
                    # The loaded machine drops connections now and then (either
                    # server): the pair is measured again, and counted.
                    redone.append(f"{name}: {error}")
            else:
                raise RuntimeError(f"{name}: three attempts in a row were incomplete")
            rows["off"].append(got["off"][0])
            rows["on"].append(got["on"][0])
            rows["ratio"].append(got["on"][0] / got["off"][0])
            rows["cpu_off"].append(got["off"][1])
            rows["cpu_on"].append(got["on"][1])
            rows["cpu_ratio"].append(got["on"][1] / got["off"][1])
        out[name] = {k: statistics.median(v) for k, v in rows.items()}
        # The best of each (the least disturbed by other load on the machine).
        out[name]["best_off"], out[name]["best_on"] = max(rows["off"]), max(rows["on"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--same",
        action="store_true",
        help="calibration: both servers with metrics off (what the pairing alone shows)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    repeats, scale = (2, 0.2) if args.quick else (args.repeats, 1.0)
    folder = tempfile.mkdtemp(prefix="agui-bench-metrics-")
    servers = {
        "off": granian_server("metrics off", {"BENCH_METRICS": "0"}, "asgi"),
        "on": granian_server(
            "metrics on",
            {"BENCH_METRICS": "0" if args.same else "1", "PROMETHEUS_MULTIPROC_DIR": folder},
            "asgi",
        ),
    }
    for server in servers.values():
        server.start()
    try:
        out = asyncio.run(measure(servers, repeats, scale))
    finally:
        for server in servers.values():
            server.stop()
    lines = [
        "# Metrics overhead (benches/metrics.py)",
        "",
        f"`python benches/metrics.py`: {platform.machine()}, Python {platform.python_version()},"
        f" {repeats} pairs per load, the servers back to back in alternating order;"
        f" medians. Load average at the start: {os.getloadavg()[0]:.1f}.",
        "",
        "| load | events/s off | events/s on | on / off (median of pairs) | best off | best on"
        " | best on / off | server CPU ns/event off | on | on / off |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, _, _ in PHASES:
        r = out[name]
        lines.append(
            f"| {name} | {r['off']:,.0f} | {r['on']:,.0f} | {r['ratio']:.1%}"
            f" | {r['best_off']:,.0f} | {r['best_on']:,.0f} | {r['best_on'] / r['best_off']:.1%}"
            f" | {r['cpu_off']:,.0f} | {r['cpu_on']:,.0f} | {r['cpu_ratio']:.1%} |"
        )
    if out["redone"]:
        lines += ["", f"Pairs measured again (a load incomplete): {'; '.join(out['redone'])}."]
    lines += ["", "Commands:", ""]
    lines += [f"- {key}: `{shlex.join(s.argv[2:])}` ({s.env})" for key, s in servers.items()]
    text = "\n".join(lines).replace(folder, "$PROMETHEUS_MULTIPROC_DIR") + "\n"
    print(text)
    if args.same:
        text = text.replace("metrics on", "metrics off (again)")
    if not args.quick and not args.same:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
