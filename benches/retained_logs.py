"""What a run's log book-keeping costs with many finished runs kept for resumes.

    python benches/retained_logs.py

A worker keeps every finished run's log for ``Limits.run_retention`` (600 s by
default): at 10 runs/s that is 6,000 logs. Each run creates its log, is looked
up at least once and ends; each of those checks retention. Prints µs per run
(create, get, end) with 0, 1,000, 10,000 and 50,000 finished logs held.
"""

from __future__ import annotations

import time

from agui_bridge.runs import Limits
from agui_bridge.runs.log import Logs


def one_run(logs: Logs, n: int) -> None:
    log = logs.create(f"t{n}", "r")
    logs.get(f"t{n}", "r")
    log.end()
    logs.ended(log)


def per_run(held: int, runs: int = 2_000) -> float:
    logs = Logs(Limits())
    for n in range(held):
        one_run(logs, n)
    assert len(logs.finished) == held
    start = time.perf_counter()
    for n in range(held, held + runs):
        one_run(logs, n)
    return (time.perf_counter() - start) / runs * 1e6


def main() -> None:
    print("| finished logs held | µs per run (create, get, end) |")
    print("|---:|---:|")
    for held in (0, 1_000, 10_000, 50_000):
        print(f"| {held:,} | {min(per_run(held) for _ in range(3)):.2f} |")


if __name__ == "__main__":
    main()
