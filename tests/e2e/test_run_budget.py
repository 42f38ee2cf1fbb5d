"""`agent-gateway run` accounted to a team: metrics exported when it ends, its budget checked
before it starts (the local span file, or the Redis counters `serve` shares) and charged."""

from __future__ import annotations

import json
from collections import Counter as Tally
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.telemetry.pricing import Usage, load_price_table
from tests.e2e.budget_scenario import BIG, SCENARIO, SMALL
from tests.e2e.harness import Sandbox, gateway_cli, gateway_run
from tests.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
PRICES = load_price_table()
RUN_COST = sum(PRICES.cost_nanos("claude-opus-5-5", Usage(u["input_tokens"], u["output_tokens"]))
               or 0 for u in (BIG, SMALL))
POLICY = "version: 1\nname: org\npermissions:\n  allow:\n    - Bash(echo:*)\n"


def team_env(sandbox: Sandbox, tmp_path: Path, usd: float, **extra: str) -> dict[str, str]:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  - {{token: tok-a, name: team-a, budget: {{usd: {usd}, per: day}}}}\n"
    )
    return sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens), AGENT_GATEWAY_TOKEN="tok-a",
                       **extra)


def test_a_run_exports_its_metrics_when_it_ends(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    scripted(SCENARIO)
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    with OtlpReceiver() as receiver:
        env = sandbox.env(OTEL_METRICS_EXPORTER="otlp",
                          OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=receiver.endpoint + "/v1/metrics")
        out = gateway_run(sandbox, "check", "--policy", str(policy), env=env)
        assert out.returncode == 0, out.stderr
        points = receiver.latest_points()

    def one(name: str, **match: Any) -> list[dict[str, Any]]:
        return [p for p in points if p["name"] == name
                and all(p["attributes"].get(k) == v for k, v in match.items())]

    (cost,) = one("agent_gateway.cost", **{"agent_gateway.team": "local"})
    assert cost["value"] == pytest.approx(RUN_COST / 1e9, rel=1e-12)
    assert cost["value"] == pytest.approx(out.result["total_cost_usd"], rel=1e-9)
    for kind, expected in (("input", 101_200), ("output", 84)):
        (tokens,) = one("gen_ai.client.token.usage", **{"gen_ai.token.type": kind})
        assert (tokens["sum"], tokens["count"]) == (expected, 2)
        assert tokens["attributes"]["gen_ai.request.model"] == "claude-opus-5-5"
    audit = [json.loads(line)
             for line in (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    decided = Tally((r["decision"], r["rule_id"], r["tool"]) for r in audit if "tool" in r)
    counted = Tally({
        (p["attributes"]["agent_gateway.policy.decision"],
         p["attributes"]["agent_gateway.policy.rule_id"],
         p["attributes"]["gen_ai.tool.name"]): int(p["value"])
        for p in one("agent_gateway.policy.decisions")
    })
    assert decided == counted == Tally({("allow", decided and next(iter(decided))[1], "Bash"): 1})
    (hook,) = one("agent_gateway.hook.duration", **{"agent_gateway.hook.event": "PreToolUse"})
    assert hook["count"] == 1
    assert one("agent_gateway.policy.reload_errors")[0]["value"] == 0


def test_a_local_team_budget_is_checked_against_the_span_file(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    server = scripted(SCENARIO)
    env = team_env(sandbox, tmp_path, 0.5)
    refused = gateway_run(sandbox, "check", env=env)  # the sandbox turns the span file off
    assert refused.returncode == 2 and "counted from the local span file" in refused.stderr
    assert not server.requests
    del env["OTEL_TRACES_EXPORTER"]  # the default: spans go to the local span file
    first = gateway_run(sandbox, "check", "--allowed-tools", "Bash(echo:*)", env=env)
    assert first.returncode == 0 and first.result["result"] == "done", first.stderr
    shown = gateway_cli(sandbox, "spend", "--json", env=env)
    day = next(json.loads(line) for line in shown.stdout.splitlines()
               if json.loads(line)["per"] == "day")
    assert (day["team"], day["spent_nanos"], day["budget_usd"]) == ("team-a", RUN_COST, 0.5)
    # $0.09352 left: the second run is capped there, and Claude Code stops it
    second = gateway_run(sandbox, "check", "--allowed-tools", "Bash(echo:*)", env=env)
    assert second.result["subtype"] == "error_max_budget_usd", second.stdout[-2000:]
    sent = len(server.requests)
    third = gateway_run(sandbox, "check", env=env)
    assert third.returncode == 1 and not third.messages
    assert "agent-gateway run: agent-gateway: team team-a is over its budget of $0.50 a day" \
        in third.stderr
    assert len(server.requests) == sent


def test_a_run_is_charged_to_the_counters_serve_shares(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path, redis_url: str
) -> None:
    scripted(SCENARIO)
    env = team_env(sandbox, tmp_path, 0.5, AGENT_GATEWAY_REDIS_URL=redis_url)
    first = gateway_run(sandbox, "check", "--allowed-tools", "Bash(echo:*)", env=env)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in gateway_cli(sandbox, "spend", "--json", env=env)
            .stdout.splitlines()]
    assert [(r["team"], r["spent_nanos"], r["held_nanos"]) for r in rows] == [
        ("team-a", RUN_COST, 0)
    ]
    gateway_run(sandbox, "check", "--allowed-tools", "Bash(echo:*)", env=env)
    third = gateway_run(sandbox, "check", env=env)
    assert third.returncode == 1 and "is over its budget of $0.50 a day" in third.stderr
