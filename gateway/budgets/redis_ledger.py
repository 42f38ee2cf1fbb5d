"""Budget counters in Redis: every replica enforces one budget.

Per counter four keys: `…:spent` (committed nano-dollars), `…:holds` (hash: hold id ->
amount), `…:expiry` (sorted set: hold id by lease expiry, ms) and `…:expired` (hash: hold id
-> amount charged when its lease ran out). Every script first charges the holds whose lease
ran out (a replica that died or lost the store: they are added to spent at the amount held),
so whichever replica touches a counter next settles a dead replica's calls. Reserving runs one
Lua script (atomic on the server): take the hold on every counter or on none. Renewing moves a
hold's expiry on (never recreates a hold already charged). Settling: a marker key set with NX
makes it idempotent, then the hold goes and the actual is added (or, for a hold charged when
its lease ran out, what the actual is beyond it). Every key expires a day after its window
ends.

Needs the `redis` package (`pip install 'agent-gateway[redis]'`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.budgets.ledger import KEY_GRACE_S, Counter, Standing, StoreUnavailable, Verdict
from gateway.errors import ConfigError

PREFIX = "agent-gateway:budget:"
DEFAULT_TIMEOUT_S = 2.0

_PURGE = """
local function purge(spent, holds, expiry, expired, now, ttl)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  if #gone > 0 then
    local amounts = redis.call('HMGET', holds, unpack(gone))
    local total = 0
    for i, id in ipairs(gone) do
      if amounts[i] then
        total = total + tonumber(amounts[i])
        redis.call('HSET', expired, id, amounts[i])
      end
    end
    redis.call('HDEL', holds, unpack(gone))
    redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now)
    if total > 0 then
      redis.call('INCRBY', spent, string.format('%d', total))
      redis.call('EXPIRE', spent, ttl)
      redis.call('EXPIRE', expired, ttl)
    end
  end
  local held = 0
  for _, v in ipairs(redis.call('HVALS', holds)) do held = held + tonumber(v) end
  return held
end
"""

RESERVE = _PURGE + """
-- KEYS: marker, then spent, holds, expiry, expired per counter
-- ARGV: now_ms, expires_ms, amount, hold id, then budget and ttl_s per counter
local now, expires, amount, id = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local n = (#KEYS - 1) / 4
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, 0, 0} end
local taken = 0
for i = 1, n do
  if redis.call('HEXISTS', KEYS[4 * i - 1], id) == 1 then taken = taken + 1 end
end
if taken == n then return {0, 0, 0} end
for i = 1, n do
  local held = purge(KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i], KEYS[4 * i + 1], now,
                     ARGV[4 + 2 * i])
  local committed = tonumber(redis.call('GET', KEYS[4 * i - 2]) or '0')
  if committed + held + amount > tonumber(ARGV[3 + 2 * i]) then
    return {i, committed, held}
  end
end
for i = 1, n do
  local ttl = ARGV[4 + 2 * i]
  redis.call('HSET', KEYS[4 * i - 1], id, ARGV[3])
  redis.call('ZADD', KEYS[4 * i], expires, id)
  redis.call('EXPIRE', KEYS[4 * i - 1], ttl)
  redis.call('EXPIRE', KEYS[4 * i], ttl)
end
return {0, 0, 0}
"""

RENEW = """
-- KEYS: holds, expiry per counter; ARGV: hold id, expires_ms. A hold already charged (its
-- lease ran out) or settled is not recreated.
local renewed = 0
for i = 1, #KEYS / 2 do
  if redis.call('HEXISTS', KEYS[2 * i - 1], ARGV[1]) == 1 then
    redis.call('ZADD', KEYS[2 * i], 'XX', ARGV[2], ARGV[1])
    renewed = renewed + 1
  end
end
return renewed
"""

SETTLE = _PURGE + """
-- KEYS: marker, then spent, holds, expiry, expired per counter
-- ARGV: actual, marker ttl_s, hold id, now_ms, then ttl_s per counter
-- Returns each counter's committed and held afterwards (for the budget gauges).
local first = redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2])
local actual, id, now = tonumber(ARGV[1]), ARGV[3], tonumber(ARGV[4])
local out = {}
for i = 1, (#KEYS - 1) / 4 do
  local spent, holds = KEYS[4 * i - 2], KEYS[4 * i - 1]
  local expiry, expired = KEYS[4 * i], KEYS[4 * i + 1]
  local ttl = ARGV[4 + i]
  if first then
    local add = actual
    if redis.call('HEXISTS', holds, id) == 1 then
      redis.call('HDEL', holds, id)
      redis.call('ZREM', expiry, id)
    else
      local charged = redis.call('HGET', expired, id)
      if charged then
        redis.call('HDEL', expired, id)
        add = math.max(0, actual - tonumber(charged))
      end
    end
    if add > 0 then
      redis.call('INCRBY', spent, string.format('%d', add))
      redis.call('EXPIRE', spent, ttl)
    end
  end
  out[2 * i] = purge(spent, holds, expiry, expired, now, ttl)
  out[2 * i - 1] = tonumber(redis.call('GET', spent) or '0')
end
return out
"""

STANDINGS = _PURGE + """
-- KEYS: spent, holds, expiry, expired per counter; ARGV: now_ms, then ttl_s per counter
local out = {}
for i = 1, #KEYS / 4 do
  local held = purge(KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i],
                     tonumber(ARGV[1]), ARGV[1 + i])
  out[2 * i - 1] = tonumber(redis.call('GET', KEYS[4 * i - 3]) or '0')
  out[2 * i] = held
