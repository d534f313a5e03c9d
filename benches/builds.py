"""Two native builds side by side in one process: did a change cost speed?

``python benches/builds.py --build before=OLD.so --build after=NEW.so`` loads
each extension (a ``_native*.so``, e.g. one built from main with ``maturin
build --release`` and the checkout's own) under its own module name and times
the runs of ``benches/transformer.py`` through each, interleaved round by
round: per item ``__call__`` (events as dicts), per item ``encode`` and
``encode_many``. Every path must give the pure build's bytes first. On a
shared machine only the ratios mean much; run it more than once.

``--json FILE`` writes issue 23's recording target for ``make bench``
(benches/summary.py): each path of each dialect, the second build against
the first (``--build record=... --build without_recording=...``), ≤ 1.05x.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.machinery
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import abi3
import transformer as bench


def load(path: Path, label: str, into: Path):
    """The extension at ``path`` imported as ``<label>._native``."""
    target = into / label / path.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(path, target)
    name = f"{label}._native"
    loader = importlib.machinery.ExtensionFileLoader(name, str(target))
    spec = importlib.util.spec_from_file_location(name, target, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if module.IMPLEMENTATION != "rust":
        sys.exit(f"{path}: not the rust build")
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", required=True, help="LABEL=PATH.so")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--json", type=Path, help="the first build against the second, ≤ 1.05x")
    args = parser.parse_args()
    wanted = [spec.split("=", 1) for spec in args.build]
    if len(wanted) < 2 or any(len(pair) != 2 for pair in wanted):
        sys.exit("give at least two --build LABEL=PATH.so")
    with tempfile.TemporaryDirectory() as scratch:
        builds = {
            label: load(Path(path), f"bench_{at}", Path(scratch))
            for at, (label, path) in enumerate(wanted)
        }
        first = wanted[0][0]
        labels = list(builds)
        load_avg = os.getloadavg()[0]
        rows = []
        lines = [
            f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
            "Command: python benches/builds.py "
            + " ".join(f"--build {label}=..." for label in labels)
            + f" --rounds {args.rounds}",
            f"Machine: {platform.machine()}, Python {platform.python_version()}",
            "",
        ]
        # Every dialect of benches/transformer.py: the events one too.
        runs = (
            ("crumbs", bench.crumbs_run()),
            ("chunks", bench.chunks_run()),
            ("events", bench.events_run()),
        )
        for dialect, items in runs:
            medians = bench.measure(abi3.modes_for(dialect, items, builds), args.rounds)
            lines += [
                f"### {dialect}: {len(items)} items, median of {args.rounds} rounds",
                "",
                "| path | "
                + " | ".join(f"{label} ns/item" for label in labels)
                + " | "
                + " | ".join(f"{label} / {first}" for label in labels[1:])
                + " |",
                "|---|" + "---:|" * (2 * len(labels) - 1),
            ]
            for path in ("__call__", "encode", "encode_many"):
                ns = [medians[f"{label} {path}"] / len(items) for label in labels]
                ratios = [f"{n / ns[0]:.3f}" for n in ns[1:]]
                over = ns[0] / ns[1] - 1
                rows.append(
                    {
                        "figure": f"{labels[0]} over {labels[1]}: {dialect} {path}",
                        "value": f"{over:+.1%}",
                        "target": "≤ +5 %",
                        "pass": over <= 0.05,
                    }
                )
                cells = [f"{n:,.0f}" for n in ns] + ratios
                lines.append(f"| {path} | " + " | ".join(cells) + " |")
            lines.append("")
    print("\n".join(lines))
    if args.json:
        command = "python benches/builds.py " + " ".join(f"--build {x}=..." for x in labels)
        command += f" --rounds {args.rounds}"
        args.json.write_text(json.dumps({"command": command, "load": load_avg, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
