"""What the server-mode trace builder remembers per session, shared between replicas.

Span ids need no memory (they are derived from the session, message and tool_use ids). The
tree does: a PostToolUse names its tool_use_id but not the response that asked for it, so
the response's replica records `tool_use_id -> message id` for the replica that ends the
tool. Each session is one small hash of fields with atomic per-field updates: in process
(`MemoryTraceState`, one replica) or in Redis (`RedisTraceState`, replicas anywhere; the
store `serve --redis-url` already uses for session owners). Entries expire a day after the
session's last activity. Stores raise OSError when unavailable.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gateway.types import Decision

TTL_S = 24 * 3600
CLOSED_KEEP_S = 600
"""In memory, a session whose root closed is forgotten after this (late events of it go
under a new root); Redis keeps every session TTL_S."""


class TraceState(Protocol):
    location: str

    def get(self, session: str, field: str) -> str | None: ...

    def get_all(self, session: str) -> dict[str, str]: ...

    def set(self, session: str, mapping: dict[str, str]) -> None: ...

    def set_new(self, session: str, field: str, value: str) -> bool:
        """Set the field unless it exists; True when this call set it."""
        ...

    def remove(self, session: str, field: str) -> bool:
        """Delete the field; True when this call deleted it (exactly one caller wins)."""
        ...

    def add(self, session: str, field: str, amount: float) -> float: ...

    def active_before(self, cutoff_ns: int) -> list[str]:
        """Sessions whose last activity is older than `cutoff_ns`."""
        ...

    def touch(self, session: str, at_ns: int) -> None: ...

    def forget_activity(self, session: str) -> None: ...


class MemoryTraceState:
    """One replica's memory: correct for a single replica, the default without Redis."""

    location = "memory"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._data: dict[str, dict[str, str]] = {}
        self._active: dict[str, int] = {}
        self._seen: dict[str, float] = {}
        self._closed: dict[str, float] = {}
        self._writes = 0
        self._clock = clock
        self._lock = threading.Lock()

    def _hash(self, session: str) -> dict[str, str]:
        self._seen[session] = self._clock()
        return self._data.setdefault(session, {})

    def get(self, session: str, field: str) -> str | None:
        with self._lock:
            return self._data.get(session, {}).get(field)

    def get_all(self, session: str) -> dict[str, str]:
        with self._lock:
            return dict(self._data.get(session, {}))

    def set(self, session: str, mapping: dict[str, str]) -> None:
        with self._lock:
            self._hash(session).update(mapping)
            self._expire()

    def set_new(self, session: str, field: str, value: str) -> bool:
        with self._lock:
            data = self._hash(session)
            if field in data:
                return False
            data[field] = value
            return True

    def remove(self, session: str, field: str) -> bool:
        with self._lock:
            return self._data.get(session, {}).pop(field, None) is not None

    def add(self, session: str, field: str, amount: float) -> float:
        with self._lock:
            data = self._hash(session)
            total = float(data.get(field) or 0) + amount
            data[field] = repr(total) if isinstance(amount, float) else str(int(total))
            return total

    def active_before(self, cutoff_ns: int) -> list[str]:
        with self._lock:
            return [s for s, at in self._active.items() if at < cutoff_ns]

    def touch(self, session: str, at_ns: int) -> None:
        with self._lock:
            self._active[session] = max(at_ns, self._active.get(session, 0))

    def forget_activity(self, session: str) -> None:
        with self._lock:
            self._active.pop(session, None)
            self._closed[session] = self._clock()

    def _expire(self) -> None:
        """Every 1,024 writes: drop sessions closed a while ago, or silent for TTL_S."""
        self._writes += 1
        if self._writes % 1024:
            return
        now = self._clock()
        stale = [s for s, at in self._closed.items() if at < now - CLOSED_KEEP_S]
        stale += [s for s, at in self._seen.items() if at < now - TTL_S]
        for session in stale:
            self._seen.pop(session, None)
            self._data.pop(session, None)
            self._active.pop(session, None)
            self._closed.pop(session, None)


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


# --- the stored shapes ------------------------------------------------------------------
def load_json(raw: str | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


DECISION_KEPT = ("kind", "rule_id", "reason", "would_deny", "enforced_by")
"""What a tool span shows of a decision; never `matched` (the command's text) in the shared
trace state, content capture or not."""


def decision_json(decision: Decision) -> str:
    return json.dumps({k: getattr(decision, k) for k in DECISION_KEPT})


def decision_from(raw: str | None) -> Decision | None:
    data = load_json(raw)
    if not isinstance(data, dict):
        return None
    return Decision(**{k: data[k] for k in DECISION_KEPT if k in data})


def slim_post_tool_use(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a pending Task/Agent call's span needs from its PostToolUse input."""
    keep = ("session_id", "tool_use_id", "tool_name", "tool_input", "tool_response", "agent_id",
            "duration_ms")
    return {k: body[k] for k in keep if k in body}
