"""What late joiners of a large run cost the worker (issue 24 item 2), on a
real granian worker (ASGI, what ``agui-bridge serve`` runs).

A joiner's prelude (RUN_STARTED, MESSAGES_SNAPSHOT with the run's progress,
STATE_SNAPSHOT, the re-opened STARTs) was built for each reader and handed to
the server in one write: 10 joiners of a 50 MB run that never read added
~1 GiB until send_timeout. It is built once per run position, shared by the
readers that join there, and written ``max_write`` bytes at a time like the
log, so a reader that stops reading pins one write, not a copy of the run.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx

from tests.ingress_apps import parse_sse, run_body
from tests.servers import serve, worker_pids

MIB = 1 << 20


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def wait_for(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def stalled_join(port: int, path: str) -> socket.socket:
    """A GET of a stream by a client that never reads its response."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
    return sock


def test_ten_stalled_joiners_of_a_50_mb_run_add_at_most_100_mib(tmp_path):
    env = {
        "AGUI_TEST_MARKS": str(tmp_path),
        "AGUI_TEST_KEEPALIVE": "5",
        "AGUI_TEST_SEND_TIMEOUT": "60",  # the joiners stay (stalled) while measured
        "AGUI_TEST_MAX_TOTAL_BYTES": str(512 * MIB),
        # The whole run stays in the log: the source reader (a thread of this
        # loaded process) may fall 16 MiB behind, and a reader behind a trimmed
        # log is cut to resume by id, which this reader does not do.
        "AGUI_TEST_MAX_LOG_BYTES": str(64 * MIB),
    }
    tid, rid = f"join-mem-{time.monotonic_ns()}", f"r-{time.monotonic_ns()}"
    source: dict = {}
    with serve("tests.ingress_apps:app", env=env, interface="asgi") as url:
        port = int(url.rsplit(":", 1)[1])
        (worker,) = worker_pids(url)

        def read():
            body = run_body(tid, f"big {50 * 1024} gate-{rid}", run_id=rid)
            with httpx.stream("POST", url + "/ag-ui/run", json=body, timeout=120) as response:
                source["raw"] = b"".join(response.iter_bytes())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        joiners: list[socket.socket] = []
        try:
            wait_for(tmp_path / f"wrote-{rid}", 60)
            time.sleep(1.0)
            base = rss_of(worker)
            peak = base
            for _ in range(10):
                joiners.append(stalled_join(port, f"/threads/{tid}/events"))
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:  # every prelude built and handed over
                peak = max(peak, rss_of(worker))
                time.sleep(0.1)
            added, peak_added = rss_of(worker) - base, peak - base
        finally:
            for sock in joiners:
                sock.close()
            (tmp_path / f"gate-{rid}").write_text("1")
        reader.join(60)
        # a joiner that reads gets the whole run (the prelude still says it all)
        late = httpx.get(f"{url}/threads/{tid}/runs/{rid}/events", timeout=60)
    figures = f"added {added / MIB:.0f} MiB (peak {peak_added / MIB:.0f} MiB)"
    print(f"10 stalled joiners of a 50 MB run: {figures}")
    assert added <= 100 * MIB, figures
    # while one prelude is built: the snapshot, its JSON, the frames
    assert peak_added <= 250 * MIB, figures
    events, _ = parse_sse(source["raw"].decode())
    assert events[-1]["type"] == "RUN_FINISHED"
    events, _ = parse_sse(late.text)
    assert events[-1]["type"] == "RUN_FINISHED"
    (snapshot,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert len(snapshot["messages"][-1]["content"]) == 50 * 1024 * 1024
