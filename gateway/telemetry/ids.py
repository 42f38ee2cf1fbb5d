"""Trace and span ids: deterministic (hashed from the session) or random; W3C traceparent."""

from __future__ import annotations

import hashlib
import random
from typing import Protocol

from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.telemetry.model import SpanRef

_W3C = TraceContextTextMapPropagator()


class IdSource(Protocol):
    """Gives the trace id and a span id per (kind, key); the same kind and key, the same id."""

    @property
    def trace_id(self) -> int: ...

    def span_id(self, kind: str, key: str) -> int: ...


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def _nonzero(value: int) -> int:
    return value or 1


class DeterministicIds:
    """Ids hashed from the session id, so stateless replicas agree on one trace.

    trace id = sha256("trace", session)[:16]; span id = sha256(session, kind, key)[:8].
    """

    def __init__(self, session_id: str, *, trace_id: int | None = None) -> None:
        self.session_id = session_id
        self._trace_id = trace_id or _nonzero(
            int.from_bytes(_digest("trace", session_id)[:16], "big")
        )

    @property
    def trace_id(self) -> int:
        return self._trace_id

    def span_id(self, kind: str, key: str) -> int:
        return _nonzero(int.from_bytes(_digest(self.session_id, kind, key)[:8], "big"))


class RandomIds:
    """A random trace id (or the caller's, from TRACEPARENT) and random span ids, memoized."""

    def __init__(self, trace_id: int | None = None, *, rng: random.Random | None = None) -> None:
        self._rng = rng or random.SystemRandom()
        self._trace_id = trace_id or _nonzero(self._rng.getrandbits(128))
        self._spans: dict[tuple[str, str], int] = {}

    @property
    def trace_id(self) -> int:
        return self._trace_id

    def span_id(self, kind: str, key: str) -> int:
        found = self._spans.get((kind, key))
        if found is None:
            found = self._spans[(kind, key)] = _nonzero(self._rng.getrandbits(64))
        return found


def parse_traceparent(traceparent: str | None, tracestate: str | None = None) -> SpanRef | None:
    """A remote parent from W3C headers (the SDK's propagator reads them), or None when absent
    or malformed."""
    carrier = {"traceparent": (traceparent or "").lower(), "tracestate": tracestate or ""}
    found = get_current_span(_W3C.extract(carrier)).get_span_context()
    if not found.is_valid:
        return None
    return SpanRef(
        found.trace_id, found.span_id, found.trace_state.to_header(), is_remote=True,
        sampled=found.trace_flags.sampled,
    )


def traceparent_for(ref: SpanRef) -> dict[str, str]:
    """TRACEPARENT (and TRACESTATE when set) env entries that make `ref` the parent."""
    flags = "01" if ref.sampled else "00"
    env = {"TRACEPARENT": f"00-{ref.trace_id:032x}-{ref.span_id:016x}-{flags}"}
    if ref.trace_state:
        env["TRACESTATE"] = ref.trace_state
    return env


ROOT_SPAN = ("invoke_agent", "root")
"""(kind, key) of a trace's root span."""
TOOL_SPAN_KIND = "execute_tool"
"""Kind of a tool call's span; its key is the tool_use_id."""


def session_root(session_id: str) -> SpanRef:
    """Behind `serve`: the root span of a session's trace, the same on every replica."""
    ids = DeterministicIds(session_id)
    return SpanRef(ids.trace_id, ids.span_id(*ROOT_SPAN))


def session_tool(session_id: str, tool_use_id: str) -> SpanRef:
    """Behind `serve`: a tool call's span in its session's trace."""
    ids = DeterministicIds(session_id)
    return SpanRef(ids.trace_id, ids.span_id(TOOL_SPAN_KIND, tool_use_id))
