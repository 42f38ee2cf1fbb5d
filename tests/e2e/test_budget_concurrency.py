"""Team budgets under load and under a failing store, with the real Claude Code.

Twenty sessions of one team start at once through two replicas, against a budget that fits
about five holds (the default: the most each call can cost): at every request the API
receives, committed spend plus open holds are within the budget; at the end the counter is
the priced responses, exactly, and no hold is left. Again with Redis answering slowly and
sometimes not in time. Then Redis stops in the middle of a session: fail_closed refuses its
next model call with the reason, fail_open lets it through with a log line and a metric.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis as redis_client

from gateway.budgets.ledger import Counter
from gateway.budgets.limits import Limit, window_of
from gateway.budgets.redis_ledger import PREFIX
from gateway.scripted import ScriptedServer
from gateway.scripted.server import RecordedRequest
from gateway.telemetry.pricing import Usage, load_price_table
from tests.e2e.budget_scenario import SMALL
from tests.e2e.harness import RunOutcome, Sandbox, claude_run
from tests.prometheus_text import total
from tests.redis_server import RedisServer, SlowRelay
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
USD = 1_000_000_000
COST = load_price_table().cost_nanos("claude-opus-5-5", Usage(1200, 42))
BUDGET_A = 15.0
"""About five holds: a Claude Code request holds the most it can cost, ~$3 (a 50 KB body at
the 1-hour cache write price, and 128,000 output tokens)."""
SCRAPE = "scrape-token"


def policy(tmp_path: Path) -> str:
    path = tmp_path / "org.yaml"
    path.write_text("version: 1\nname: org\n")
    return str(path)


def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text(
        "tokens:\n"
        f"  - {{token: tok-a, name: team-a, budget: {{usd: {BUDGET_A}, per: day}}}}\n"
        "  - {token: tok-b, name: team-b, budget: {usd: 10, per: day}}\n"
    )
    return path


class Standings:
    """team-a's day counter read straight from Redis (not through the slow relay)."""

    def __init__(self, url: str) -> None:
        self.client = redis_client.Redis.from_url(url)
        counter = Counter("team-a", Limit(round(BUDGET_A * USD), "day"),
                          window_of("day", time.time()))
        base = PREFIX + counter.key
        self.spent, self.holds, self.expiry = base + ":spent", base + ":holds", base + ":expiry"

    def now(self) -> tuple[int, int, int]:
        """(committed, held, open holds)"""
        held = [int(v) for v in self.client.hvals(self.holds)]
        return int(self.client.get(self.spent) or 0), sum(held), len(held)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis") as server:
        yield server


def session(sandbox: Sandbox, url: str, token: str, prompt: str = "hello") -> RunOutcome:
    env = sandbox.env(ANTHROPIC_BASE_URL=url,
                      ANTHROPIC_CUSTOM_HEADERS=f"X-Agent-Gateway-Token: {token}")
    return claude_run(sandbox, prompt, "--allowedTools", "Bash(echo:*)", env=env, timeout=240)