end
return out
"""


def without_password(url: str) -> str:
    """The URL for messages: a password never appears in a log line or an error."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redis_module() -> Any:
    try:
        import redis
        import redis.asyncio
    except ImportError:
        raise ConfigError(
            "--redis-url needs the redis package: pip install 'agent-gateway[redis]'"
        ) from None
    return redis


def client_options(timeout_s: float) -> dict[str, Any]:
    """What every Redis client of the gateway is built with (owners, budgets, spend)."""
    return {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s}


def _standings(values: Sequence[Any], n: int) -> list[Standing]:
    return [Standing(int(values[2 * i]), int(values[2 * i + 1])) for i in range(n)]


def _keys(counter: Counter) -> list[str]:
    base = PREFIX + counter.key
    return [base + ":spent", base + ":holds", base + ":expiry", base + ":expired"]


def _marker(counters: Sequence[Counter], hold_id: str) -> str:
    # In the team's hash slot, like the counters the scripts touch with it.
    team = counters[0].key.split(":", 1)[0]
    return f"{PREFIX}{team}:settled:{hold_id}"


class RedisLedger:
    """The counters in one Redis (or a Redis Cluster: a team's keys share a hash slot)."""

    shared = True

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        redis = redis_module()
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError, TimeoutError)
        self._redis: Any = redis.asyncio.Redis.from_url(url, **client_options(timeout_s))
        self._reserve = self._redis.register_script(RESERVE)
        self._settle = self._redis.register_script(SETTLE)
        self._renew = self._redis.register_script(RENEW)
        self._standings = self._redis.register_script(STANDINGS)
        self.location = without_password(url)

    async def reserve(
        self, hold_id: str, counters: Sequence[Counter], amount: int, now: float, lease_s: float
    ) -> Verdict:
        keys = [_marker(counters, hold_id)]
        args: list[Any] = [int(now * 1000), int((now + lease_s) * 1000), amount, hold_id]
        for counter in counters:
            keys += _keys(counter)
            args += [counter.budget, counter.ttl_s(now)]
        index, committed, held = await self._call(self._reserve, keys, args)
        if not index:
            return Verdict()
        return Verdict(counters[int(index) - 1], Standing(int(committed), int(held)))

    async def renew(
        self, holds: Sequence[tuple[str, Sequence[Counter]]], now: float, lease_s: float
    ) -> int:
        """One round trip for every hold (a pipeline of one script call each)."""
        if not holds:
            return 0
        expires = int((now + lease_s) * 1000)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for hold_id, counters in holds:
                    keys = [key for c in counters for key in _keys(c)[1:3]]
                    await self._renew(keys=keys, args=[hold_id, expires], client=pipe)
                results = await pipe.execute()
        except self._errors as exc:
            raise StoreUnavailable(
                f"redis {self.location}: {' '.join(str(exc).split()) or type(exc).__name__}"
            ) from None
        return sum(int(r) for r in results)

    async def settle(
        self, hold_id: str, counters: Sequence[Counter], actual: int, now: float
    ) -> list[Standing]:
        keys = [_marker(counters, hold_id)]
        args: list[Any] = [actual, KEY_GRACE_S, hold_id, int(now * 1000)]
        for counter in counters:
            keys += _keys(counter)
            args.append(counter.ttl_s(now))
        values = await self._call(self._settle, keys, args)
        return _standings(values, len(counters))

    async def standings(self, counters: Sequence[Counter], now: float) -> list[Standing]:
        if not counters:
            return []
        keys = [key for counter in counters for key in _keys(counter)]
        args = [int(now * 1000), *(counter.ttl_s(now) for counter in counters)]
        values = await self._call(self._standings, keys, args)
        return _standings(values, len(counters))

    async def close(self) -> None:
        with contextlib.suppress(*self._errors):
            await self._redis.aclose()

    async def _call(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return await script(keys=keys, args=args)
        except self._errors as exc:
            raise StoreUnavailable(
                f"redis {self.location}: {' '.join(str(exc).split()) or type(exc).__name__}"
            ) from None
