"""``make bench``'s table: every headline figure with its target and PASS/FAIL.

Runs the benchmarks that hold targets, each writing its rows as JSON
(``--json``), and prints them as one table, each with the load average at
its start (a shared machine: only ratios measured side by side count).
``--server`` adds ``benches/server.py`` (minutes); ``--quick`` runs fewer
rounds. Exits non-zero when a target fails.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benches(quick: bool, server: bool) -> list[tuple[str, list[str]]]:
    rounds = "10" if quick else "40"
    out = [
        ("transformer.py", ["--rounds", rounds]),
        ("coalesce.py", ["--tokens", "400" if quick else "2000", "--streams", "4"]),
    ]
    if server:
        out.append(("server.py", ["--skip-slow", "--no-pure", "--repeats", "3"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--server", action="store_true")
    args = parser.parse_args()
    rows, failed_runs = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for script, argv in benches(args.quick, args.server):
            out = Path(scratch) / f"{script}.json"
            done = subprocess.run([sys.executable, str(HERE / script), *argv, "--json", str(out)])
            if not out.exists():
                failed_runs.append(f"{script} (exit {done.returncode}, no figures)")
                continue
            report = json.loads(out.read_text(encoding="utf-8"))
            for row in report["rows"]:
                command = re.sub(r" --json \S+", "", report["command"])
                rows.append({**row, "load": report["load"], "command": command})
    print("\n## Headline figures (benches/summary.py)\n")
    print("| figure | value | target | result | load avg | command |")
    print("|---|---|---|---|---:|---|")
    for row in rows:
        verdict = "PASS" if row["pass"] else "FAIL"
        print(
            f"| {row['figure']} | {row['value']} | {row['target']} | {verdict} "
            f"| {row['load']:.1f} | `{row['command']}` |"
        )
    for failed in failed_runs:
        print(f"| {failed} | | | FAIL | | |")
    ok = not failed_runs and all(row["pass"] for row in rows)
    print("\nALL TARGETS PASS" if ok else "\nSOME TARGETS FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
