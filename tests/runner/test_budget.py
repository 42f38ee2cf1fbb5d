"""The Python API honours a team budget like `agent-gateway run`: used up, nothing starts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gateway.budgets.ledger import Counter
from gateway.budgets.limits import Limit, window_of
from gateway.budgets.redis_ledger import RedisLedger
from gateway.runner.budget import BudgetRefused, RunBudget


async def test_query_refuses_to_start_when_the_team_budget_is_used_up(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gateway

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {token: tok-a, name: team-a, budget: {usd: 1, per: day}}\n")
    for key, value in {"AGENT_GATEWAY_TOKENS_FILE": str(tokens), "AGENT_GATEWAY_TOKEN": "tok-a",
                       "AGENT_GATEWAY_REDIS_URL": redis_url,
                       "AGENT_GATEWAY_HOME": str(tmp_path / "home"),
                       "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(key, value)
    ledger = RedisLedger(redis_url)
    day = Counter("team-a", Limit(10**9, "day"), window_of("day", time.time()))
    await ledger.settle("earlier", [day], 10**9 + 1, time.time())
    await ledger.close()
    with pytest.raises(BudgetRefused, match=r"team team-a is over its budget of \$1\.00 a day"):
        async for _ in gateway.query(prompt="hello"):
            pass
    budget = RunBudget.from_env()
    assert budget is not None and budget.team == "team-a"
    left, refusal = await budget.left(None)
    assert left == 0 and "resets at" in refusal
    await budget.close()


def test_a_token_not_in_the_file_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.errors import ConfigError

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {token: tok-a, name: team-a, budget: {usd: 1, per: day}}\n")
    monkeypatch.setenv("AGENT_GATEWAY_TOKENS_FILE", str(tokens))
    monkeypatch.setenv("AGENT_GATEWAY_TOKEN", "not-listed")
    with pytest.raises(ConfigError, match="AGENT_GATEWAY_TOKEN is not one of the tokens"):
        RunBudget.from_env()
