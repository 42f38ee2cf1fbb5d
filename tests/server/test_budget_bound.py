"""Team budgets that cannot be overspent, against `serve` processes sharing a real Redis and a
fake upstream that bills like the Messages API: concurrent calls at a budget that fits five,
clients that leave at every point of a stream, a stream that outlives its hold's first lease,
a replica killed with calls in flight, a response of 5 MiB. In each, the team's spend in Redis
is what the upstream billed (or, for a killed replica, the holds of its calls), and no call is
admitted past the budget."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.telemetry.pricing import Usage, load_price_table
from tests.prometheus_text import total
from tests.redis_server import RedisServer
from tests.server.billing_upstream import MODEL, Billed, BillingUpstream
from tests.server.processes import ServeProcess

PRICES = load_price_table()
SCRAPE = "scrape-token"
MAX_TOKENS = 100_000
PROMPT = "tell me everything " * 200  # ~4 KB: room for the 1,000 input tokens billed
COST = 2_004_000_000  # 1,000 input and 100,000 output tokens of Opus: $2.004
assert PRICES.cost_nanos(MODEL, Usage(1000, MAX_TOKENS)) == COST
HOLD_MAX = 2_100_000_000
"""More than any call of these tests can be held at (input bound, cache writes, max_tokens)."""


def price(billed: list[Billed]) -> int:
    return sum(PRICES.cost_nanos(MODEL, Usage(b.input_tokens, b.output_tokens)) or 0
               for b in billed)


def body(stream: bool, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": max_tokens, "stream": stream,
            "messages": [{"role": "user", "content": PROMPT}]}


HEADERS = {"Authorization": "Bearer tok-a"}


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis") as server:
        yield server


class Gateway:
    """`n` serve replicas on one Redis, team-a's budget `usd` a day."""

    def __init__(self, tmp_path: Path, redis: RedisServer, upstream: str, usd: float, *,
                 n: int = 1, args: tuple[str, ...] = ()) -> None:
        policy = tmp_path / "p.yaml"
        policy.write_text("version: 1\nname: p\n")
        tokens = tmp_path / "tokens.yaml"
        tokens.write_text("tokens:\n"
                          f"  - {{token: tok-a, name: team-a, budget: {{usd: {usd}, per: day}}}}\n")
        self.redis_url = redis.url
        self.logs = [tmp_path / f"serve-{i}.log" for i in range(n)]
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
               "AGENT_GATEWAY_TOKENS_FILE": str(tokens), "OTEL_TRACES_EXPORTER": "none",
               "OTEL_METRICS_EXPORTER": "prometheus", "AGENT_GATEWAY_METRICS_TOKEN": SCRAPE}
        self.replicas = [
            ServeProcess([str(policy)], upstream,
                         {**env, "AGENT_GATEWAY_HOME": str(tmp_path / f"home-{i}")},
                         log=log, args=["--redis-url", redis.url, *args])
            for i, log in enumerate(self.logs)
        ]

    def url(self, i: int = 0) -> str:
        return self.replicas[i].url

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def keys(self, kind: str) -> list[str]:
        import redis as redis_module

        client = redis_module.Redis.from_url(self.redis_url)
        return [k.decode() for k in client.keys(f"agent-gateway:budget:{{team-a}}:*:{kind}")]

    def spent(self) -> int:
        """Committed spend, read raw (no script runs, so nothing is purged by reading)."""
        import redis as redis_module

        client = redis_module.Redis.from_url(self.redis_url)
        return sum(int(client.get(k) or 0) for k in self.keys("spent"))

    def holds(self) -> dict[str, int]:
        import redis as redis_module

        client = redis_module.Redis.from_url(self.redis_url)
        found: dict[str, int] = {}
        for key in self.keys("holds"):
            for hold, amount in client.hgetall(key).items():
                found[hold.decode()] = int(amount)
        return found

    def settled(self, timeout: float = 15.0) -> None:
        """Waits until no hold is left (settles run after the response)."""
        deadline = time.monotonic() + timeout
        while self.holds():
            assert time.monotonic() < deadline, f"holds left: {self.holds()}"
            time.sleep(0.05)

    def log_text(self) -> str:
        return "".join(log.read_text() for log in self.logs)

    def scrape(self, i: int = 0) -> bytes:
        request = urllib.request.Request(self.url(i) + "/metrics",
                                         headers={"Authorization": f"Bearer {SCRAPE}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return bytes(response.read())


async def call(url: str, payload: dict[str, Any]) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as session, session.post(
        url + "/v1/messages", json=payload, headers=HEADERS,
        timeout=aiohttp.ClientTimeout(total=60),
    ) as response:
        return response.status, await response.read()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_twenty_concurrent_calls_at_a_budget_that_fits_five(
    tmp_path: Path, redis: RedisServer, stream: bool
) -> None:
    with BillingUpstream(delay_s=0.5) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=10.5, n=2
    ) as gateway:
        results = await asyncio.gather(*(
            call(gateway.url(i % 2), body(stream)) for i in range(20)
        ))
        statuses = [status for status, _ in results]
        served = statuses.count(200)
        assert 1 <= served <= 5 and statuses.count(402) == 20 - served, statuses
        assert upstream.received == served
        await asyncio.to_thread(gateway.settled)
        assert len(upstream.billed_usage()) == served
        assert gateway.spent() == price(upstream.billed_usage()) == served * COST
        for status, data in results:
            if status == 402:
                assert json.loads(data)["error"]["type"] == "billing_error"


async def raw_request(url: str, payload: dict[str, Any]) -> tuple[asyncio.StreamReader,
                                                                   asyncio.StreamWriter]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    data = json.dumps(payload).encode()
    writer.write(
        b"POST /v1/messages HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer tok-a\r\n"
        b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(data)}\r\n\r\n".encode() + data
    )
    await writer.drain()
    return reader, writer


