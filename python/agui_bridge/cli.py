"""``agui-bridge serve MODULE:APP`` (granian, ASGI) and ``agui-bridge demo``.

granian's ASGI ``send`` waits while the connection's buffers are full, which
bounds what a client that stops reading can pin; its RSGI ``send_bytes``
never waits. Measured side by side (``benches/server.py --asgi``), ASGI
streams as fast, so it is what ``serve`` runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

# Connections one worker serves at once (granian's backpressure). Every open
# stream and every client still sending its request holds one; granian's
# default (1024) let 1,030 slow senders stall everyone. Slow senders are
# bounded in time (--header-timeout here, App(body_timeout=) for bodies).
BACKPRESSURE = 8192
# Seconds a stopping worker gets before the main process kills it; the App's
# drain_timeout must fit in it (checked in each worker: agui_bridge.worker).
KILL_TIMEOUT = 30.0


def _serve(
    target: str,
    host: str,
    port: int,
    workers: int,
    factory: bool = False,
    log_level: str = "info",
    header_timeout: float = 10.0,
    backpressure: int = BACKPRESSURE,
    kill_timeout: float = KILL_TIMEOUT,
    log_format: str = "text",
    drain_delay: float = 0.0,
) -> int:
    from functools import partial

    from granian import Granian
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings

    from .ops.logs import dictconfig
    from .ops.serve import drain_first, metrics_folder

    _raise_open_files(backpressure * workers + 1024)
    # The workers inherit it: App(metrics=True) then sums them in one scrape.
    metrics_folder()
    # The workers take their logging from granian's config (log_dictconfig): the
    # package's loggers (run ends, requests) included, as text or JSON lines.
    server = Granian(
        target,
        address=host,
        port=port,
        interface=Interfaces.ASGI,
        workers=workers,
        factory=factory,
        working_dir=Path.cwd(),
        log_level=log_level,
        log_dictconfig=dictconfig(log_format, log_level),
        websockets=False,
        workers_kill_timeout=kill_timeout,
        # A worker that dies (OOM killer, a crash in native code) is replaced;
        # without this granian stops the whole server.
        respawn_failed_workers=True,
        backlog=max(1024, min(backpressure, 4096)),
        backpressure=backpressure,
        http1_settings=HTTP1Settings(header_read_timeout=int(header_timeout * 1000)),
    )
    from . import worker

    # Each worker loads the target itself, checks its drain time and stops
    # when this process dies (see agui_bridge.worker).
    loader = partial(
        worker.load, wd=Path.cwd(), factory=factory, parent=os.getpid(), kill_timeout=kill_timeout
    )
    drain_first(server, drain_delay)
    server.serve(target_loader=loader)
    return 0


def _raise_open_files(wanted: int) -> None:
    """Each connection is a file: lift the soft limit (often 1024) toward the hard one."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def main(argv: list[str] | None = None) -> int:
    from . import IMPLEMENTATION, __version__

    parser = argparse.ArgumentParser(
        prog="agui-bridge", description="Serve Python agents to AG-UI frontends (granian, ASGI)."
    )
    parser.add_argument(
        "--version", action="version", version=f"agui-bridge {__version__} ({IMPLEMENTATION})"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="serve an agui_bridge App: MODULE:APP",
        description="Serves an agui_bridge App on granian's ASGI interface, whose sends"
        " wait for a slow client. (granian --interface rsgi also serves an App, but"
        " under RSGI a reader that stops reading pins every frame of the run sent"
        " after its socket filled, until it leaves.)",
    )
    serve.add_argument("target", metavar="MODULE:APP", help="e.g. myagents:app")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--factory", action="store_true", help="APP is a function returning the App")
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per line (requests and run ends with their ids)",
    )
    serve.add_argument(
        "--drain-delay",
        type=float,
        default=0.0,
        help="seconds between SIGTERM and the server closing its socket, during which"
        " /readyz answers 503 and no run starts (let the load balancer notice)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a client may take to send its request headers (HTTP/1)",
    )
    serve.add_argument(
        "--backpressure",
        type=int,
        default=BACKPRESSURE,
        help="connections one worker serves at once (streams and slow senders included)",
    )
    serve.add_argument(
        "--kill-timeout",
        type=float,
        default=KILL_TIMEOUT,
        help="seconds a stopping worker gets before it is killed; the App's drain_timeout"
        " must end 10 s before it (a longer one is refused at start)",
    )

    demo = commands.add_parser("demo", help="serve the built-in demo agent")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000)
    demo.add_argument("--workers", type=int, default=1)
    demo.add_argument(
        "--store",
        default=None,
        help="where threads live, e.g. memory:// (default: $AGUI_DEMO_STORE or ./.agui/)",
    )
    demo.add_argument("--log-level", default="info")

    args = parser.parse_args(argv)
    if args.command == "serve":
        if ":" not in args.target:
            parser.error("the target is MODULE:APP, e.g. myagents:app")
        return _serve(
            args.target,
            args.host,
            args.port,
            args.workers,
            args.factory,
            args.log_level,
            args.header_timeout,
            args.backpressure,
            args.kill_timeout,
            args.log_format,
            args.drain_delay,
        )
    if args.store is not None:
        # The workers import the demo app themselves: the store reaches them by environment.
        os.environ["AGUI_DEMO_STORE"] = args.store
    store = os.environ.get("AGUI_DEMO_STORE")
    target = demo_target()
    model = f", model {os.environ['OPENAI_MODEL']}" if target != DEMO else ""
    print(
        f"agui-bridge demo on http://{args.host}:{args.port}/ag-ui/run"
        f" (threads in {store or os.path.abspath('.agui')}{model});"
        f" the playground: open http://{args.host}:{args.port}/ in a browser",
        file=sys.stderr,
    )
    return _serve(target, args.host, args.port, args.workers, log_level=args.log_level)


DEMO = "agui_bridge.demo:app"


def demo_target(environ=os.environ) -> str:
    """The scripted demo, or a real model when OPENAI_MODEL and OPENAI_BASE_URL or
    OPENAI_API_KEY are set (and the ``openai`` extra is installed)."""
    if not environ.get("OPENAI_MODEL"):
        return DEMO
    if not (environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_KEY")):
        return DEMO
    if importlib.util.find_spec("openai") is None:
        print("OPENAI_MODEL is set but the openai package is not installed", file=sys.stderr)
        return DEMO
    return "agui_bridge.adapters.demo_openai:app"


if __name__ == "__main__":
    raise SystemExit(main())
