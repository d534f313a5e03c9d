"""``make bench``'s table: every headline figure with its target and PASS/FAIL.

Runs the benchmarks that hold issue 23's targets (the transformer's,
coalescing's and the server's), each writing its rows as JSON (``--json``),
and prints them as one table, each with the load average at its start (a
shared machine: only ratios measured side by side count). ``--no-server``
leaves out ``benches/server.py`` (minutes); ``--quick`` runs fewer rounds.
The snapshot's recording is measured against a build without it (cargo
feature ``record`` off): both made here by ``maturin build --release`` (with
and without ``--no-default-features``), each in its own target dir (minutes
the first time), side by side in ``benches/builds.py``;
``--no-recording`` leaves it out. Exits non-zero when a target fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _release_module(scratch: Path, label: str, features: list[str]) -> Path | str:
    """The extension module of ``maturin build --release`` (plus ``features``),
    in its own target dir; or why it could not be made."""
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / label)}
    wheels = scratch / label
    maturin = [sys.executable, "-m", "maturin", "build", "--release", *features]
    built = subprocess.run([*maturin, "-q", "-o", str(wheels)], cwd=ROOT, env=env)
    found = sorted(wheels.glob("*.whl")) if built.returncode == 0 else []
    if not found:
        return f"maturin build --release {' '.join(features)} failed (exit {built.returncode})"
    with zipfile.ZipFile(found[-1]) as wheel:
        names = wheel.namelist()
        name = next(n for n in names if Path(n).name.startswith("_native") and n.endswith(".so"))
        target = scratch / label / Path(name).name
        target.write_bytes(wheel.read(name))
    return target


def without_recording(scratch: Path) -> list[str] | str:
    """builds.py's arguments: a build with the recording against one without
    it, both made by the same command (the installed module may come from
    another: `make test` installs the manylinux wheel's, built with zig, and a
    difference between two build commands is not the recording's); or why not."""
    import agui_bridge

    if agui_bridge.IMPLEMENTATION != "rust":
        return "no native build installed"
    record = _release_module(scratch, "with-recording", [])
    if isinstance(record, str):
        return record
    bare = _release_module(scratch, "without-recording", ["--no-default-features"])
    if isinstance(bare, str):
        return bare
    return ["--build", f"record={record}", "--build", f"without_recording={bare}"]


def benches(quick: bool, server: bool, recording) -> list[tuple[str, list[str]]]:
    """Each bench with its arguments; all but the server's report ratios of runs
    taken side by side in one process or at the same time."""
    rounds = "10" if quick else "40"
    out = [("transformer.py", ["--rounds", rounds])]
    if isinstance(recording, list):
        out.append(("builds.py", [*recording, "--rounds", rounds]))
    out += [
        ("coalesce.py", ["--tokens", "400" if quick else "1000", "--streams", "4"]),
    ]
    if server:
        # Its report goes to scratch: benches/results/server.md keeps the full run's.
        # Seven turns each: the peer's rate swings most (one CPU-bound thread);
        # medians of three moved far from run to run (RESULTS.md).
        repeats = "3" if quick else "7"
        out.append(("server.py", ["--skip-slow", "--no-pure", "--repeats", repeats, "--out", "-"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-server", action="store_true", help="leave out benches/server.py")
    parser.add_argument("--no-recording", action="store_true", help="leave out builds.py")
    args = parser.parse_args()
    rows, failed_runs = [], []
    with tempfile.TemporaryDirectory() as scratch:
        recording = None if args.no_recording else without_recording(Path(scratch))
        if isinstance(recording, str):
            failed_runs.append(f"snapshot recording: {recording}")
        for script, argv in benches(args.quick, not args.no_server, recording):
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
        verdict = "information" if not row["target"] else "PASS" if row["pass"] else "FAIL"
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
