"""`spend` without Redis: what `agent-gateway run` spent, from the span file: its chats and its
compactions, not the sessions `serve` proxied into the same home (serve counts those)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from gateway.budgets.ledger import Counter
from gateway.budgets.limits import Limit, window_of
from gateway.budgets.local import SpanFileLedger
from gateway.telemetry.pricing import load_price_table

NANOS = 1_000_000_000


def _chat(trace: str, start_ns: int, **extra: object) -> dict[str, object]:
    return {"name": "chat claude-opus-5-5", "trace_id": trace, "start_ns": start_ns,
            "attributes": {"gen_ai.operation.name": "chat",
                           "gen_ai.response.model": "claude-opus-5-5",
                           "gen_ai.usage.input_tokens": 1_000_000,
                           "gen_ai.usage.output_tokens": 0, **extra}}


def test_run_chats_and_compactions_count_and_serve_sessions_do_not(tmp_path: Path) -> None:
    now = time.time()
    start = int(now * 1e9)
    spans = tmp_path / "spans.jsonl"
    lines = [
        _chat("run-trace", start),  # $4 at claude-opus-5-5's input price
        {"name": "compaction", "trace_id": "run-trace", "start_ns": start,
         "attributes": {"agent_gateway.compaction.cost_usd": 0.5}},
        _chat("serve-trace", start, **{"http.response.status_code": 200}),
        _chat("serve-trace", start, **{"http.response.status_code": 200}),
        {"name": "compaction", "trace_id": "serve-trace", "start_ns": start,
         "attributes": {"agent_gateway.compaction.cost_usd": 0.5}},
    ]
    spans.write_text("".join(json.dumps(line) + "\n" for line in lines))
    prices = load_price_table()
    counter = Counter("local", Limit(100 * NANOS, "day"), window_of("day", now))
    [standing] = SpanFileLedger(spans, prices).read([counter])
    assert standing.committed == round(4.5 * NANOS)
