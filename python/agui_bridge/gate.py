"""The run gate: the one way a run starts and a thread's state changes, for
both protocols.

A run: claim the thread (this worker's claim, then the store's lease:
expires, renewed, fenced) → load it → merge the turn (``turns``) → create
the run and append RUN_STARTED to its log → publish the log (only now can a
reader join: its first frame is RUN_STARTED) → save the user's turn, fenced
→ start the task. The run releases the thread when it ends (``release``).

A thread is busy (``busy``) while this worker holds it (a run, a run being
started, a state update) or has runs queued for it; across workers and
nodes the store's lease says so (a claim then answers 409). A queued run
(``enqueue``: the Agent Protocol's ``multitask_strategy``) starts when the
thread is released, woken by that release rather than by polling.

The gate reads no request: it raises ``errors.HttpError`` (a status, code
and message), which the ingress answers as JSON. The ops layer's hooks
(``admit``: per-identity limits; ``launch``: the run's task, counted and
traced) are handed in. A run's limit slots are held with its thread and
given back as it frees the thread, before anything waiting for it is woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .context import RunContext
from .errors import HttpError, LeaseLost
from .interrupts import aside_of, stored
from .runs.run import Run, RunSettings
from .store import split_thread
from .store.lease import head_of, keep, keeps_branches, save
from .store.owner import owner_of
from .tasks import wait_then_cancel
from .turns import carried, merge

log = logging.getLogger("agui_bridge.gate")


def busy(thread_id: str) -> HttpError:
    return HttpError(409, "run_active", f"thread {thread_id!r} already has an active run")


def shutting_down() -> HttpError:
    """What a start is refused with once the worker drains (a queued run fails with it)."""
    return HttpError(503, "server_shutdown", "the server is shutting down", [("retry-after", "5")])


@dataclass
class Queued:
    """A run waiting for its thread (``multitask_strategy`` enqueue or interrupt)."""

    start: Callable[[], Awaitable[Run]]  # the gate's start, with the run's input
    started: Callable[[Run], None]
    failed: Callable[[str], None]
    cancelled: Callable[[], bool]
    # Asked once more as it is about to start, the thread free: a cancel that
    # reaches this worker late (another node's) must not let it run.
    wanted: Callable[[], Awaitable[bool]] | None = None


class Gate:
    """Admission of one worker's runs and state updates (see the module)."""

    def __init__(
        self,
        store: Callable[[], Any],
        runs,
        lease_ttl: float,
        settings: RunSettings,
        admit=None,
        launch=None,
    ):
        self._store = store  # the thread store, opened on first use
        # admit(agent_id, identity) -> slots (429 past a limit); launch(run) -> task
        self.admit = admit
        self.launch = launch
        self.runs = runs
        self.lease_ttl = lease_ttl
        self.settings = settings
        self.closing = False  # the worker is shutting down: no new runs
        # thread_id -> its Run, or None while a run is being started or the state written
        self.active: dict[str, Run | None] = {}
        # thread_id -> (its lease, the task renewing it), for the runs of this worker
        self.leases: dict[str, tuple[Any, asyncio.Task]] = {}
        # thread_id -> the limit slots its run took (admit), for the runs of this worker
        self.slots: dict[str, list] = {}
        self.queues: dict[str, list[Queued]] = {}
        # The tasks starting queued runs (``_drain_queue``), ended at shutdown.
        self._queue_tasks: set[asyncio.Task] = set()
        # thread_id -> when its lease was last claimed (monotonic, as the call was sent)
        self.claimed_at: dict[str, float] = {}
        self.tasks: set[asyncio.Task] = set()
        self._freed: dict[str, asyncio.Event] = {}
        # Runs being started (admitted, their turn being stored: no task yet),
        # which a drain waits for; set when there are none.
        self._starting = 0
        self._no_starts = asyncio.Event()
        self._no_starts.set()

    # -- busy ----------------------------------------------------------------

    def busy(self, thread_id: str) -> bool:
        """This worker holds the thread or has runs queued for it."""
        return thread_id in self.active or bool(self.queues.get(thread_id))

    def run_of(self, thread_id: str) -> Run | None:
        """The thread's live run on this worker."""
        return self.active.get(thread_id)

    def check(self, thread_id: str) -> None:
        """503 while shutting down, 409 while this worker holds the thread."""
        if self.closing:
            raise shutting_down()
        if thread_id in self.active:
            raise busy(thread_id)

    async def claim(self, thread_id: str):
        """Holds the thread for this worker, then takes the store's lease (None:
        a store without leases). 503 while shutting down, 409 while held."""
        self.check(thread_id)
        self.active[thread_id] = None
        store = self._store()
        try:
            if not hasattr(store, "claim"):
                return None
            sent = time.monotonic()
            lease = await store.claim(thread_id, self.lease_ttl)
        except BaseException:
            self._free(thread_id)
            raise
        if lease is None:
            self._free(thread_id)
            raise busy(thread_id)
        self.claimed_at[thread_id] = sent
        return lease

    async def unclaim(self, thread_id: str, lease) -> None:
        """Gives back a claim no run took."""
        if self.active.get(thread_id, Run) is None:
            self._free(thread_id)
        if lease is not None:
            await self._store().release(lease)

    async def release(self, run: Run) -> None:
        """Frees the thread of a run that ended (its lease too)."""
        thread_id = run.ctx.thread_id
        if self.active.get(thread_id) is not run:
            return
        # Before the thread: a run queued for it, or superseding this one, starts
        # as soon as it is free and would be refused the slots this one still held.
        try:
            await _released(self.slots.pop(thread_id, ()))
        except Exception:
            log.exception("giving back the limit slots of thread %s failed", thread_id)
        finally:
            # Whatever befell the slots (an error, the task cancelled at
            # shutdown), the thread must not stay held on this worker.
            self._free(thread_id)
        held = self.leases.pop(thread_id, None)
        if held is None:
            return
        lease, keeper = held
        keeper.cancel()
        if lease is None:
            return
        try:
            await self._store().release(lease)
        except Exception:
            log.exception("releasing the run lease of thread %s failed", thread_id)

    def _free(self, thread_id: str) -> None:
        self.active.pop(thread_id, None)
        self.claimed_at.pop(thread_id, None)
        freed = self._freed.pop(thread_id, None)
        if freed is not None:
            freed.set()

    async def freed(self, thread_id: str, timeout: float | None = None) -> None:
        """Returns once this worker no longer holds the thread (or after ``timeout``)."""
        if thread_id not in self.active:
            return
        event = self._freed.setdefault(thread_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await event.wait()

    def _hold(self, thread_id: str, lease, run: Run) -> None:
        """Keeps renewing a run's lease (and its log's, shared) until ``release``."""
        renewed = self.runs.renewer(run) if run.out is not run.log else None
        if lease is not None:
            run.lease_held(self.claimed_at.get(thread_id, 0.0), self.lease_ttl)
        if lease is not None or renewed is not None:
            keeper = asyncio.get_running_loop().create_task(
                keep(
                    self._store(),
                    lease,
                    self.lease_ttl,
                    renewed,
                    partial(run.lease_held, ttl=self.lease_ttl),
                )
            )
            self.leases[thread_id] = (lease, keeper)

    def spawn(self, coro) -> asyncio.Task:
        """A task of this worker's (kept referenced until done)."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # -- a run ---------------------------------------------------------------

    async def start(self, agent, run_input, identity, authorize) -> Run:
        """Starts a run of ``agent`` (either protocol); its task runs on its own.

        ``authorize(thread)`` checks the loaded thread's guards (the ingress's).
        """
        self.check(run_input.thread_id)
        self._starting += 1
        self._no_starts.clear()
        try:
            return await self._start(agent, run_input, identity, authorize)
        finally:
            self._starting -= 1
            if not self._starting:
                self._no_starts.set()

    async def _start(self, agent, run_input, identity, authorize) -> Run:
        thread_id = run_input.thread_id
        slots = await self.admit(agent.agent_id, identity) if self.admit is not None else []
        try:
            lease = await self.claim(thread_id)
        except BaseException:
            await _released(slots, unused=True)
            raise
        try:
            # A custom store's own thread object: its kept-aside entries split off.
            thread = split_thread(await self._store().load(thread_id))
            await authorize(thread)
            store = self._store()
            parent_head = None
            if run_input.parent_run_id is not None and thread is not None:
                parent_head = await head_of(store, thread_id, run_input.parent_run_id)
            turn = merge(
                thread,
                run_input,
                keeps_branches(store),
                parent_head,
                self.settings.clients_resend,
            )
            ctx = RunContext(
                thread_id=thread_id,
                run_id=run_input.run_id,
                agent_id=agent.agent_id,
                input=run_input.input if turn.new_user is not None else "",
                history=turn.history,
                state=turn.state,
                resume=turn.resume,
                tools=run_input.tools,
                tool_results=turn.tool_results,
                context=run_input.context,
                forwarded_props=run_input.forwarded_props,
                identity=identity,
                messages=run_input.messages,
                held=turn.held,
                input_message=turn.new_user,
                protocol_version=run_input.protocol_version,
            )
            # The log first: where it cannot start (a newer claim of the thread,
            # the shared log unreachable) nothing is stored.
            started = await self.runs.start(
                thread_id,
                run_input.run_id,
                agent.agent_id,
                thread.agent_id if thread is not None else agent.agent_id,
                carried(run_input.messages),
                lease.fence if lease is not None else 0,
                turn.state,
                turn.new,
                {"after": turn.cut.after} if turn.cut is not None else None,
            )
            if started is None:
                raise busy(thread_id)
        except BaseException:
            await _released(slots, unused=True)
            await self.unclaim(thread_id, lease)
            raise
        run_log, sink = started
        run = Run(
            agent,
            ctx,
            turn,
            run_log,
            sink,
            lease,
            store=self._store(),
            settings=self.settings,
            release=self.release,
            log_ended=self.runs.ended,
        )
        # RUN_STARTED is the log's first frame before any reader can see it.
        run.begin()
        self.runs.publish(run_log)
        self.active[thread_id] = run
        self.slots[thread_id] = slots
        # Renewed from now on: a slow save must not let the lease (or, shared,
        # the run's liveness) expire under a run readers already see.
        self._hold(thread_id, lease, run)
        try:
            if turn.new or turn.cut is not None:
                # The user's turn (and the new branch it starts) is stored before
                # the agent starts, so a crash mid-run loses only the answer.
                await save(
                    self._store(),
                    thread_id,
                    agent.agent_id,
                    turn.new,
                    dict(turn.state),
                    turn.pending,
                    lease,
                    owner=owner_of(identity),
                    cut=turn.cut,
                    run_id=run_input.run_id,
                )
        except BaseException as error:
            # Readers may have joined: they get RUN_ERROR, and nothing was stored.
            await run.abandon(error)  # releases the thread, its lease and its slots
            if isinstance(error, LeaseLost):
                raise busy(thread_id) from None
            raise
        if self.launch is not None:
            run.task = self.launch(run)  # counted, traced and logged (agui_bridge.ops)
            self.tasks.add(run.task)
            run.task.add_done_callback(self.tasks.discard)
        else:
            run.task = self.spawn(run.run())
        return run

    # -- the state update ----------------------------------------------------

    async def update(self, thread_id: str, change) -> None:
        """Changes a thread outside a run (the Agent Protocol's state update):
        ``change(thread) -> (new messages, state, cut)`` on the thread as loaded
        under the claim, saved under its lease (``HttpError`` 409 ``lease_lost``
        when the lease was taken over meanwhile: nothing is written; 422 for a
        cut where the store keeps no branches)."""
        lease = await self.claim(thread_id)
        try:
            store = self._store()
            thread = await store.load(thread_id)
            if thread is None:
                raise HttpError(404, "not_found", f"no thread {thread_id!r}")
            added, state, cut = change(thread)
            if cut is not None and not keeps_branches(store):
                raise HttpError(
                    422,
                    "not_served",
                    "this store keeps no branches: a state update can only append"
                    " messages, not replace a held one or fork at an earlier step",
                )
            try:
                interrupts = stored(thread.interrupts, aside_of(thread))
                await save(
                    store, thread_id, thread.agent_id, added, state, interrupts, lease, cut=cut
                )
            except LeaseLost as error:
                raise HttpError(409, "lease_lost", str(error)) from None
        finally:
            await self.unclaim(thread_id, lease)

    # -- queued runs (multitask_strategy) -----------------------------------

    def enqueue(self, thread_id: str, queued: Queued, first: bool = False) -> None:
        """Starts ``queued`` once the thread is free (``first``: before the others)."""
        queue = self.queues.setdefault(thread_id, [])
        if first:
            queue.insert(0, queued)
        else:
            queue.append(queued)
        if len(queue) == 1:
            task = self.spawn(self._drain_queue(thread_id, queue))
            self._queue_tasks.add(task)
            task.add_done_callback(self._queue_tasks.discard)

    def unqueue(self, thread_id: str, queued: Queued) -> None:
        queue = self.queues.get(thread_id) or []
        if queued in queue:
            queue.remove(queued)

    async def _drain_queue(self, thread_id: str, queue: list[Queued]) -> None:
        """Starts the thread's queued runs one after the other, each once the thread is free."""
        try:
            while queue:
                queued = queue[0]
                if queued.cancelled():
                    self.unqueue(thread_id, queued)
                    continue
                if thread_id in self.active:
                    await self.freed(thread_id)
                    continue
                if queued.wanted is not None and not await queued.wanted():
                    self.unqueue(thread_id, queued)
                    continue
                try:
                    run = await queued.start()
                except HttpError as error:
                    if error.status == 409 and error.code == "run_active":
                        # Another worker's run holds the lease: nothing here is told
                        # when it ends, so look again within a renewal period.
                        await asyncio.sleep(min(1.0, self.lease_ttl / 3))
                        continue
                    if error.status == 429:
                        # Past a limit of its identity (its runs elsewhere, its start
                        # rate): the run keeps its place and is tried again when told.
                        await asyncio.sleep(_retry_after(error))
                        continue
                    queued.failed(error.message)
                    self.unqueue(thread_id, queued)
                    continue
                except Exception as error:
                    log.exception("thread %s: a queued run could not start", thread_id)
                    queued.failed(str(error) or type(error).__name__)
                    self.unqueue(thread_id, queued)
                    continue
                queued.started(run)
                self.unqueue(thread_id, queued)
        finally:
            if self.queues.get(thread_id) is queue and not queue:
                del self.queues[thread_id]

    # -- shutdown ------------------------------------------------------------

    async def drain(self, timeout: float) -> None:
        """Takes no new run; ends the runs still going after ``timeout`` seconds
        and waits until they are saved and released."""
        self.closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self._starts_done(timeout)
        tasks = [run.task for run in self.active.values() if run is not None and run.task]
        if tasks:
            await asyncio.wait(tasks, timeout=max(0.0, deadline - loop.time()))
        ended = self._shut_down()
        if self._starting:
            # Still being started: each ends as its task starts, told to by
            # ``shutdown`` once it is a run (or by an error: nothing to wait for).
            # Bounded: a start stuck on a store that never answers must not
            # hold the worker until it is killed (what it stores is its own).
            await self._starts_done(STARTS_GRACE)
            if self._starting:
                log.warning(
                    "shutdown: %d run(s) still being started after %.1f s more; not waited for",
                    self._starting,
                    STARTS_GRACE,
                )
            ended += self._shut_down()
        if ended:
            log.warning("shutdown: ended %d run(s) still going after %.1f s", len(ended), timeout)
        # Those it ended, and those ending already (a stop under way: shutdown()
        # leaves them be), until they are saved and released.
        going = [run.task for run in self.active.values() if run is not None and run.task]
        if going:
            await asyncio.wait(going)

    async def end_queued(self) -> None:
        """After ``drain``: the runs still queued can start no more (a start is
        refused at shutdown), so each fails as a refused start does (``failed``
        with ``shutting_down``'s message: its record settles and its webhook is
        called) and the tasks that would have started them end."""
        message = shutting_down().message
        queues = dict(self.queues)
        self.queues.clear()
        ended = 0
        for queue in queues.values():
            for queued in list(queue):
                if not queued.cancelled():
                    queued.failed(message)
                    ended += 1
            queue.clear()
        tasks = list(self._queue_tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        if ended:
            log.warning("shutdown: %d queued run(s) failed: they cannot start any more", ended)

    async def settle(self, timeout: float) -> None:
        """After ``drain`` and ``end_queued``: the worker's tasks still going
        (``spawn``: what runs once a run ended, such as its webhook's call) are
        waited for, at most ``timeout`` seconds; those left then are cancelled."""
        left = await wait_then_cancel([t for t in self.tasks if not t.done()], timeout)
        if left:
            log.warning("shutdown: cancelled %d task(s) still going", len(left))

    def _shut_down(self) -> list[Run]:
        return [
            run
            for run in list(self.active.values())
            if run is not None and not run.shutting_down and run.shutdown()
        ]

    async def _starts_done(self, timeout: float | None) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._no_starts.wait()


# How long a drain past its timeout still waits for the runs being started
# (their turn being stored) to become runs it can end.
STARTS_GRACE = 2.0


async def _released(slots, unused: bool = False) -> None:
    """``unused``: the start was refused before its run began, so what it took of
    a rate is given back too (a run start is counted once it begins)."""
    for slot in slots:
        await slot.release(unused)


def _retry_after(error: HttpError) -> float:
    for name, value in error.headers:
        if name.lower() == "retry-after":
            with contextlib.suppress(ValueError):
                return max(0.1, float(value))
    return 1.0
