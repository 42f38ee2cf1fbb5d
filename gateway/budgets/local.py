"""What `agent-gateway run` spent, from the local span file (AGENT_GATEWAY_HOME/spans/
spans.jsonl): each chat span's usage, priced again from the price table in nano-dollars, and
each compaction's cost (its model call is not a chat span in `run`), counted in the window the
call started in. Sessions behind `serve` write to the same file when it shares the home; their
traces are left out (serve counts them itself, in Redis or in its own memory): a trace is
serve's when its chat spans are the proxy's, which carry the HTTP status of their attempt.
Read-only: the spans are the record of what `run` spent."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.budgets.ledger import Counter, Standing, StoreUnavailable, Verdict
from gateway.telemetry import attributes as A
from gateway.telemetry.pricing import PriceTable, Usage


def chat_usage(attrs: Mapping[str, Any]) -> Usage | None:
    """A chat span's usage, when the span has its final output count (else None)."""
    output = attrs.get(A.GEN_AI_USAGE_OUTPUT_TOKENS)
    if not isinstance(output, int):
        return None
    read = int(attrs.get(A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS) or 0)
    written = int(attrs.get(A.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS) or 0)
    one_hour = attrs.get(A.CHAT_CACHE_CREATION_1H_INPUT_TOKENS)
    five_min = attrs.get(A.CHAT_CACHE_CREATION_5M_INPUT_TOKENS)
    return Usage(
        input_tokens=int(attrs.get(A.GEN_AI_USAGE_INPUT_TOKENS) or 0) - read - written,
        output_tokens=output,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
        cache_creation_5m_input_tokens=five_min if isinstance(five_min, int) else None,
        cache_creation_1h_input_tokens=one_hour if isinstance(one_hour, int) else None,
    )


def chat_model(attrs: Mapping[str, Any]) -> str:
    return str(attrs.get(A.GEN_AI_RESPONSE_MODEL) or attrs.get(A.GEN_AI_REQUEST_MODEL) or "")


def chat_costs(path: Path, prices: PriceTable) -> Iterator[tuple[float, str, int]]:
    """(start in seconds, model, nano-dollars) of every priced chat and compaction of the
    traces `run` wrote to the file."""
    if not path.exists():
        return
    costs: dict[str, list[tuple[float, str, int]]] = {}
    proxied: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            # most lines are tool, turn and root spans: skip them unparsed
            if '"chat' not in line and '"compaction"' not in line:
                continue
            try:
                record = json.loads(line)
                attrs = record.get("attributes") or {}
                trace = str(record.get("trace_id") or "")
                started = int(record.get("start_ns") or 0) / 1e9
                if record.get("name") == "compaction":
                    usd = attrs.get(A.COMPACTION_COST_USD)
                    if isinstance(usd, int | float) and not isinstance(usd, bool) and usd > 0:
                        costs.setdefault(trace, []).append((started, "", round(usd * 1e9)))
                    continue
                if attrs.get(A.GEN_AI_OPERATION_NAME) != A.OP_CHAT:
                    continue
                if A.HTTP_RESPONSE_STATUS_CODE in attrs:
                    proxied.add(trace)
                    continue
                usage = chat_usage(attrs)
                model = chat_model(attrs)
                cost = prices.cost_nanos(model, usage) if usage is not None else None
                if cost is not None:
                    costs.setdefault(trace, []).append((started, model, cost))
            except (ValueError, TypeError, AttributeError):
                continue
    for trace, entries in costs.items():
        if trace not in proxied:
            yield from entries


class SpanFileLedger:
    """Standings read from the span file. Nothing is held or settled here: runs are not
    reserved, and the spans are the record of what they spent (a settle adds nothing)."""

    shared = False

    def __init__(self, path: Path, prices: PriceTable) -> None:
        self.path = path
        self.prices = prices
        self.location = str(path)

    async def standings(self, counters: Sequence[Counter], now: float) -> list[Standing]:
        return self.read(counters)

    async def reserve(
        self, hold_id: str, counters: Sequence[Counter], amount: int, now: float, lease_s: float
    ) -> Verdict:
        raise StoreUnavailable(f"the local span file {self.path} holds nothing")

    async def renew(
        self, holds: Sequence[tuple[str, Sequence[Counter]]], now: float, lease_s: float
    ) -> int:
        return 0

    async def settle(
        self, hold_id: str, counters: Sequence[Counter], actual: int, now: float
    ) -> list[Standing]:
        return self.read(counters)

    async def close(self) -> None:
        return None

    def read(self, counters: Sequence[Counter]) -> list[Standing]:
        spent = [0] * len(counters)
        for started, model, cost in chat_costs(self.path, self.prices):
            for n, counter in enumerate(counters):
                window = counter.window
                if (window.start.timestamp() <= started < window.end.timestamp()
                        and counter.limit.applies_to(model)):
                    spent[n] += cost
        return [Standing(committed=s) for s in spent]
