"""The built wheels, as a user gets them (``make test-wheel``, issue 15).

``python tests/wheel_smoke.py dist`` (the driver, from the dev venv) checks the
files ``make dist`` wrote: one abi3 wheel and one cp311 wheel, both
``manylinux_2_17`` by their names, their WHEEL tags and ``auditwheel show``,
and an sdist that carries the sources and no built module. Then it installs
each wheel into a fresh venv (binary packages only) and runs this file again
inside it, isolated (``python -I``, from an empty directory), with no Rust
toolchain on PATH. There it checks: nothing of the checkout on ``sys.path``,
the installed extension loaded (``IMPLEMENTATION == "rust"``), the version
everywhere, a transformer round trip, every golden vector byte for byte, and
``agui-bridge demo`` on a free 127.0.0.1 port answering one run over HTTP.

Not collected by pytest: it needs the wheels, which only ``make dist`` builds.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLCHAIN = ("cargo", "rustc", "maturin", "zig")
ARCH = platform.machine()
PLATFORM_TAGS = (f"manylinux2014_{ARCH}", f"manylinux_2_17_{ARCH}")
ABIS = {"abi3": "cp311-abi3", "specific": "cp311-cp311"}


class SmokeError(Exception):
    pass


def check(ok: bool, message: str) -> None:
    if not ok:
        raise SmokeError(message)


# ---- outside: the files in dist/, then a fresh venv per wheel ----


def cargo_version() -> str:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    return cargo["workspace"]["package"]["version"]


def wheel_tags(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/WHEEL")]
        text = archive.read(name).decode()
    return sorted(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Tag: "))


def check_audit(wheel: Path) -> None:
    auditwheel = Path(sys.executable).with_name("auditwheel")
    shown = subprocess.run(
        [str(auditwheel), "show", str(wheel)], capture_output=True, text=True, check=True
    ).stdout
    flat = " ".join(shown.split())
    check(
        f'consistent with the following platform tag: "manylinux_2_17_{ARCH}"' in flat,
        f"{wheel.name}: auditwheel does not find it manylinux_2_17:\n{shown}",
    )


def check_sdist(sdist: Path, version: str) -> None:
    top = f"agui_bridge-{version}/"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    needed = [
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "LICENSE",
        "README.md",
        "rust/core/Cargo.toml",
        "rust/core/src/lib.rs",
        "rust/py/Cargo.toml",
        "rust/py/src/lib.rs",
        "python/agui_bridge/__init__.py",
        "python/agui_bridge/py.typed",
        "python/agui_bridge/playground/static/playground.js",
    ]
    missing = [n for n in needed if top + n not in names]
    check(not missing, f"{sdist.name} lacks {missing}")
    built = [n for n in names if n.endswith((".so", ".pyd"))]
    check(not built, f"{sdist.name} carries built modules: {built}")


def find_dist(dist: Path, version: str) -> dict[str, Path]:
    wheels = sorted(dist.glob("*.whl"))
    tail = ".".join(PLATFORM_TAGS) + ".whl"
    found = {}
    for kind, abi in ABIS.items():
        name = f"agui_bridge-{version}-{abi}-{tail}"
        check((dist / name).is_file(), f"no {name} in {dist} (found {[w.name for w in wheels]})")
        found[kind] = dist / name
    check(len(wheels) == len(ABIS), f"unexpected wheels in {dist}: {[w.name for w in wheels]}")
    sdists = sorted(dist.glob("*.tar.gz"))
    check(
        [s.name for s in sdists] == [f"agui_bridge-{version}.tar.gz"],
        f"expected one sdist agui_bridge-{version}.tar.gz in {dist}, found {sdists}",
    )
    check_sdist(sdists[0], version)
    return found


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user: the venv first, no Rust toolchain, no checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
        and not k.startswith(("CARGO", "RUSTUP", "MATURIN", "PYO3"))
    }
    keep = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and not any((Path(entry) / tool).exists() for tool in TOOLCHAIN):
            keep.append(entry)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *keep])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def smoke_in_venv(kind: str, wheel: Path, scratch: Path) -> None:
    venv = scratch / f"venv-{kind}"
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    env = clean_env(venv)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--only-binary", ":all:", str(wheel)],
        check=True,
        env=env,
        cwd=scratch,
    )
    empty = scratch / f"cwd-{kind}"
    empty.mkdir()
    subprocess.run(
        [python, "-I", str(Path(__file__).resolve()), "--inside", kind, "--wheel", str(wheel)],
        check=True,
        env=env,
        cwd=empty,
        timeout=180,
    )
    left = sorted(p.name for p in empty.iterdir())
    check(not left, f"{kind}: the smoke run left files in its working directory: {left}")


def outside(dist: Path) -> None:
    version = cargo_version()
    wheels = find_dist(dist, version)
    for kind, wheel in wheels.items():
        expected = sorted(f"{ABIS[kind]}-{tag}" for tag in PLATFORM_TAGS)
        check(wheel_tags(wheel) == expected, f"{wheel.name}: WHEEL tags {wheel_tags(wheel)}")
        check_audit(wheel)
    with tempfile.TemporaryDirectory(prefix="agui-wheel-") as scratch:
        for kind, wheel in wheels.items():
            started = time.monotonic()
            smoke_in_venv(kind, wheel, Path(scratch))
            print(f"wheel smoke: {wheel.name} passed ({time.monotonic() - started:.1f} s)")


# ---- inside: the installed package, in a fresh venv ----


def check_isolation() -> None:
    for entry in sys.path:
        if entry:
            resolved = Path(entry).resolve()
            check(
                resolved != ROOT and ROOT not in resolved.parents,
                f"the checkout is on sys.path: {entry}",
            )
    found = {tool: shutil.which(tool) for tool in TOOLCHAIN}
    check(not any(found.values()), f"a Rust toolchain is on PATH: {found}")


def check_install(kind: str, wheel: Path) -> None:
    import importlib.machinery
    from importlib import metadata

    import agui_bridge
    from agui_bridge import _native

    prefix = Path(sys.prefix).resolve()
    for module in (agui_bridge, _native):
        where = Path(module.__file__).resolve()
        check(prefix in where.parents, f"{module.__name__} is not the installed one: {where}")
    check(agui_bridge.IMPLEMENTATION == "rust", f"IMPLEMENTATION is {agui_bridge.IMPLEMENTATION}")
    suffix = ".abi3.so" if kind == "abi3" else importlib.machinery.EXTENSION_SUFFIXES[0]
    check(_native.__file__.endswith(suffix), f"{kind}: loaded {_native.__file__}")

    version = wheel.name.split("-")[1]
    check(agui_bridge.__version__ == version, f"__version__ {agui_bridge.__version__}")
    dist = metadata.distribution("agui-bridge")
    check(dist.version == version, f"metadata version {dist.version}")
    tags = sorted(
        line.split(": ", 1)[1]
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag: ")
    )
    check(tags == wheel_tags(wheel), f"installed WHEEL tags {tags}")
    cli = shutil.which("agui-bridge")
    check(cli is not None and prefix in Path(cli).resolve().parents, f"agui-bridge is {cli}")
    shown = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
    check(shown.strip() == f"agui-bridge {version} (rust)", f"--version printed {shown!r}")


def check_round_trip() -> None:
    from agui_bridge import create_agui_transformer, crumbs, pure

    outputs = []
    for build in (create_agui_transformer, pure.create_agui_transformer):
        t = build(thread_id="t1", run_id="r1")
        events = t(crumbs.text_delta("Hello"))
        data = t.encode(crumbs.tool_call("c1", "add", {"a": 1, "b": 2})) + t.finish_encoded()
        outputs.append((events, data))
    (events, data), reference = outputs
    check(outputs[0] == reference, "the rust and pure builds differ on the round trip")
    kinds = [e["type"] for e in events]
    check(kinds == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"], str(kinds))
    frames = [json.loads(f[len(b"data: ") :]) for f in data.split(b"\n\n") if f]
    check(frames[-1]["type"] == "RUN_FINISHED", f"the run ends with {frames[-1]}")
    check(any(f["type"] == "TOOL_CALL_START" for f in frames), "no TOOL_CALL_START")


def make_exception(spec: dict) -> BaseException:
    """As tests/test_vectors.py builds a step's exception: its type name matters."""
    cls = getattr(builtins, spec["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = type(spec["type"], (Exception,), {})
    return cls(spec["message"])


def check_vectors() -> None:
    """Every golden vector through the installed extension: the SSE bytes and errors."""
    from agui_bridge import (
        CrumbError,
        create_agui_repairer,
        create_agui_transformer,
        create_agui_translator,
    )

    factories = {
        "crumbs": create_agui_transformer,
        "chunks": create_agui_translator,
        "events": create_agui_repairer,
    }

    paths = sorted((ROOT / "tests" / "vectors").glob("*.json"))
    check(len(paths) >= 60, f"only {len(paths)} vectors found")
    for path in paths:
        vector = json.loads(path.read_text(encoding="utf-8"))
        t = factories[vector["dialect"]](**vector.get("create", {}))
        out = b""
        for step in vector["steps"]:
            if "snapshot" in step:
                check(t.snapshot() == step["snapshot"], f"{path.stem}: the snapshot differs")
            elif "coalesce" in step:
                t.coalesce(step["coalesce"])
            elif "flush" in step:
                out += t.flush_encoded()
            elif "finish" in step:
                out += t.finish_encoded()
            elif "cancel" in step:
                out += t.cancel_encoded()
            elif "fail" in step:
                out += t.fail_encoded(make_exception(step["fail"]))
            elif "error" in step:
                try:
                    t.encode(step["input"])
                except CrumbError as error:
                    check(str(error) == step["error"], f"{path.stem}: error {error}")
                else:
                    raise SmokeError(f"{path.stem}: no CrumbError for {step['input']!r}")
            else:
                out += t.encode(step["input"])
        check(out == vector["sse"].encode(), f"{path.stem}: the SSE bytes differ")
        check((t.dropped, t.ignored) == (vector["dropped"], vector["ignored"]), path.stem)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_playground(port: int) -> None:
    """The demo's playground page and its bundled client come from the installed package."""
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(base + "/", timeout=30) as response:
        page = response.read().decode()
    check("_playground/playground.js" in page, "the playground page does not load its script")
    with urllib.request.urlopen(base + "/_playground/playground.js", timeout=30) as response:
        script = response.read().decode()
    # A message of @ag-ui/client's verifier: the real client is in the bundle.
    check("First event must be 'RUN_STARTED'" in script, "the playground bundle lacks the client")


def check_demo() -> None:
    port = free_port()
    env = dict(os.environ, AGUI_DEMO_DELAY="0")
    args = ["demo", "--port", str(port), "--store", "memory://", "--log-level", "warning"]
    server = subprocess.Popen([shutil.which("agui-bridge"), *args], env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            check(server.poll() is None, f"the demo exited with {server.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                check(time.monotonic() < deadline, "the demo did not listen within 60 s")
                time.sleep(0.2)
        body = {
            "threadId": "smoke",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "what is 6*7?"}],
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/ag-ui/run",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "accept": "text/event-stream"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            check(response.status == 200, f"status {response.status}")
            kind = response.headers.get("content-type", "")
            check(kind.startswith("text/event-stream"), f"content-type {kind}")
            data = response.read()
        check_playground(port)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    # A frame may carry an `id:` line (resumable runs): read its data lines, as a client does.
    events = [
        json.loads(line[len(b"data: ") :])
        for frame in data.split(b"\n\n")
        for line in frame.split(b"\n")
        if line.startswith(b"data: ")
    ]
    kinds = [e["type"] for e in events]
    check(kinds[:1] == ["RUN_STARTED"] and kinds[-1:] == ["RUN_FINISHED"], f"events {kinds}")
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    check(len(results) == 1 and "42" in results[0], f"tool results {results}")


def inside(kind: str, wheel: Path) -> None:
    check_isolation()
    check_install(kind, wheel)
    check_round_trip()
    check_vectors()
    check_demo()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", nargs="?", type=Path, default=ROOT / "dist")
    parser.add_argument("--inside", choices=sorted(ABIS), help=argparse.SUPPRESS)
    parser.add_argument("--wheel", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        if args.inside:
            inside(args.inside, args.wheel)
        else:
            outside(args.dist.resolve())
    except (SmokeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"wheel smoke FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
