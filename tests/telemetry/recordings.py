"""Feed the recorded Claude Code 2.1.332 streams through TraceBuilder."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gateway.telemetry.ids import DeterministicIds
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.spans import TraceBuilder
from tests.fixtures import CLAUDE_CODE_RECORDINGS

REFERENCE = CLAUDE_CODE_RECORDINGS
T0 = 1_700_000_000_000_000_000
STEP = 10_000_000  # 10 ms between recorded lines

Hook = Callable[[TraceBuilder, dict[str, Any], int], list[SpanSpec]]


def messages(name: str) -> list[dict[str, Any]]:
    path = REFERENCE / f"stream-json.{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(
    name: str, *, before: Hook | None = None, builder: TraceBuilder | None = None
) -> list[SpanSpec]:
    """All spans of one recording; `before` is called ahead of each message (hook events)."""
    b = builder or TraceBuilder(ids=DeterministicIds(f"test-{name}"), start_ns=T0)
    out: list[SpanSpec] = []
    at = T0
    for msg in messages(name):
        at += STEP
        if before is not None:
            out += before(b, msg, at - STEP // 2)
        out += b.feed(msg, at)
    out += b.finish(at + STEP)
    return out


def named(spans: list[SpanSpec], prefix: str) -> list[SpanSpec]:
    return [s for s in spans if s.name.startswith(prefix)]


def root(spans: list[SpanSpec]) -> SpanSpec:
    (found,) = [s for s in spans if s.name == "invoke_agent claude-code"]
    return found


def children(spans: list[SpanSpec], parent: SpanSpec) -> list[SpanSpec]:
    return [s for s in spans if s.parent_span_id == parent.span_id]
