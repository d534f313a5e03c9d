"""The one exception hierarchy of agui_bridge; the Rust build raises these too."""

from __future__ import annotations


class AguiBridgeError(Exception):
    """Base of every error this package raises on purpose."""


class CrumbError(AguiBridgeError, ValueError):
    """An input item (crumb or chunk) the transformer cannot map.

    The transformer is left as it was before the bad item. From
    ``encode_many``, ``index`` is the bad item's position and ``partial``
    holds the SSE bytes of the items before it, which were applied.
    """

    index: int | None = None
    partial: bytes | None = None


class RunInputError(AguiBridgeError, ValueError):
    """A RunAgentInput body that cannot start a run (a 400 at the ingress)."""


class PartTooLarge(RunInputError):
    """A content part's inline data over ``App(max_part_bytes=...)`` (a 413)."""

    status = 413
    code = "part_too_large"


class ServerShutdown(AguiBridgeError):
    """Ends a run the server stopped while shutting down (see ``App``'s ``drain_timeout``)."""


class RunsUnavailable(AguiBridgeError):
    """The shared run log (Redis) cannot be reached: no run starts (503), and a
    run going on ends with this code for its readers."""


class RunLost(AguiBridgeError):
    """Ends a run whose node stopped renewing its lease (it died mid-run)."""


class LeaseLost(AguiBridgeError):
    """A save under a run lease that is no longer the thread's: it expired and
    another run claimed the thread (a larger fence). Nothing of the save is written."""


class StoreUnavailable(AguiBridgeError):
    """The thread store cannot be reached: a 503 before a run starts, RUN_ERROR
    code ``store_unavailable`` when a run's save fails on it."""


class HttpError(Exception):
    """A request answered with ``status`` and a JSON error body ``{error: {code, message}}``."""

    def __init__(self, status: int, code: str, message: str, headers=()):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = list(headers)


class Closed(Exception):
    """The client of a response is gone (raised by a front end's ``send``)."""


class TooLarge(Exception):
    """A request body over the limit (raised by a front end's ``read_body``)."""


class BrokenBody(Exception):
    """The body ended before its end (bad chunked framing, or the client left)."""


# A run's RUN_ERROR code is the class name of the exception it failed with.
ServerShutdown.__name__ = ServerShutdown.__qualname__ = "server_shutdown"
RunsUnavailable.__name__ = RunsUnavailable.__qualname__ = "runs_unavailable"
RunLost.__name__ = RunLost.__qualname__ = "run_lost"
LeaseLost.__name__ = LeaseLost.__qualname__ = "lease_lost"
StoreUnavailable.__name__ = StoreUnavailable.__qualname__ = "store_unavailable"


__all__ = [
    "AguiBridgeError",
    "BrokenBody",
    "Closed",
    "CrumbError",
    "HttpError",
    "LeaseLost",
    "PartTooLarge",
    "RunInputError",
    "RunLost",
    "RunsUnavailable",
    "ServerShutdown",
    "StoreUnavailable",
    "TooLarge",
]
