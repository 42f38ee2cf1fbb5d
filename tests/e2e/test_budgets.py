"""Team budgets across replicas, with the real Claude Code against the scripted API.

Two `serve` replicas share a real redis-server; team A's spend through both adds up, exactly,
to the priced responses; over budget, its next session fails at once with the budget message
and no request of it reaches the API, while team B keeps working. The metrics the replicas
expose (Prometheus text, parsed; OTLP, decoded) agree with the API and the audit log.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.telemetry.pricing import Usage, load_price_table
from tests.e2e.budget_scenario import BIG, SCENARIO, SMALL
from tests.e2e.harness import RunOutcome, Sandbox, claude_run, gateway_cli, print_settings
from tests.otlp_receiver import OtlpReceiver
from tests.prometheus_text import samples, series, total
from tests.redis_server import RedisServer
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
PRICES = load_price_table()
MODEL = "claude-opus-5-5"
SCRAPE = "scrape-token"
POLICY = "version: 1\nname: org\npermissions:\n  allow:\n    - Bash(echo:*)\n"


def nanos(usage: dict[str, int]) -> int:
    cost = PRICES.cost_nanos(MODEL, Usage(usage["input_tokens"], usage["output_tokens"]))
    assert cost is not None
    return cost


def scrape(url: str) -> bytes:
    request = urllib.request.Request(url + "/metrics",
                                     headers={"Authorization": f"Bearer {SCRAPE}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return bytes(response.read())


def audit(sandbox: Sandbox) -> list[dict[str, Any]]:
    path = sandbox.gateway_home / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


class Replicas:
    def __init__(self, sandbox: Sandbox, tmp_path: Path, upstream: str, redis: str,
                 env: dict[str, str], *, args: tuple[str, ...] = ()) -> None:
        policy = tmp_path / "org.yaml"
        policy.write_text(POLICY)
        self.logs = [sandbox.home / "serve-1.log", sandbox.home / "serve-2.log"]
        self.all = [
            ServeProcess([str(policy)], upstream, env, log=log,
                         args=["--redis-url", redis, *args])
            for log in self.logs
        ]
        self.settings = []
        for n, replica in enumerate(self.all):
            path = tmp_path / f"settings-{n}.json"
            print_settings(replica.url, path)
            self.settings.append(path)

    def session(self, sandbox: Sandbox, n: int, token: str, prompt: str = "check") -> RunOutcome:
        replica = self.all[n]
        env = sandbox.env(ANTHROPIC_BASE_URL=replica.url, AGENT_GATEWAY_TOKEN=token)
        return claude_run(sandbox, prompt, "--settings", str(self.settings[n]), env=env,
                          timeout=120)

    def stop(self) -> None:
        for replica in self.all:
            replica.stop()


def tokens_file(tmp_path: Path, usd_a: float, usd_b: float = 10.0) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text(
        "tokens:\n"
        f"  - {{token: tok-a, name: team-a, budget: {{usd: {usd_a}, per: day}}}}\n"
        f"  - {{token: tok-b, name: team-b, budget: {{usd: {usd_b}, per: day}}}}\n"
    )
    return path


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis") as server:
        yield server


def test_two_replicas_enforce_one_budget_and_report_it(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer], tmp_path: Path,
    redis: RedisServer,
) -> None:
    upstream = scripted(SCENARIO)
    tokens = tokens_file(tmp_path, usd_a=1.5)
    with OtlpReceiver() as receiver:
        env = sandbox.env(
            AGENT_GATEWAY_TOKENS_FILE=str(tokens), AGENT_GATEWAY_METRICS_TOKEN=SCRAPE,
            OTEL_METRICS_EXPORTER="prometheus,otlp", OTEL_METRIC_EXPORT_INTERVAL="300",
            OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=receiver.endpoint + "/v1/metrics",
        )
        # The opt-in overshoot mode (docs/metrics.md): Claude Code asks for 128,000 max_tokens,
        # $2.56 of Opus output, which the default holds whole; these budgets are about sharing
        # counters between replicas, with sessions that cost cents.
        replicas = Replicas(sandbox, tmp_path, upstream.url, redis.url, env,
                            args=("--reserve-output-tokens", "4096"))
        try:
            # Each full session costs $0.40648; team A has $1.50 a day. Each call holds about
            # $0.49 (a ~50 KB body at the 1-hour cache write price, 4,096 output tokens).
            first = replicas.session(sandbox, 0, "tok-a")
            second = replicas.session(sandbox, 1, "tok-a")
            for outcome in (first, second):
                assert outcome.returncode == 0 and outcome.result["result"] == "done", \
                    outcome.stderr[-2000:]
            # $0.81296 spent: the third session's first call fits ($0.40084), its second not
            third = replicas.session(sandbox, 0, "tok-a")
            assert third.returncode != 0
            assert "team team-a has $0.2862 left of its budget of $1.50 a day" in third.stdout
            sent = len(upstream.requests)
            started = time.monotonic()
            fourth = replicas.session(sandbox, 1, "tok-a")
            took = time.monotonic() - started
            message = fourth.result["result"]
            assert fourth.returncode != 0 and took < 15, (took, fourth.stdout[-1000:])
            assert message.startswith("API Error: 402 agent-gateway: team team-a has $0.2862 "
                                      "left of its budget of $1.50 a day, and this call may cost "
                                      "up to $")
            assert "($1.21 spent)." in message
            assert "The budget resets at" in message and " UTC." in message
            assert len(upstream.requests) == sent  # nothing of team A reached the API
            # team B keeps working, through either replica
            for n in (1, 0):
                b = replicas.session(sandbox, n, "tok-b")
                assert b.returncode == 0 and b.result["result"] == "done", b.stdout[-1000:]
            texts = [scrape(r.url) for r in replicas.all]
        finally:
            replicas.stop()
        exported = receiver.latest_points()

    # Spend: exactly the priced responses of each team, whichever replica served them.
    a_sessions = {o.session_id for o in (first, second, third, fourth)}
    a_requests = [r for r in upstream.requests if r.session_id in a_sessions]
    b_requests = [r for r in upstream.requests if r.session_id not in a_sessions]
    assert not [r for r in a_requests if r.session_id == fourth.session_id]
    assert len(a_requests) == 5 and len(b_requests) == 4
    priced = {0: nanos(BIG), 1: nanos(SMALL)}
    a_cost = sum(priced[r.response_index] for r in a_requests)
    b_cost = sum(priced[r.response_index] for r in b_requests)
    assert a_cost == 1_213_800_000
    shown = gateway_cli(sandbox, "spend", "--json", "--redis-url", redis.url,
                        "--tokens-file", str(tokens))
    rows = {row["team"]: row for row in map(json.loads, shown.stdout.splitlines())}
    assert rows["team-a"]["spent_nanos"] == a_cost and rows["team-a"]["held_nanos"] == 0
    assert rows["team-b"]["spent_nanos"] == b_cost and rows["team-b"]["held_nanos"] == 0
    assert rows["team-a"]["remaining_usd"] == pytest.approx(1.5 - a_cost / 1e9)
    table = gateway_cli(sandbox, "spend", "--redis-url", redis.url, "--tokens-file",
                        str(tokens), "--team", "team-a").stdout
    assert "team-a" in table and "$1.21" in table and "team-b" not in table

    # Prometheus: tokens and cost per team equal what the API answered; decisions and
    # refusals equal what the audit log recorded.
    def both(name: str, **match: str) -> float:
        return sum(total(text, name, **match) for text in texts)

    for team, requests in (("team-a", a_requests), ("team-b", b_requests)):
        scripted_usage = [BIG if r.response_index == 0 else SMALL for r in requests]
        for kind in ("input", "output"):
            expected = sum(u[f"{kind}_tokens"] for u in scripted_usage)
            got = both("gen_ai_client_token_usage_sum", agent_gateway_team=team,
                       gen_ai_token_type=kind, gen_ai_request_model=MODEL)
            assert got == expected, (team, kind)
        assert both("gen_ai_client_token_usage_count", agent_gateway_team=team,
                    gen_ai_token_type="input") == len(requests)
        assert both("gen_ai_client_operation_duration_seconds_count",
                    agent_gateway_team=team) == len(requests)
        cost = (a_cost if team == "team-a" else b_cost) / 1e9
        assert both("agent_gateway_cost_USD_total", agent_gateway_team=team) == \
            pytest.approx(cost, rel=1e-12)
    records = audit(sandbox)
    decided = Tally((r["tenant"], r["decision"], r["rule_id"], r["tool"])
                    for r in records if "tool" in r and r.get("event", "PreToolUse") ==
                    "PreToolUse")
    counted = Tally()
    for text in texts:
        for name, labels, value in samples(text):
            if name == "agent_gateway_policy_decisions_total":
                key = (labels["agent_gateway_team"], labels["agent_gateway_policy_decision"],
                       labels["agent_gateway_policy_rule_id"], labels["gen_ai_tool_name"])
                counted[key] += int(value)
                assert labels["agent_gateway_policy_mode"] == "enforce"
    assert decided and counted == decided
    refusals = [r for r in records if r.get("rule_id") == "gateway.budget"]
    assert len(refusals) == 2 and {r["tenant"] for r in refusals} == {"team-a"}
    assert both("agent_gateway_budget_refusals_total", agent_gateway_team="team-a",
                agent_gateway_budget_reason="over_budget") == 2
    remaining = series(texts[1], "agent_gateway_budget_remaining_USD")
    assert remaining[(("agent_gateway_budget_window", "day"), ("agent_gateway_team", "team-a"))
                     ] == pytest.approx(1.5 - a_cost / 1e9)
    hooks = both("agent_gateway_hook_duration_seconds_count",
                 agent_gateway_hook_event="PreToolUse")
    assert hooks == sum(counted.values())
    for text in texts:  # bounded: no session id, prompt or command in any label
        for _, labels, _ in samples(text):
            values = " ".join(labels.values())
            assert not any(s in values for s in a_sessions) and "echo hi" not in values

    # OTLP: the same series, decoded from what each replica exported.
    def otlp(name: str, key: str = "value", **match: str) -> float:
        return sum(p[key] for p in exported if p["name"] == name
                   and all(p["attributes"].get(k) == v for k, v in match.items()))

    for team, cost in (("team-a", a_cost), ("team-b", b_cost)):
        assert otlp("agent_gateway.cost", **{"agent_gateway.team": team}) == \
            pytest.approx(cost / 1e9, rel=1e-12)
        assert otlp("gen_ai.client.token.usage", "sum", **{
            "agent_gateway.team": team, "gen_ai.token.type": "input",
        }) == both("gen_ai_client_token_usage_sum", agent_gateway_team=team,
                   gen_ai_token_type="input")
    assert otlp("agent_gateway.policy.decisions") == sum(counted.values())
    assert {p["unit"] for p in exported if p["name"] == "agent_gateway.cost"} == {"USD"}
    token_types = {p["type"] for p in exported if p["name"] == "gen_ai.client.token.usage"}
    assert token_types == {"histogram"}
    for log in replicas.logs:
        text = log.read_text()
        assert "Traceback" not in text
        assert "team budgets for team-a, team-b, counted in redis://" in text


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_the_budget_resets_at_the_window_boundary(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer], tmp_path: Path,
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In process, so the gateway's clock can be moved to midnight UTC."""
    from gateway.budgets.limits import Limit, window_of
    from gateway.budgets.redis_ledger import RedisLedger
    from gateway.server.app import ServeConfig, create_app
    from gateway.server.budget_gate import BudgetGate
    from gateway.server.owners import RedisSessionOwners
    from gateway.server.service import GatewayService
    from gateway.tenancy.tokens import Caller, TokenTable
    from tests.server.processes import ThreadedApp

    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(sandbox.gateway_home))
    upstream = scripted({"responses": [], "default": {"text": "done", "usage": BIG, "times": 0}})
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    tokens = TokenTable({"tok-a": Caller("team-a", budget=(Limit(600_000_000, "day"),))})
    clock = Clock()
    gate = BudgetGate(RedisLedger(redis.url), PRICES, tokens.budgets(), clock=clock,
                      reserve_output_tokens=4096)  # the opt-in overshoot mode, as above
    service = GatewayService([str(policy)], owners=RedisSessionOwners(redis.url), gate=gate,
                             workers=1)
    config = ServeConfig(policy_paths=[str(policy)], upstream=upstream.url, tokens=tokens)
    with ThreadedApp(create_app(config, service)) as app:
        env = sandbox.env(ANTHROPIC_BASE_URL=app.url,
                          ANTHROPIC_CUSTOM_HEADERS="X-Agent-Gateway-Token: tok-a")
        first = claude_run(sandbox, "hello", env=env)  # $0.40084 of $0.60; it held ~$0.49
        assert first.returncode == 0 and first.result["result"] == "done", first.stdout[-1000:]
        refused = claude_run(sandbox, "hello", env=env)
        midnight = window_of("day", clock.now).end
        assert refused.returncode != 0
        message = refused.result["result"]
        assert message.startswith(
            "API Error: 402 agent-gateway: team team-a has $0.19916 left of its budget of $0.60 "
            "a day, and this call may cost up to $"
        ), message
        assert message.endswith(
            f"($0.40084 spent). The budget resets at {midnight:%Y-%m-%d} 00:00 UTC."
        ), message
        clock.now = midnight.timestamp() - 0.001
        assert claude_run(sandbox, "hello", env=env).returncode != 0  # not yet
        clock.now = midnight.timestamp()
        again = claude_run(sandbox, "hello", env=env)
        assert again.returncode == 0 and again.result["result"] == "done", again.stdout[-1000:]
    assert len(upstream.requests) == 2


