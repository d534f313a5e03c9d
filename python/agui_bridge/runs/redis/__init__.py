"""Run logs on Redis Streams: every node reads and writes the same runs.

Keys (one Redis; ``T`` = JSON ``[threadId]``, ``R`` = JSON ``[threadId, runId]``):

- ``agui:run:R:log`` — the run's stream. An entry is one flush of the run
  loop (a batch of frames), its id ``N-0`` where N is the number of the
  batch's last event (the SSE ``id:``); fields ``a`` (the batch's first event
  number: a gap is seen when it is not the reader's position + 1), ``d`` (the
  frames), ``s`` (what the batch opens and closes, so a join re-opens them
  without reading every event), ``e`` (the end: no more entries). ``N-0``
  rather than ``0-N``: the sequence part stays free for an entry that carries
  no event after event N (the end marker ``N-1``), and a plain integer read
  position N is the stream id ``N-0``.
- ``agui:run:R:meta`` — agent, owner, the request's message ids, the state
  the run started from, the node running it, its fence, ``ended``.
- ``agui:run:R:alive`` — set for ``lease_ttl`` and renewed with the run's
  lease: when it expires the node is gone.
- ``agui:run:R:readers`` — the nodes that have readers of the run, each
  scored with when its presence lapses (renewed while it reads), and
  ``read`` in the meta once anyone read it: whether a new run may supersede
  it (``runs.supersede``), seen from every node.
- ``agui:thread:T:fence`` — the token of the thread's newest run: its
  lease's fence (from the thread store), node and run id. Each run's start
  sets it; an append or a renewal whose token is not this one is refused, so
  a node that lost its lease writes nothing more. A start whose fence is
  older than the one held while that run is still active is refused.
- ``agui:thread:T:active`` — the thread's running run (``GET …/events``).
- ``agui:thread:T:runs`` — the thread's runs in the order they claimed it
  (a sorted set: run id by fence), added by each start in the same script, so
  a thread's event stream learns of every run, however short, on any node.
- ``agui:node:ID:cancel`` — a node's control channel (pub/sub): a cancel
  (or a supersede) from any node reaches the node that runs the run.

Writes are Lua scripts (one round trip each: check the fence, ``XADD`` the
batches with ``MAXLEN ~``, renew ``EXPIRE`` = retention). The run loop never
waits for Redis: a writer task sends everything queued since its previous
round trip in one call. Each node reads a run with one blocking ``XREAD`` (on
a connection pool of its own) into a local ``RunLog``
that all its readers are cursors on, so frames reach this node's readers
only once Redis has them, the same bytes on every node (its own included).

A join's prelude is rebuilt from the frames (``runs.replay``) plus the thread
as stored (the user's turn is stored before the run starts), on every node
alike. A node whose reader sees no entry for a while checks ``alive``; once it
expired it appends, in one script that succeeds once for all nodes, the
closers of what is open and ``RUN_ERROR`` (code ``run_lost``) with the end.
Redis unreachable: a run cannot start (``RunsUnavailable``: 503); a reader
whose ``XREAD`` fails gets the closers and ``RUN_ERROR`` (code
``runs_unavailable``) from its node; a run whose writes fail stops and stores
its partial turn. redis-py reconnects on the next command: nothing to restart.
Redis that stops answering without failing (frozen, a failover's pause, a
network stall) is waited out for ``client.STALL`` (60 s): the run goes on,
its frames queue on its node, its lease in the store is renewed meanwhile
(the heartbeat to Redis is sent, not awaited), readers get pings, and all of
them resume where they were once Redis answers; the heartbeat in flight
renews ``alive`` before any node can find it expired. So a stream never says
the run failed while the thread says it went on. Past ``STALL`` it is
unreachable (above). Redis losing a run's keys (FLUSHALL, eviction, a failover
to an empty replica) ends it for every reader with ``run_lost``: each node
ends its own copy (no shared log is left to append to) and the run stops.

The modules, one job each: ``layout`` (the keys and the Lua scripts),
``client`` (the connections), ``sink`` (a run's writer), ``mirror`` (this
node's copy of a run and its one reader), ``control`` (the cancel channel),
``presence`` (who reads each run, for every node),
``backend`` (``RedisRuns``, the interface of ``runs.backend``).
"""

from __future__ import annotations

from .backend import RedisRuns
from .layout import Keys
from .mirror import Mirror
from .sink import RedisSink

__all__ = ["Keys", "Mirror", "RedisRuns", "RedisSink"]
