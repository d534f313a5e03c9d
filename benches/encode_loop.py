"""The fastest native path in a warm loop: ns per crumb text delta in ``encode_many``.

    python benches/encode_loop.py                     # the installed build, ids off and on
    python benches/encode_loop.py --build A=DIR --build B=DIR [--turns 3]

One transformer per loop, ``encode_many`` of 10,000 ``crumbs.text_delta("token ")``,
the minimum of 300 loops: the steadiest figure found on this machine for a few
nanoseconds per item (the bench's interleaved rounds move more than that).
``--build LABEL=DIR`` runs the package found in DIR (a directory holding an
``agui_bridge`` with its own ``_native`` module) instead, each build in its own
process, taking turns; e.g. the two modules ``make bench`` builds with and
without the snapshot's recording.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

LOOP = """
import sys, time
sys.path.insert(0, {path!r})
from agui_bridge import IMPLEMENTATION, create_agui_transformer, crumbs
assert IMPLEMENTATION == "rust", IMPLEMENTATION
items = [crumbs.text_delta("token ")] * 10_000
best = float("inf")
for _ in range(300):
    t = create_agui_transformer("t", "r", event_ids={ids})
    start = time.perf_counter()
    t.encode_many(items)
    best = min(best, time.perf_counter() - start)
print(best / len(items) * 1e9)
"""


def per_delta(path: str, ids: bool) -> float:
    code = LOOP.format(path=path, ids=ids)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", default=[], help="LABEL=DIR")
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    import agui_bridge

    installed = str(__import__("pathlib").Path(agui_bridge.__file__).parent.parent)
    builds = [b.split("=", 1) for b in args.build] or [["installed", installed]]
    print("| build | event ids | ns per delta, each turn |")
    print("|---|---|---|")
    rows: dict = {}
    for _ in range(args.turns):
        for label, path in builds:
            for ids in (False, True):
                rows.setdefault((label, ids), []).append(per_delta(path, ids))
    for (label, ids), values in rows.items():
        print(f"| {label} | {'on' if ids else 'off'} | {' / '.join(f'{v:.1f}' for v in values)} |")


if __name__ == "__main__":
    main()
