"""Memory of streams whose clients never read (issue 9, item 15).

    python benches/stalled.py                 # 1,000 streams, RSGI then ASGI
    python benches/stalled.py --streams 200

One granian worker serves ``benches/bench_app.py`` (``agui_bridge.App`` on a
memory store, default limits). N raw connections each POST a run of
``--deltas`` text deltas (each stream's output is several times the per-stream
bound) with a 4 KiB receive buffer, then never read. The worker's ``VmRSS``
is sampled every 50 ms from before the first request until every run has
ended and RSS has been flat for 3 s; the figure is the peak minus the idle
RSS. Target: 1,000 such streams keep the worker under 1 GiB. Closing the
sockets ends the phase. Loopback only; the machine is shared, so the wall
times vary.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches.server import granian_server, rss_kib  # noqa: E402


def request(port: int, deltas: int) -> bytes:
    body = json.dumps(
        {
            "threadId": f"stall-{uuid.uuid4().hex[:12]}",
            "runId": uuid.uuid4().hex,
            "state": {},
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "go"}],
            "tools": [],
            "context": [],
            "forwardedProps": {"deltas": deltas, "interval": 0},
        }
    ).encode()
    head = (
        f"POST /ag-ui/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def one(interface: str, streams: int, deltas: int, settle: float) -> dict:
    server = granian_server(f"agui-bridge ({interface})", {}, interface)
    server.start()
    sockets = []
    try:
        time.sleep(1.0)
        idle = rss_kib(server.worker)
        peak = idle
        start = time.monotonic()
        for _ in range(streams):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", server.port))
            sock.sendall(request(server.port, deltas))
            sockets.append(sock)
            peak = max(peak, rss_kib(server.worker))
        flat_since, last = time.monotonic(), peak
        while time.monotonic() - flat_since < settle and time.monotonic() - start < 600:
            time.sleep(0.05)
            now = rss_kib(server.worker)
            peak = max(peak, now)
            if abs(now - last) > 1024:
                flat_since, last = time.monotonic(), now
        elapsed = time.monotonic() - start
        held = rss_kib(server.worker)
    finally:
        for sock in sockets:
            sock.close()
        server.stop()
    return {
        "interface": interface,
        "streams": streams,
        "deltas": deltas,
        "idle_mib": idle / 1024,
        "peak_mib": peak / 1024,
        "held_mib": held / 1024,
        "kib_per_stream": (peak - idle) / streams,
        "seconds": elapsed,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--deltas", type=int, default=5000)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--interfaces", default="rsgi,asgi")
    args = ap.parse_args(argv)
    rows = [one(i, args.streams, args.deltas, args.settle) for i in args.interfaces.split(",")]
    print("| interface | streams | deltas each | idle MiB | peak MiB | KiB per stream | s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['interface']} | {r['streams']} | {r['deltas']} | {r['idle_mib']:.0f} |"
            f" {r['peak_mib']:.0f} | {r['kib_per_stream']:.0f} | {r['seconds']:.1f} |"
        )
    return 0 if all(r["peak_mib"] < 1024 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
