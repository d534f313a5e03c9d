"""Instructions per item of the native fast paths, counted by valgrind: exact figures.

``python benches/instructions.py [--build LABEL=PATH.so ...] [--runs N]``
runs each build's ``encode_many`` and per-item ``encode`` over the runs of
``benches/transformer.py`` (each dialect, the items rebuilt by its
``as_received``) under ``valgrind --tool=callgrind``, counting only inside
the method (``--toggle-collect``), and prints instructions per item, with the
functions that execute the most of them. Without ``--build`` it counts the
checkout's own module (``make build`` first: a release build).

Time on this machine swings by more than the few per cent a change to these
paths makes (``benches/RESULTS.md``, issue 23): an instruction count is exact,
so it tells whether a change removed work at all. It is not time (a
mispredicted branch or a cache miss costs many instructions' worth), so a
change that counts fewer must still be timed, side by side
(``benches/builds.py``). Needs ``valgrind`` (Debian's package).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import transformer as bench

DIALECTS = {
    "crumbs": ("create_agui_transformer", bench.crumbs_run),
    "chunks": ("create_agui_translator", bench.chunks_run),
    "events": ("create_agui_repairer", bench.events_run),
}
METHODS = {"encode_many": "*__pymethod_encode_many__*", "encode": "*__pymethod_encode__*"}


def child(path: str, dialect: str, method: str, runs: int) -> None:
    """Runs ``method`` ``runs`` times over the dialect's run: what valgrind counts."""
    import builds  # imported here: the parent process needs no extension loaded

    with tempfile.TemporaryDirectory() as scratch:
        native = builds.load(Path(path), "counted", Path(scratch))
        factory, run = DIALECTS[dialect]
        items = bench.as_received(run())
        create = getattr(native, factory)
        for _ in range(runs):
            t = create(bench.THREAD, bench.RUN)
            if method == "encode_many":
                t.encode_many(items)
            else:
                encode = t.encode
                for item in items:
                    encode(item)


def count(path: str, dialect: str, method: str, runs: int) -> tuple[float, list[tuple[float, str]]]:
    """Instructions per item, and the functions that ran the most of them (per item)."""
    items = len(DIALECTS[dialect][1]())
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--toggle-collect={METHODS[method]}",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--child",
                path,
                dialect,
                method,
                str(runs),
            ],
            check=True,
            capture_output=True,
        )
        annotated = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", str(out)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    per_item = runs * items
    total = re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", annotated, re.M)
    if total is None:
        sys.exit(f"no total in callgrind_annotate's output for {path}")
    top = []
    for line in annotated.splitlines():
        found = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$", line)
        if found and "PROGRAM TOTALS" not in line and len(top) < 8:
            function = found.group(2).split(":", 1)[-1].split(" [")[0]
            top.append((int(found.group(1).replace(",", "")) / per_item, function))
    return int(total.group(1).replace(",", "")) / per_item, top


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        path, dialect, method, runs = sys.argv[2:6]
        child(path, dialect, method, int(runs))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", help="LABEL=PATH.so (default: the checkout's)")
    parser.add_argument("--runs", type=int, default=50, help="runs of each dialect per count")
    parser.add_argument("--dialect", action="append", choices=list(DIALECTS))
    parser.add_argument("--top", action="store_true", help="also list the costliest functions")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    if args.build:
        builds = [spec.split("=", 1) for spec in args.build]
        if any(len(pair) != 2 for pair in builds):
            sys.exit("--build takes LABEL=PATH.so")
    else:
        native, _ = bench.load_native(allow_missing=False)
        builds = [("checkout", native.__file__)]
    dialects = args.dialect or list(DIALECTS)
    print(f"Command: python benches/instructions.py --runs {args.runs}", end="")
    print("".join(f" --build {label}=..." for label, _ in builds) if args.build else "")
    print()
    print("| dialect | path | " + " | ".join(label for label, _ in builds) + " |")
    print("|---|---|" + "---:|" * len(builds))
    tops = []
    for dialect in dialects:
        for method in METHODS:
            counts = []
            for label, path in builds:
                per_item, top = count(path, dialect, method, args.runs)
                counts.append(f"{per_item:,.0f}")
                tops.append((label, dialect, method, top))
            print(f"| {dialect} | {method} | " + " | ".join(counts) + " |")
    if args.top:
        for label, dialect, method, top in tops:
            print(f"\n{label}, {dialect} {method}: instructions per item by function")
            for per_item, function in top:
                print(f"  {per_item:7.1f}  {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
