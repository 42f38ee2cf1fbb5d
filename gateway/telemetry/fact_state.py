"""What a trace's fact layer (facts.py) remembers per session: the store interface, the
in-process store, and the stored shapes.

Span ids need no memory (they are derived from ids the vantage point sees). The tree does: a
tool's end names its tool_use_id but not the response that asked for it, so the response's
side records `tool_use_id -> message id` for whoever ends the tool. Each session is one small
hash of fields with atomic per-field updates: in process (`MemoryTraceState`: `run`, or one
`serve` replica) or in Redis (`gateway.server.trace_state.RedisTraceState`, `serve` replicas
anywhere). Entries expire a day after the session's last activity. Stores raise OSError when
unavailable.
"""

from __future__ import annotations

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

    def session_fields(self, session: str) -> dict[str, str]:
        """What is kept of `session` (for `restore`)."""
        with self._lock:
            return dict(self._data.get(session, {}))

    def restore(self, session: str, fields: Mapping[str, str]) -> None:
        """`session` as `session_fields` gave it (a store kept in a file between processes)."""
        with self._lock:
            self._data[session] = dict(fields)
            self._seen[session] = self._clock()

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
    """What a held tool span needs from its end: PostToolUse's input, or what `run` read of it."""
    keep = ("session_id", "tool_use_id", "tool_name", "tool_input", "tool_response", "agent_id",
            "duration_ms", "permission_decision", "permission_source", "task_id", "task_status")
    return {k: body[k] for k in keep if k in body}
