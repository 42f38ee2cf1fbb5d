"""Team budgets at the proxy, in process: refused before any upstream call with a message
naming team, budget and reset; charged exactly the priced responses; the store's failure
modes; remote runs checked before they start."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.budgets.ledger import Ledger, MemoryLedger
from gateway.budgets.limits import Limit, window_of
from gateway.budgets.redis_ledger import RedisLedger
from gateway.budgets.request import FRAMING_TOKENS
from gateway.scripted import ScriptedServer
from gateway.server.budget_gate import BudgetGate
from gateway.server.owners import LocalSessionOwners
from gateway.telemetry.metrics import GatewayMetrics, MetricSettings, open_metrics
from gateway.telemetry.pricing import Usage, load_price_table
from gateway.tenancy.tokens import Caller, TokenTable
from tests.prometheus_text import series
from tests.redis_server import free_port
from tests.server.conftest import AppFactory

PRICES = load_price_table()
NOW = 1_800_000_000.0  # 2027-01-15 08:00 UTC
USD = 1_000_000_000
A = {"Authorization": "Bearer tok-a", "X-Claude-Code-Session-Id": "sess-a"}
B = {"Authorization": "Bearer tok-b", "X-Claude-Code-Session-Id": "sess-b"}
FREE = {"Authorization": "Bearer tok-free"}
USAGE = {"input_tokens": 1200, "output_tokens": 42}
ONE = PRICES.cost_nanos("claude-opus-5-5", Usage(1200, 42))
assert ONE == 5_640_000


def request_body(max_tokens: int = 100, model: str = "claude-opus-5-5") -> dict[str, Any]:
    return {"model": model, "max_tokens": max_tokens, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}


def table(usd_a: float = 1.0) -> TokenTable:
    return TokenTable({
        "tok-a": Caller("team-a", budget=(Limit(round(usd_a * USD), "day"),)),
        "tok-b": Caller("team-b", budget=(Limit(USD, "day"),)),
        "tok-free": Caller("free"),
    })


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def upstream() -> Iterator[ScriptedServer]:
    server = ScriptedServer(
        {"responses": [], "default": {"text": "hello", "usage": USAGE, "times": 0}}
    ).start()
    yield server
    server.stop()


async def app_with_gate(
    make_client: AppFactory, tmp_path: Path, upstream: str, tokens: TokenTable, *,
    ledger: Ledger | None = None, metrics: GatewayMetrics | None = None, **gate_options: Any,
) -> tuple[Any, BudgetGate]:
    gate = BudgetGate(ledger or MemoryLedger(), PRICES, tokens.budgets(), metrics=metrics,
                      **gate_options)
    client, _ = await make_client(
        tokens=tokens, upstream=upstream, owners=LocalSessionOwners(tmp_path / "sessions"),
        gate=gate, metrics=metrics,
    )
    return client, gate


async def committed(gate: BudgetGate, team: str) -> int:
    limits = gate.budgets[team]
    (standing,) = await gate.ledger.standings(gate.counters(team, limits, None), gate.clock())
    assert standing.held == 0, "a hold was left open"
    return standing.committed


async def test_over_budget_refused_before_any_upstream_call(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    # Each call holds the most it can cost, ~11 mUSD (its bytes and the API's framing as
    # tokens at the 1-hour cache write price, and 100 output tokens), and costs 5.64 mUSD
    # (the scripted usage): with a budget of 2 cents the third finds 11.28 mUSD spent.
    clock = Clock()
    client, gate = await app_with_gate(make_client, tmp_path, upstream.url, table(0.02),
                                       clock=clock)
    statuses, messages = [], []
    for _ in range(3):
        resp = await client.post("/v1/messages", json=request_body(), headers=A)
        statuses.append(resp.status)
        messages.append(await resp.text())
        await drain(gate)
    assert statuses == [200, 200, 402]
    assert await committed(gate, "team-a") == 2 * ONE
    assert len(upstream.requests) == 2  # the refused one never left the gateway
    error = json.loads(messages[2])["error"]
    assert error["type"] == "billing_error"
    size = len(json.dumps(request_body()).encode())
    hold = (size + FRAMING_TOKENS) * 8000 + 100 * 20000
    assert error["message"] == (
        "agent-gateway: team team-a has $0.00872 left of its budget of $0.02 a day, and this "
        f"call may cost up to ${hold / USD:.6f} ($0.01128 spent). "
        "The budget resets at 2027-01-16 00:00 UTC."
    ).replace(f"${hold / USD:.6f}", f"${hold / USD:.6f}".rstrip("0"))
    # spent past the budget (a run's cost, say): the message says so
    (counter,) = gate.counters("team-a", gate.budgets["team-a"], None)
    await gate.ledger.settle("a-run", [counter], 10_000_000, gate.clock())
    resp = await client.post("/v1/messages", json=request_body(), headers=A)
    assert (await resp.json())["error"]["message"] == (
        "agent-gateway: team team-a is over its budget of $0.02 a day ($0.02128 spent). "
        "The budget resets at 2027-01-16 00:00 UTC."
    )
    # team B and a team without a budget are not affected
    for headers in (B, FREE):
        resp = await client.post("/v1/messages", json=request_body(), headers=headers)
        assert resp.status == 200, await resp.text()
    # the next window: team A works again
    clock.now = window_of("day", NOW).end.timestamp()
    resp = await client.post("/v1/messages", json=request_body(), headers=A)
    assert resp.status == 200
    await resp.read()
    await drain(gate)
    assert await committed(gate, "team-a") == ONE


async def drain(gate: BudgetGate) -> None:
    import asyncio

    for _ in range(200):
        if not gate.pending:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("settles did not finish")


async def test_a_call_that_would_not_fit_is_refused_with_what_is_left(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, table(0.01))
    resp = await client.post("/v1/messages", json=request_body(max_tokens=1000), headers=A)
    message = (await resp.json())["error"]["message"]
    assert resp.status == 402 and "has $0.01 left" in message and "may cost up to" in message
    assert not upstream.requests


async def test_charged_spend_is_the_priced_responses_exactly(
    make_client: AppFactory, tmp_path: Path
) -> None:
    usages = [
        {"input_tokens": 1234, "output_tokens": 57, "cache_read_input_tokens": 300,
         "cache_creation_input_tokens": 50},
        {"input_tokens": 10, "output_tokens": 4000, "cache_creation_input_tokens": 2000,
         "cache_creation_1h_input_tokens": 500},
        {"input_tokens": 7, "output_tokens": 1},
    ]
    scenario = {"responses": [{"text": "r", "usage": u} for u in usages]}
    with ScriptedServer(scenario) as server:
        client, gate = await app_with_gate(make_client, tmp_path, server.url, table(5))
        for _ in usages:
            resp = await client.post("/v1/messages", json=request_body(4096), headers=A)
            assert resp.status == 200
            await resp.read()
        non_streaming = {**request_body(), "stream": False}
        resp = await client.post("/v1/messages", json=non_streaming, headers=A)  # the default
        assert (await resp.json())["usage"]["output_tokens"] == 42
        await drain(gate)
    expected = sum(
        PRICES.cost_nanos("claude-opus-5-5", Usage(
            u["input_tokens"], u["output_tokens"], u.get("cache_read_input_tokens", 0),
            u.get("cache_creation_input_tokens", 0),
            cache_creation_1h_input_tokens=u.get("cache_creation_1h_input_tokens", 0),
        )) or 0
        for u in [*usages, {"input_tokens": 1200, "output_tokens": 42}]
    )
    assert await committed(gate, "team-a") == expected


async def test_failed_calls_cost_nothing_and_leave_no_hold(
    make_client: AppFactory, tmp_path: Path
) -> None:
    scenario = {"responses": [{"status": 529, "error_type": "overloaded_error"}],
                "default": None}
    with ScriptedServer(scenario) as server:
        client, gate = await app_with_gate(make_client, tmp_path, server.url, table())
        resp = await client.post("/v1/messages", json=request_body(), headers=A)
        assert resp.status == 529
        resp = await client.post("/v1/messages", json=request_body(), headers=A)
        assert resp.status == 500  # nothing scripted
    client, gate2 = await app_with_gate(make_client, tmp_path, f"http://127.0.0.1:{free_port()}",
                                        table())
    resp = await client.post("/v1/messages", json=request_body(), headers=A)
    assert resp.status == 502
    for g in (gate, gate2):
        await drain(g)
        assert await committed(g, "team-a") == 0


async def test_a_model_without_a_price_is_refused_for_a_budgeted_team(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, table())
    resp = await client.post("/v1/messages", json=request_body(model="claude-unknown"), headers=A)
    body = await resp.json()
    assert resp.status == 402 and "'claude-unknown' has no price" in body["error"]["message"]
    resp = await client.post("/v1/messages", json=request_body(model="claude-unknown"),
                             headers=FREE)
    assert resp.status == 200
    assert [r.headers.get("Authorization") for r in upstream.requests] == [None]


async def test_count_tokens_is_free(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, table(0.000001))
    resp = await client.post("/v1/messages/count_tokens", json=request_body(), headers=A)
    assert resp.status == 200


async def test_redis_down_fail_closed_refuses_with_the_reason(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    dead = RedisLedger(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.3)
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, table(), ledger=dead)
    resp = await client.post("/v1/messages", json=request_body(), headers=A)
    message = (await resp.json())["error"]["message"]
    assert resp.status == 402 and "budget cannot be checked" in message
    assert "fail_closed" in message and "redis 127.0.0.1" not in message.split("(")[0]
    assert not upstream.requests
    resp = await client.post("/v1/messages", json=request_body(), headers=FREE)
    assert resp.status == 200  # no budget, no store needed


async def test_redis_down_fail_open_forwards_with_a_metric_and_a_log_line(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = open_metrics(MetricSettings(exporters=("prometheus",)))
    dead = RedisLedger(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.3)
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, table(), ledger=dead,
                                    metrics=metrics, fail_open=True)
    with caplog.at_level(logging.WARNING, "gateway.server.budgets"):
        resp = await client.post("/v1/messages", json=request_body(), headers=A)
        assert resp.status == 200
    assert "without a budget check (fail_open)" in caplog.text
    text = metrics.prometheus_text()
    assert series(text, "agent_gateway_budget_unenforced_total") == {
        (("agent_gateway_team", "team-a"),): 1.0
    }


async def test_a_remote_run_of_a_team_over_budget_is_refused(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    tokens = table(0.000001)
    gate = BudgetGate(MemoryLedger(), PRICES, tokens.budgets())
    (counter,) = gate.counters("team-a", gate.budgets["team-a"], None)
    await gate.ledger.settle("spent", [counter], 1000, gate.clock())
    (tmp_path / "runs").mkdir()
    client, _ = await make_client(tokens=tokens, upstream=upstream.url,
                                  owners=LocalSessionOwners(tmp_path / "sessions"),
                                  gate=gate, runs_roots=[str(tmp_path / "runs")])
    resp = await client.post("/v1/runs", json={"prompt": "x", "cwd": str(tmp_path / "runs")},
                             headers=A)
    assert resp.status == 402
    assert "team team-a is over its budget" in (await resp.json())["error"]


def per_model_table(model_usd: float) -> TokenTable:
    return TokenTable({"tok-a": Caller("team-a", budget=(
        Limit(10 * USD, "day"), Limit(round(model_usd * USD), "day", "claude-opus-5-5"),
    ))})


async def test_a_per_model_limit_applies_to_the_model_the_api_bills(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    # A dated id is the same model to the API, and to its price and its limit.
    client, gate = await app_with_gate(make_client, tmp_path, upstream.url,
                                       per_model_table(0.001))
    resp = await client.post("/v1/messages", json=request_body(model="claude-opus-5-5-20261101"),
                             headers=A)
    assert resp.status == 402
    assert "of its budget of $0.001 a day for claude-opus-5-5" in (await resp.json())["error"][
        "message"]
    client, gate = await app_with_gate(make_client, tmp_path, upstream.url, per_model_table(1))
    resp = await client.post("/v1/messages", json=request_body(model="claude-opus-5-5@20261101"),
                             headers=A)
    assert resp.status == 200
    await resp.read()
    await drain(gate)
    counters = gate.counters("team-a", gate.budgets["team-a"], "claude-opus-5-5")
    assert len(counters) == 2
    assert [s.committed for s in await gate.ledger.standings(counters, gate.clock())] == [ONE] * 2


@pytest.mark.parametrize("body", [
    # which "model" the API reads is not certain: the body is refused, not guessed at
    b'{"model":"claude-cheap","max_tokens":100,"messages":[],"model":"claude-opus-5-5"}',
    b'{"model":"claude-opus-5-5","max_tokens":1,"messages":[],"max_tokens":100000}',
    b'{"model":"claude-opus-5-5","messages":[]}',
])
async def test_a_body_whose_cost_is_not_certain_is_refused_for_a_budgeted_team(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer, body: bytes
) -> None:
    client, _ = await app_with_gate(make_client, tmp_path, upstream.url, per_model_table(1))
    resp = await client.post("/v1/messages", data=body,
                             headers={**A, "Content-Type": "application/json"})
    error = (await resp.json())["error"]
    assert resp.status == 400 and error["type"] == "invalid_request_error", error
    assert error["message"].startswith("agent-gateway: ")
    assert not upstream.requests


async def test_a_large_body_is_read_in_a_process_and_priced_or_refused(
    make_client: AppFactory, tmp_path: Path, upstream: ScriptedServer
) -> None:
    # Over 1 MiB, a budgeted request is parsed in a process of its own (a thread would hold
    # the GIL, and so the event loop): its hold and its refusals are the same.
    client, gate = await app_with_gate(make_client, tmp_path, upstream.url, table(1.0))
    big = {**request_body(), "messages": [{"role": "user", "content": "x" * (2 << 20)}]}
    resp = await client.post("/v1/messages", json=big, headers=A)
    message = (await resp.json())["error"]["message"]
    assert resp.status == 402 and "this call may cost up to $16.7" in message  # 2 MiB at $8/M
    client, gate = await app_with_gate(make_client, tmp_path, upstream.url, table(20.0))
    resp = await client.post("/v1/messages", json=big, headers=A)
    assert resp.status == 200
    await resp.read()
    await drain(gate)
    assert await committed(gate, "team-a") == ONE
    twice = json.dumps(big).encode()[:-1] + b', "model": "claude-cheap"}'
    resp = await client.post("/v1/messages", data=twice,
                             headers={**A, "Content-Type": "application/json"})
    error = (await resp.json())["error"]
    assert resp.status == 400 and "gives 'model' twice" in error["message"]
    assert len(upstream.requests) == 1
