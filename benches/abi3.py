"""abi3 against the version-specific build, side by side in one process (issue 15).

``python benches/abi3.py --abi3 WHEEL --specific WHEEL`` loads the extension of
each wheel (``make bench-abi3`` builds both, as ``make dist`` does) under its
own module name and times the runs of ``benches/transformer.py`` through both,
interleaved round by round: per item ``__call__`` (events as dicts), per item
``encode`` (SSE bytes) and ``encode_many``. Every path must produce the bytes
of the pure build before anything is timed. The verdict line compares abi3 to
the version-specific build per item; more than 10 % slower is reported as a
cost, not a failure (the figures decide which wheel ships).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.machinery
import importlib.util
import platform
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import transformer as bench
from agui_bridge import pure  # the checkout's python/: transformer put it first

BUDGET = 1.10


def load_extension(wheel: Path, label: str, into: Path):
    """The wheel's ``agui_bridge/_native*.so`` imported as ``<label>._native``."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.startswith("agui_bridge/_native")]
        names = [n for n in names if n.endswith(".so")]
        if len(names) != 1:
            sys.exit(f"{wheel.name}: expected one agui_bridge/_native*.so, found {names}")
        target = into / label / Path(names[0]).name
        target.parent.mkdir(parents=True)
        target.write_bytes(archive.read(names[0]))
    # The init symbol is PyInit__native: the name's last part must stay `_native`.
    name = f"{label}._native"
    loader = importlib.machinery.ExtensionFileLoader(name, str(target))
    spec = importlib.util.spec_from_file_location(name, target, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if module.IMPLEMENTATION != "rust":
        sys.exit(f"{wheel.name}: not the rust build")
    return module


def modes_for(dialect: str, items: list, builds: dict) -> dict:
    def create(impl):
        if dialect == "crumbs":
            return impl.create_agui_transformer(bench.THREAD, bench.RUN)
        if dialect == "events":
            return impl.create_agui_repairer(bench.THREAD, bench.RUN)
        return impl.create_agui_translator(bench.THREAD, bench.RUN)

    reference = create(pure)
    expected_events = [reference(item) for item in items]
    expected = pure.encode_sse([e for events in expected_events for e in events])
    modes = {}
    for label, native in builds.items():
        t = create(native)
        if [t(item) for item in items] != expected_events:
            sys.exit(f"{dialect}: {label} events differ from the pure build; not measuring")
        encode = create(native).encode
        if b"".join([encode(item) for item in items]) != expected:
            sys.exit(f"{dialect}: {label} encode differs from the pure build; not measuring")
        if create(native).encode_many(items) != expected:
            sys.exit(f"{dialect}: {label} encode_many differs from the pure build; not measuring")

        def call(native=native):
            step = create(native)
            for item in items:
                step(item)

        def per_item(native=native):
            encode = create(native).encode
            for item in items:
                encode(item)

        modes[f"{label} __call__"] = call
        modes[f"{label} encode"] = per_item
        modes[f"{label} encode_many"] = lambda native=native: create(native).encode_many(items)
    return modes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abi3", type=Path, required=True, help="the cp311-abi3 wheel")
    parser.add_argument("--specific", type=Path, required=True, help="the cp311-cp311 wheel")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    if "-abi3-" not in args.abi3.name or "-abi3-" in args.specific.name:
        sys.exit("--abi3 takes the abi3 wheel, --specific the version-specific one")

    with tempfile.TemporaryDirectory() as scratch:
        builds = {
            "abi3": load_extension(args.abi3, "bench_abi3", Path(scratch)),
            "specific": load_extension(args.specific, "bench_specific", Path(scratch)),
        }
        lines = [
            f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
            "Command: python benches/abi3.py --abi3 ABI3_WHEEL --specific CP311_WHEEL"
            f" --rounds {args.rounds}",
            f"Machine: {platform.machine()}, Python {platform.python_version()}",
            f"Wheels: {args.abi3.name}, {args.specific.name}",
            "",
        ]
        worst = 0.0
        for dialect, items in (("crumbs", bench.crumbs_run()), ("chunks", bench.chunks_run())):
            medians = bench.measure(modes_for(dialect, items, builds), args.rounds)
            lines += [
                f"### {dialect}: {len(items)} items, median of {args.rounds} rounds",
                "",
                "| path | abi3 ns/item | cp311 ns/item | abi3 / cp311 |",
                "|---|---:|---:|---:|",
            ]
            for path in ("__call__", "encode", "encode_many"):
                a = medians[f"abi3 {path}"] / len(items)
                s = medians[f"specific {path}"] / len(items)
                worst = max(worst, a / s)
                lines.append(f"| {path} | {a:,.0f} | {s:,.0f} | {a / s:.3f} |")
            lines.append("")
        verdict = "within" if worst <= BUDGET else "OVER"
        lines.append(
            f"abi3 costs at most {(worst - 1) * 100:+.1f} % per item: {verdict} the 10 % budget"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
