"""The trace fact store `serve` replicas share: one Redis hash per session (the store
`serve --redis-url` already uses for session owners). The interface and the in-process store
are gateway/telemetry/fact_state.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from gateway.telemetry.fact_state import TTL_S


class RedisTraceState:
    """One Redis hash per session and a sorted set of last activity times."""

    PREFIX = "agent-gateway:trace:"
    ACTIVE = "agent-gateway:trace-active"

    def __init__(self, url: str, *, timeout_s: float = 2.0) -> None:
        from gateway.server.owners import redis_client

        self._redis, self._errors, self.location = redis_client(url, timeout_s)

    def _key(self, session: str) -> str:
        # Hashed: a session id is caller input.
        return self.PREFIX + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self._errors as exc:
            raise OSError(f"redis {self.location}: {exc}") from None

    def get(self, session: str, field: str) -> str | None:
        value = self._call(lambda: self._redis.hget(self._key(session), field))
        return None if value is None else bytes(value).decode("utf-8", "replace")

    def get_all(self, session: str) -> dict[str, str]:
        raw = self._call(lambda: self._redis.hgetall(self._key(session)))
        return {
            bytes(k).decode("utf-8", "replace"): bytes(v).decode("utf-8", "replace")
            for k, v in raw.items()
        }

    def set(self, session: str, mapping: dict[str, str]) -> None:
        key = self._key(session)

        def write() -> None:
            pipe = self._redis.pipeline()
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, TTL_S)
            pipe.execute()

        self._call(write)

    def set_new(self, session: str, field: str, value: str) -> bool:
        key = self._key(session)
        return bool(self._call(lambda: self._redis.hsetnx(key, field, value)))

    def remove(self, session: str, field: str) -> bool:
        return bool(self._call(lambda: self._redis.hdel(self._key(session), field)))

    def add(self, session: str, field: str, amount: float) -> float:
        key = self._key(session)
        if isinstance(amount, float):
            return float(self._call(lambda: self._redis.hincrbyfloat(key, field, amount)))
        return float(self._call(lambda: self._redis.hincrby(key, field, int(amount))))

    def active_before(self, cutoff_ns: int) -> list[str]:
        raw = self._call(lambda: self._redis.zrangebyscore(self.ACTIVE, 0, cutoff_ns))
        return [bytes(s).decode("utf-8", "replace") for s in raw]

    def touch(self, session: str, at_ns: int) -> None:
        self._call(lambda: self._redis.zadd(self.ACTIVE, {session: at_ns}, gt=True))

    def forget_activity(self, session: str) -> None:
        self._call(lambda: self._redis.zrem(self.ACTIVE, session))