async def read_until(reader: asyncio.StreamReader, marker: bytes) -> None:
    seen = b""
    async with asyncio.timeout(20):
        while marker not in seen:
            chunk = await reader.read(65536)
            assert chunk, f"the stream ended before {marker!r}"
            seen += chunk


async def wait_for(predicate: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(("stream", "gate", "marker"), [
    (True, "headers", b""),
    (True, "after_start", b"message_start"),
    (True, "before_final", b"content_block_stop"),
    (False, "headers", b""),
], ids=["sse-before-any-byte", "sse-after-message_start", "sse-before-message_delta",
        "json-before-any-byte"])
async def test_a_client_that_leaves_is_charged_what_upstream_billed(
    tmp_path: Path, redis: RedisServer, stream: bool, gate: str, marker: bytes
) -> None:
    # The budget fits one call: while the first is in flight, a second is refused.
    with BillingUpstream(gates=frozenset({gate})) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=3.0
    ) as gateway:
        reader, writer = await raw_request(gateway.url(), body(stream))
        await wait_for(lambda: upstream.received == 1)
        if marker:
            await read_until(reader, marker)
        writer.close()  # the client leaves
        await asyncio.sleep(0.3)
        status, _ = await call(gateway.url(), body(stream))
        assert status == 402  # the first call's hold still stands
        upstream.release(gate)
        await wait_for(lambda: len(upstream.billed_usage()) == 1)
        await asyncio.to_thread(gateway.settled)
        billed = upstream.billed_usage()
        assert billed[0].complete, "the gateway stopped reading the upstream"
        assert gateway.spent() == price(billed) == COST
        assert upstream.received == 1
        assert "Traceback" not in gateway.log_text()


async def test_a_client_that_leaves_a_large_body_midway_is_charged_what_upstream_billed(
    tmp_path: Path, redis: RedisServer
) -> None:
    with BillingUpstream(text_bytes=5 * 1024 * 1024) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=3.0
    ) as gateway:
        reader, writer = await raw_request(gateway.url(), body(False))
        await read_until(reader, b'"text": "xxxx')  # the body has begun: its usage is at the end
        writer.close()
        await wait_for(lambda: len(upstream.billed_usage()) == 1)
        await asyncio.to_thread(gateway.settled)
        assert gateway.spent() == price(upstream.billed_usage()) == COST
        assert "Traceback" not in gateway.log_text()


