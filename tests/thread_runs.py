"""Quick runs of both protocols on one thread, and what ``POST /threads/{id}/stream/events``
shows of them: the thread stream's no-run-lost tests, on one node
(``test_thread_stream``) and across two (``test_agent_protocol_records``)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import orjson

CHANNELS = ["lifecycle", "messages", "values"]


async def quick_runs(http: httpx.AsyncClient, thread_id: str, count: int) -> list[str]:
    """``count`` runs of the demo agent on the thread, one after the other, each
    read to its end: AG-UI runs with an Agent Protocol run every third. Their ids."""
    run_ids = []
    for n in range(count):
        text = f"say hi {n}"
        if n % 3 == 2:
            body = {
                "assistant_id": "demo",
                "input": {"messages": [{"role": "user", "content": text}]},
            }
            created = await http.post(f"/threads/{thread_id}/runs", json=body)
            assert created.status_code == 200, created.text
            run_id = created.json()["run_id"]
            joined = await http.get(f"/threads/{thread_id}/runs/{run_id}/join")
            assert joined.status_code == 200, joined.text
        else:
            run_id = f"agui-{n}-{uuid.uuid4().hex[:6]}"
            message = {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}
            body = {"threadId": thread_id, "runId": run_id, "messages": [message]}
            async with http.stream("POST", "/agui/demo", json=body) as response:
                assert response.status_code == 200
                await response.aread()
        run_ids.append(run_id)
    return run_ids


async def thread_events(
    http: httpx.AsyncClient, thread_id: str, since: int, runs: int, count: int | None = None
) -> list[dict]:
    """The thread's events after ``since``, up to the end of its ``runs``-th run
    from there (or ``count`` events)."""
    body = {"channels": CHANNELS, "since": since}
    out: list[dict] = []
    ended = 0
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            out.append(orjson.loads(line[6:]))
            if out[-1]["method"] == "lifecycle" and out[-1]["params"]["data"]["event"] != "running":
                ended += 1
            if ended == runs or len(out) == count:
                break
    return out


def runs_shown(events: list[dict]) -> list[str]:
    """The runs a stream showed, in order, each checked whole: started, then ended."""
    shown = []
    for event in events:
        if event["method"] == "lifecycle":
            data = event["params"]["data"]
            if data["event"] == "running":
                shown.append(data["run_id"])
            else:
                assert data["run_id"] == shown[-1] and data["event"] == "completed", data
    seqs = [event["seq"] for event in events]
    assert seqs == sorted(set(seqs)), "each event once, in order"
    return shown


async def check_no_run_lost(runner: httpx.AsyncClient, readers: list[httpx.AsyncClient]) -> None:
    """Quick runs through ``runner`` while a stream through ``readers[0]`` is open
    (idle between them), then read again from the start and resumed with ``since``
    half way through the next reader: every run shown, in order, each event once."""
    count = 7
    thread_id = str(uuid.uuid4())
    made = await runner.post("/threads", json={"thread_id": thread_id})
    assert made.status_code == 200, made.text
    first = readers[0]
    live = asyncio.ensure_future(thread_events(first, thread_id, 0, count))
    try:
        run_ids = await quick_runs(runner, thread_id, count)
        async with asyncio.timeout(30):
            events = await live
    finally:
        live.cancel()
    assert runs_shown(events) == run_ids
    whole = await thread_events(first, thread_id, 0, count)
    assert _same(whole, events)
    head = await thread_events(first, thread_id, 0, count, count=len(events) // 2)
    ended = sum(
        1 for e in head if e["method"] == "lifecycle" and e["params"]["data"]["event"] != "running"
    )
    tail = await thread_events(readers[-1], thread_id, head[-1]["seq"], count - ended)
    assert _same(head + tail, events)


def _same(these: list[dict], those: list[dict]) -> bool:
    return [(e["seq"], e["params"]["data"]) for e in these] == [
        (e["seq"], e["params"]["data"]) for e in those
    ]
