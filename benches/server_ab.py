"""Two checkouts' servers side by side: did a change cost the server speed?

``python benches/server_ab.py --checkout before=DIR --checkout after=DIR``
serves ``benches/bench_app.py`` from each checkout (its ``python/`` and its
``benches/``; each needs its own built extension in ``python/agui_bridge``,
e.g. a copy of the other's when the Rust code is the same) on granian as
``benches/server.py`` does, and runs the same load client against each in
turn, round by round: ``--streams`` streams of ``--deltas`` deltas (10,000),
the agent sleeping ``--interval`` seconds before each (0: never awaiting; a
tiny interval is a paced stream, an await per token). Per checkout: the
worker's CPU time (all its threads, ``/proc`` schedstat) per event received,
which a loaded machine moves much less than the rates, and the median rate.
Both sides need a release build: a debug one costs twice the CPU. ``--pure``
serves the pure build (``AGUI_BRIDGE_PURE=1``) from both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import server as bench  # noqa: E402


async def measure(
    servers: dict, streams: int, rounds: int, deltas: int = 10_000, interval: float = 0.0
) -> dict:
    out = {label: {"cpu": 0.0, "events": 0, "rates": []} for label in servers}
    for server in servers.values():  # warm up
        await bench.run_streams(server.port, 4, 2000, interval, timeout=120)
    for _ in range(rounds):
        for label, server in servers.items():
            before = bench.worker_cpu(server.worker)
            result = await bench.run_streams(server.port, streams, deltas, interval, timeout=300)
            if result["complete"] != streams:
                raise RuntimeError(f"{label}: a stream was incomplete")
            out[label]["cpu"] += bench.worker_cpu(server.worker) - before
            out[label]["events"] += result["frames"]
            out[label]["rates"].append(result["events_per_s"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", required=True, help="LABEL=DIR")
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=10_000)
    # The agent sleeps this long before each delta (an await per token, as a
    # model stream paces it): 0, no await at all.
    parser.add_argument("--interval", type=float, default=0.0)
    parser.add_argument("--pure", action="store_true", help="serve the pure build")
    args = parser.parse_args()
    wanted = [spec.split("=", 1) for spec in args.checkout]
    if len(wanted) < 2 or any(len(pair) != 2 for pair in wanted):
        sys.exit("give at least two --checkout LABEL=DIR")
    import uvloop

    servers = {}
    try:
        for label, root in wanted:
            server = bench.granian_server(label, {"AGUI_BRIDGE_PURE": "1"} if args.pure else {})
            server.root = Path(root).resolve()  # it runs from, and imports, this checkout
            server.start()
            servers[label] = server
        load = os.getloadavg()[0]
        got = uvloop.run(measure(servers, args.streams, args.rounds, args.deltas, args.interval))
    finally:
        for server in servers.values():
            server.stop()
    paced = f", {args.interval:g} s before each" if args.interval else ""
    print(
        f"load average {load:.1f}; {args.rounds} rounds of {args.streams} x "
        f"{args.deltas:,} deltas{paced}"
    )
    print("| checkout | worker CPU per event | median events/s |\n|---|---:|---:|")
    for label, side in got.items():
        per_event = side["cpu"] / side["events"] * 1e6
        print(f"| {label} | {per_event:.2f} µs | {statistics.median(side['rates']):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