async def test_a_stream_outlives_its_holds_first_lease(
    tmp_path: Path, redis: RedisServer
) -> None:
    with BillingUpstream(deltas=8, pause_s=0.5) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=3.0, args=("--budget-lease", "1")
    ) as gateway:
        first = asyncio.ensure_future(call(gateway.url(), body(True)))
        await asyncio.sleep(2.5)  # past the hold's first lease: it was renewed
        assert not first.done()
        assert len(gateway.holds()) == 1
        status, _ = await call(gateway.url(), body(True))
        assert status == 402
        assert (await first)[0] == 200
        await asyncio.to_thread(gateway.settled)
        assert gateway.spent() == price(upstream.billed_usage()) == COST
        assert upstream.received == 1


async def test_a_stream_longer_than_the_maximum_is_cut_and_charged_its_bound(
    tmp_path: Path, redis: RedisServer
) -> None:
    with BillingUpstream(deltas=8, pause_s=0.5) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=3.0,
        args=("--budget-lease", "1", "--max-stream-seconds", "1.5"),
    ) as gateway:
        with pytest.raises(aiohttp.ClientPayloadError):  # the client sees the stream cut
            await call(gateway.url(), body(True))
        await asyncio.to_thread(gateway.settled)
        await wait_for(lambda: len(upstream.billed_usage()) == 1)
        (billed,) = upstream.billed_usage()
        assert not billed.complete
        # The documented bound of a cut stream: its input and all of max_tokens.
        assert gateway.spent() == COST >= price([billed])
        cost = total(gateway.scrape(), "agent_gateway_cost_USD_total", agent_gateway_team="team-a")
        assert cost == pytest.approx(COST / 1e9, rel=1e-12)  # the metric counts it too
        assert "Traceback" not in gateway.log_text()


async def test_a_killed_replicas_calls_are_charged_their_holds_by_the_survivor(
    tmp_path: Path, redis: RedisServer
) -> None:
    # The budget fits two and a half holds: two calls in flight on replica 0, then it dies.
    with BillingUpstream(gates=frozenset({"after_start"})) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=5.25, n=2, args=("--budget-lease", "1")
    ) as gateway:
        streams = [asyncio.ensure_future(call(gateway.url(0), body(True))) for _ in range(2)]
        await wait_for(lambda: upstream.received == 2 and len(gateway.holds()) == 2)
        holds = gateway.holds()
        assert all(COST < amount <= HOLD_MAX for amount in holds.values()), holds
        gateway.replicas[0].proc.send_signal(signal.SIGKILL)
        gateway.replicas[0].proc.wait()
        for stream in streams:
            with pytest.raises(aiohttp.ClientError):
                await stream
        status, _ = await call(gateway.url(1), body(True))
        assert status == 402  # the dead replica's holds still count
        await wait_for(lambda: not gateway.holds(), timeout=10)
        # Settled by the survivor at the holds (the bound for a killed replica's calls)
        assert gateway.spent() == sum(holds.values())
        upstream.release("after_start")
        await wait_for(lambda: len(upstream.billed_usage()) == 2)
        assert price(upstream.billed_usage()) <= gateway.spent()
        status, _ = await call(gateway.url(1), body(True))
        assert status == 402 and upstream.received == 2


async def test_a_five_mib_response_is_priced(tmp_path: Path, redis: RedisServer) -> None:
    with BillingUpstream(text_bytes=5 * 1024 * 1024) as upstream, Gateway(
        tmp_path, redis, upstream.url, usd=3.0
    ) as gateway:
        status, data = await call(gateway.url(), body(False))
        assert status == 200 and len(data) > 5 * 1024 * 1024
        await asyncio.to_thread(gateway.settled)
        assert gateway.spent() == price(upstream.billed_usage()) == COST
        cost = total(gateway.scrape(), "agent_gateway_cost_USD_total", agent_gateway_team="team-a")
        assert cost == pytest.approx(COST / 1e9, rel=1e-12)
