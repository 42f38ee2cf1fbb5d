"""Budget counters in Redis: every replica enforces one budget.

Per counter three keys: `…:spent` (committed nano-dollars), `…:holds` (hash: hold id ->
amount) and `…:expiry` (sorted set: hold id by expiry, ms). Reserving runs one Lua script
(atomic on the server): drop expired holds, then take the hold on every counter or on none.
Settling runs another: a marker key set with NX makes it idempotent, then the hold goes and
the actual is added. Every key expires a day after its window ends.

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
local function purge(holds, expiry, now)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  if #gone > 0 then
    redis.call('HDEL', holds, unpack(gone))
    redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now)
  end
  local held = 0
  for _, v in ipairs(redis.call('HVALS', holds)) do held = held + tonumber(v) end
  return held
end
"""

RESERVE = _PURGE + """
-- KEYS: marker, then spent, holds, expiry per counter
-- ARGV: now_ms, expires_ms, amount, hold id, then budget and ttl_s per counter
local now, expires, amount, id = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local n = (#KEYS - 1) / 3
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, 0, 0} end
local taken = 0
for i = 1, n do
  if redis.call('HEXISTS', KEYS[3 * i], id) == 1 then taken = taken + 1 end
end
if taken == n then return {0, 0, 0} end
for i = 1, n do
  local held = purge(KEYS[3 * i], KEYS[3 * i + 1], now)
  local committed = tonumber(redis.call('GET', KEYS[3 * i - 1]) or '0')
  if committed + held + amount > tonumber(ARGV[3 + 2 * i]) then
    return {i, committed, held}
  end
end
for i = 1, n do
  local ttl = ARGV[4 + 2 * i]
  redis.call('HSET', KEYS[3 * i], id, ARGV[3])
  redis.call('ZADD', KEYS[3 * i + 1], expires, id)
  redis.call('EXPIRE', KEYS[3 * i], ttl)
  redis.call('EXPIRE', KEYS[3 * i + 1], ttl)
end
return {0, 0, 0}
"""

SETTLE = _PURGE + """
-- KEYS: marker, then spent, holds, expiry per counter
-- ARGV: actual, marker ttl_s, hold id, now_ms, then ttl_s per counter
-- Returns each counter's committed and held afterwards (for the budget gauges).
local first = redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2])
local actual, id = ARGV[1], ARGV[3]
local out = {}
for i = 1, (#KEYS - 1) / 3 do
  if first then
    redis.call('HDEL', KEYS[3 * i], id)
    redis.call('ZREM', KEYS[3 * i + 1], id)
    if tonumber(actual) > 0 then
      redis.call('INCRBY', KEYS[3 * i - 1], actual)
      redis.call('EXPIRE', KEYS[3 * i - 1], ARGV[4 + i])
    end
  end
  out[2 * i] = purge(KEYS[3 * i], KEYS[3 * i + 1], tonumber(ARGV[4]))
  out[2 * i - 1] = tonumber(redis.call('GET', KEYS[3 * i - 1]) or '0')
end
return out
"""

STANDINGS = _PURGE + """
-- KEYS: spent, holds, expiry per counter; ARGV: now_ms
local out = {}
for i = 1, #KEYS / 3 do
  local held = purge(KEYS[3 * i - 1], KEYS[3 * i], tonumber(ARGV[1]))
  out[2 * i - 1] = tonumber(redis.call('GET', KEYS[3 * i - 2]) or '0')
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
    return [base + ":spent", base + ":holds", base + ":expiry"]


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
        self._standings = self._redis.register_script(STANDINGS)
        self.location = without_password(url)

    async def reserve(
        self, hold_id: str, counters: Sequence[Counter], amount: int, now: float, hold_s: float
    ) -> Verdict:
        keys = [_marker(counters, hold_id)]
        args: list[Any] = [int(now * 1000), int((now + hold_s) * 1000), amount, hold_id]
        for counter in counters:
            keys += _keys(counter)
            args += [counter.budget, counter.ttl_s(now)]
        index, committed, held = await self._call(self._reserve, keys, args)
        if not index:
            return Verdict()
        return Verdict(counters[int(index) - 1], Standing(int(committed), int(held)))

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
        values = await self._call(self._standings, keys, [int(now * 1000)])
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