@pytest.mark.parametrize("store", ["redis", "slow-redis"])
def test_a_burst_never_spends_beyond_committed_and_held(
    sandbox: Sandbox, tmp_path: Path, redis: RedisServer, store: str
) -> None:
    standings = Standings(redis.url)
    seen: list[tuple[str, int, int, int]] = []
    lock = threading.Lock()

    def at_arrival(request: RecordedRequest) -> None:
        with lock:
            seen.append((request.session_id, *standings.now()))

    scenario = {"responses": [], "default": {"text": "done", "usage": SMALL, "times": 0,
                                            "delay_ms": 1500}}
    relay = SlowRelay(redis.port, delay_s=0.01, stall_every=7, stall_s=0.8) \
        if store == "slow-redis" else None
    url = relay.start().url if relay else redis.url
    env = sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens(tmp_path)))
    with ScriptedServer(scenario, on_request=at_arrival) as upstream:
        replicas = [
            ServeProcess([policy(tmp_path)], upstream.url, env,
                         log=sandbox.home / f"serve-{n}.log",
                         args=["--redis-url", url, "--redis-timeout", "0.4"])
            for n in (1, 2)
        ]
        try:
            runs = [(replicas[n % 2].url, "tok-a") for n in range(20)]
            runs += [(replicas[0].url, "tok-b"), (replicas[1].url, "tok-b")]
            with ThreadPoolExecutor(len(runs)) as pool:
                outcomes = list(pool.map(lambda r: session(sandbox, *r), runs))
        finally:
            for replica in replicas:
                replica.stop()
            if relay:
                relay.stop()
        requests = upstream.requests

    a, b = outcomes[:20], outcomes[20:]
    for outcome in b:  # the other team is never refused
        assert outcome.returncode == 0 and outcome.result["result"] == "done", outcome.stdout
    a_ids = {o.session_id for o in a}
    forwarded = [r for r in requests if r.session_id in a_ids]
    refused = [o for o in a if o.returncode != 0]
    for outcome in a:
        if outcome.returncode == 0:
            assert outcome.result["result"] == "done"
        else:
            text = outcome.result["result"]
            assert text.startswith("API Error: 402 agent-gateway: team team-a "), text
            assert not [r for r in requests if r.session_id == outcome.session_id]
    assert forwarded and refused, (len(forwarded), len(refused))
    # At every request the API received from team A, its spend and open holds fit the budget.
    arrivals = [s for s in seen if s[0] in a_ids]
    assert len(arrivals) == len(forwarded)
    for _, committed, held, open_holds in arrivals:
        assert committed + held <= round(BUDGET_A * USD), (committed, held, open_holds)
        assert open_holds >= 1  # its own hold is there
    # The counter is the priced responses, exactly, and no hold is left open.
    deadline = time.monotonic() + 20
    while standings.now()[1:] != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert standings.now() == (len(forwarded) * COST, 0, 0)
    assert standings.client.zcard(standings.expiry) == 0
    if relay is not None:
        assert relay.stalls > 0  # some commands did time out on the way
    for n in (1, 2):
        assert "Traceback" not in (sandbox.home / f"serve-{n}.log").read_text()


SCENARIO_TOOL = {
    "responses": [
        {"when": "prompt", "times": 0, "text": "checking", "usage": SMALL,
         "tool_use": [{"name": "Bash", "input": {"command": "echo hi"}}]},
        {"when": "tool_result", "times": 0, "text": "done", "stop_reason": "end_turn",
         "usage": SMALL},
    ]
}


@pytest.mark.parametrize("failure", ["fail_closed", "fail_open"])
def test_redis_stopped_mid_run(
    sandbox: Sandbox, tmp_path: Path, redis: RedisServer, failure: str
) -> None:
    def stop_redis_at_first_call(request: RecordedRequest) -> None:
        if request.kind == "prompt":
            redis.stop()

    env = sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens(tmp_path)),
                      AGENT_GATEWAY_METRICS_TOKEN=SCRAPE, OTEL_METRICS_EXPORTER="prometheus")
    log = sandbox.home / "serve.log"
    with ScriptedServer(SCENARIO_TOOL, on_request=stop_redis_at_first_call) as upstream, \
            ServeProcess([policy(tmp_path)], upstream.url, env, log=log,
                         args=["--redis-url", redis.url, "--redis-timeout", "0.5",
                               "--budget-failure", failure]) as replica:
        started = time.monotonic()
        outcome = session(sandbox, replica.url, "tok-a")
        took = time.monotonic() - started
        request = urllib.request.Request(replica.url + "/metrics",
                                         headers={"Authorization": f"Bearer {SCRAPE}"})
        metrics = urllib.request.urlopen(request, timeout=10).read()
        kinds = [r.kind for r in upstream.requests]
    served = log.read_text()
    if failure == "fail_closed":
        assert outcome.returncode != 0 and took < 30
        text: Any = outcome.result["result"]
        assert text.startswith("API Error: 402 agent-gateway: team team-a's budget cannot be "
                               "checked: the budget store did not answer (redis redis://")
        assert "Model calls are refused until it is back (fail_closed)" in text
        assert kinds == ["prompt"]  # the call after the outage never left the gateway
        assert total(metrics, "agent_gateway_budget_refusals_total", agent_gateway_team="team-a",
                     agent_gateway_budget_reason="store_unavailable") == 1
    else:
        assert outcome.returncode == 0 and outcome.result["result"] == "done", outcome.stdout
        assert kinds == ["prompt", "tool_result"]
        assert "without a budget check (fail_open)" in served
        assert total(metrics, "agent_gateway_budget_unenforced_total",
                     agent_gateway_team="team-a") == 1
    assert "Traceback" not in served
