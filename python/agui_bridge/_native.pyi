"""Typed stub of agui_bridge._native, the Rust build (same surface as agui_bridge.pure)."""

from collections.abc import AsyncGenerator, Iterable
from typing import Any, Final, Self, final

__all__ = [
    "IMPLEMENTATION",
    "ChunkTranslator",
    "CrumbTransformer",
    "EventRepairer",
    "create_agui_repairer",
    "create_agui_transformer",
    "create_agui_translator",
    "encode_sse",
]

IMPLEMENTATION: Final[str]

class _EventStream:
    """What the three classes share (stub only: at runtime each stands alone)."""

    def __call__(self, item: object) -> list[dict[str, Any]]: ...
    def encode(self, item: object) -> bytes: ...
    def encode_many(self, items: Iterable[object]) -> bytes: ...
    def finish(self) -> list[dict[str, Any]]: ...
    def finish_encoded(self) -> bytes: ...
    def fail(self, exc: BaseException) -> list[dict[str, Any]]: ...
    def fail_encoded(self, exc: BaseException) -> bytes: ...
    def drive(
        self, agen: AsyncGenerator[Any], yield_at: int, stop_at: object, *first: object
    ) -> tuple[str, bytes, Any]: ...
    def events_and_frames(self, item: object) -> tuple[list[dict[str, Any]], bytes]: ...
    def finish_events_and_frames(self) -> tuple[list[dict[str, Any]], bytes]: ...
    def fail_events_and_frames(self, exc: BaseException) -> tuple[list[dict[str, Any]], bytes]: ...
    def cancel(self) -> list[dict[str, Any]]: ...
    def cancel_encoded(self) -> bytes: ...
    def cancel_events_and_frames(self) -> tuple[list[dict[str, Any]], bytes]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def coalesce(self, max_bytes: int) -> None: ...
    def flush(self) -> list[dict[str, Any]]: ...
    def flush_encoded(self) -> bytes: ...
    def flush_events_and_frames(self) -> tuple[list[dict[str, Any]], bytes]: ...
    @property
    def holding(self) -> bool: ...
    @property
    def dropped(self) -> int: ...
    @property
    def ignored(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def next_id(self) -> int: ...
    @property
    def last_id(self) -> int: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def protocol_v1(self) -> bool: ...

class _Plain(_EventStream):
    """A dialect made from the thread, run and state alone (stub only). The options'
    None (pyo3's ``#[new]``, ``Option``) is the default: no ids, the first id 1."""

    def __new__(
        cls,
        thread_id: str | None = None,
        run_id: str | None = None,
        state: dict[str, Any] | None = None,
        *,
        held_ids: Iterable[str] | None = None,
        event_ids: bool | None = None,
        first_id: int | None = None,
        protocol_version: str | None = None,
    ) -> Self: ...

@final
class CrumbTransformer(_Plain):
    @property
    def interrupts(self) -> list[dict[str, Any]]: ...

@final
class ChunkTranslator(_EventStream):
    # custom_prefix left out: "dawn".
    def __new__(
        cls,
        thread_id: str | None,
        run_id: str | None,
        state: dict[str, Any] | None = None,
        custom_prefix: str = ...,
        *,
        held_ids: Iterable[str] | None = None,
        event_ids: bool | None = None,
        first_id: int | None = None,
        protocol_version: str | None = None,
    ) -> Self: ...

@final
class EventRepairer(_Plain): ...

def create_agui_transformer(
    thread_id: str | None = None,
    run_id: str | None = None,
    state: dict[str, Any] | None = None,
    *,
    held_ids: Iterable[str] | None = None,
    event_ids: bool | None = None,
    first_id: int | None = None,
    protocol_version: str | None = None,
) -> CrumbTransformer: ...
def create_agui_translator(
    thread_id: str | None = None,
    run_id: str | None = None,
    state: dict[str, Any] | None = None,
    custom_prefix: str = ...,
    *,
    held_ids: Iterable[str] | None = None,
    event_ids: bool | None = None,
    first_id: int | None = None,
    protocol_version: str | None = None,
) -> ChunkTranslator: ...
def create_agui_repairer(
    thread_id: str | None = None,
    run_id: str | None = None,
    state: dict[str, Any] | None = None,
    *,
    held_ids: Iterable[str] | None = None,
    event_ids: bool | None = None,
    first_id: int | None = None,
    protocol_version: str | None = None,
) -> EventRepairer: ...
def encode_sse(
    event_or_events: dict[str, Any] | list[dict[str, Any]] | tuple[dict[str, Any], ...],
) -> bytes: ...
