"""The Redis layout of shared run logs: the keys (see ``runs.redis``) and the
Lua scripts that change them, one round trip each."""

from __future__ import annotations

import orjson

# Entries a stream keeps at least (MAXLEN ~): far past a run's batches, so it
# bounds a runaway run, not a normal one.
MAX_ENTRIES = 100_000
# Why a run stops when a script finds its meta missing (-3): Redis lost its keys.
GONE = "its keys are gone from Redis"

# Run starts a thread's sequence (``Keys.runs``) keeps at most: far more than a
# thread runs within the run retention.
MAX_STARTS = 1000

# KEYS: meta, log, fence, active, alive, runs, readers
# ARGV: fence, retention, ttl ms, run id, token, max starts, then the meta's fields
_START = """
local cur = redis.call('GET', KEYS[3])
if cur then
  local held = tonumber(string.match(cur, '^(%d+)'))
  if held and held > tonumber(ARGV[1]) and redis.call('EXISTS', KEYS[4]) == 1 then
    return 0
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[7])
redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 7))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[2])
redis.call('SET', KEYS[5], '1', 'PX', ARGV[3])
redis.call('ZADD', KEYS[6], ARGV[1], ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[6], 0, -1 - tonumber(ARGV[6]))
redis.call('EXPIRE', KEYS[6], ARGV[2])
return 1
"""

# KEYS: log, meta, fence, active, alive
# ARGV: fence, retention, maxlen, end id ('' none), run id, then (id, a, d, s) per batch
_APPEND = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
for i = 6, #ARGV, 4 do
  if ARGV[i + 3] == '' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[i], 'a', ARGV[i + 1], 'd', ARGV[i + 2])
  else
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[i], 'a', ARGV[i + 1],
      'd', ARGV[i + 2], 's', ARGV[i + 3])
  end
end
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[4], 'a', '0', 'd', '', 'e', '1')
  redis.call('HSET', KEYS[2], 'ended', '1')
  if redis.call('GET', KEYS[4]) == ARGV[5] then redis.call('DEL', KEYS[4]) end
  redis.call('DEL', KEYS[5])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
return 1
"""

# KEYS: log, meta, fence, alive, active, the thread's runs (the run list a
# thread's readers find it in: kept as long as the run, however long it runs)
# ARGV: fence, retention, ttl ms
_HEARTBEAT = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
redis.call('EXPIRE', KEYS[5], ARGV[2])
redis.call('EXPIRE', KEYS[6], ARGV[2])
return 1
"""

# KEYS: log, meta, alive, active
# ARGV: the stream's last id as the caller read it, the entry's id, a, d, run id, retention
_LOSE = """
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return -3 end
if redis.call('HEXISTS', KEYS[2], 'ended') == 1 then return -2 end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last = '0-0'
if top[1] then last = top[1][1] end
if last ~= ARGV[1] then return -4 end
redis.call('XADD', KEYS[1], ARGV[2], 'a', ARGV[3], 'd', ARGV[4], 'e', '1')
redis.call('HSET', KEYS[2], 'ended', '1')
if redis.call('GET', KEYS[4]) == ARGV[5] then redis.call('DEL', KEYS[4]) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return 1
"""

# A node's readers (runs.redis.presence): per run, 1 (it reads: add or renew
# the node, with the time it lapses; the run was read) or 0 (its last reader left).
# KEYS: (meta, readers) per run; ARGV: node, ttl ms, retention, then 1 or 0 per run
_PRESENCE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS, 2 do
  if ARGV[3 + (i + 1) / 2] == '1' then
    if redis.call('EXISTS', KEYS[i]) == 1 then
      redis.call('HSET', KEYS[i], 'read', '1')
      redis.call('ZADD', KEYS[i + 1], now + tonumber(ARGV[2]), ARGV[1])
      redis.call('EXPIRE', KEYS[i + 1], ARGV[3])
    end
  else
    redis.call('ZREM', KEYS[i + 1], ARGV[1])
  end
end
return 1
"""

# A run's readers now: its node, whether it was read, the nodes whose readers
# have not lapsed; nil when the run has ended or is gone.
# KEYS: meta, readers
_READERS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local f = redis.call('HMGET', KEYS[1], 'node', 'read', 'ended')
if f[3] then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {f[1] or '', f[2] or '', redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}
"""

# Drops a thread's run records (agent_protocol.shared) only where they are still
# what the pruning node read: a record another node wrote since stays.
# KEYS: the thread's records, its cancelled runs
# ARGV: (run id, its record as read) per record; gives the run ids dropped
_DROP_RECORDS = """
local dropped = {}
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('SREM', KEYS[2], ARGV[i])
    dropped[#dropped + 1] = ARGV[i]
  end
end
return dropped
"""

SCRIPTS = {
    "start": _START,
    "append": _APPEND,
    "heartbeat": _HEARTBEAT,
    "lose": _LOSE,
    "presence": _PRESENCE,
    "readers": _READERS,
    "drop_records": _DROP_RECORDS,
}


class Keys:
    __slots__ = ("active", "alive", "fence", "log", "meta", "readers", "runs")

    def __init__(self, thread_id: str, run_id: str):
        run = b"agui:run:" + orjson.dumps([thread_id, run_id])
        thread = b"agui:thread:" + orjson.dumps([thread_id])
        self.log = run + b":log"
        self.meta = run + b":meta"
        self.alive = run + b":alive"
        self.readers = run + b":readers"
        self.fence = thread + b":fence"
        self.active = thread + b":active"
        # The thread's runs as they claimed it: run id by fence (a sorted set).
        self.runs = thread + b":runs"