def test_remote_runs_are_checked_capped_and_charged(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer], tmp_path: Path,
    redis: RedisServer,
) -> None:
    from tests.e2e.harness import post_ndjson

    upstream = scripted(SCENARIO)
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  - {{token: tok-a, name: team-a, runs_roots: [{sandbox.cwd}], "
        "budget: {usd: 0.5, per: day}}\n"
    )
    env = sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens))
    body = {"prompt": "check", "cwd": str(sandbox.cwd), "allowed_tools": ["Bash(echo:*)"]}

    def spent() -> int:
        shown = gateway_cli(sandbox, "spend", "--json", "--redis-url", redis.url,
                            "--tokens-file", str(tokens))
        (row,) = [json.loads(line) for line in shown.stdout.splitlines()]
        assert row["held_nanos"] == 0
        return int(row["spent_nanos"])

    with ServeProcess([str(policy)], upstream.url, env, log=sandbox.home / "serve.log",
                      args=["--redis-url", redis.url]) as gateway:
        status, lines = post_ndjson(gateway.url, "tok-a", "/v1/runs", body)
        assert status == 200 and lines[-1]["exit_code"] == 0, lines[-3:]
        assert spent() == nanos(BIG) + nanos(SMALL)  # $0.40648 of $0.50
        # $0.09352 left: the run is capped there and Claude Code stops it after one call
        status, lines = post_ndjson(gateway.url, "tok-a", "/v1/runs", body)
        result = next(m for m in lines if m.get("type") == "result")
        assert status == 200 and result["subtype"] == "error_max_budget_usd", lines[-3:]
        assert spent() == 2 * nanos(BIG) + nanos(SMALL)
        sent = len(upstream.requests)
        status, lines = post_ndjson(gateway.url, "tok-a", "/v1/runs", body)
        assert status == 402
        assert lines[0]["error"].startswith("agent-gateway: team team-a is over its budget")
        assert len(upstream.requests) == sent
