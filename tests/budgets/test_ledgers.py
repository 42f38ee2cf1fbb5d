"""The ledger contract, for the in-process store and for Redis (a real redis-server):
atomic reservations, idempotent settles, expiring holds, several replicas at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.budgets.ledger import Counter, Ledger, MemoryLedger, Standing, StoreUnavailable
from gateway.budgets.limits import Limit, window_of
from gateway.budgets.redis_ledger import RedisLedger
from tests.redis_server import RedisServer, free_port

NOW = 1_800_000_000.0
USD = 1_000_000_000


def counter(team: str = "team-a", usd: int = 1, per: str = "day", model: str | None = None,
            now: float = NOW) -> Counter:
    return Counter(team, Limit(usd * USD, per, model), window_of(per, now))  # type: ignore[arg-type]


LedgerFactory = Callable[[], Ledger]


@pytest.fixture(params=["memory", "redis"])
async def ledgers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LedgerFactory]:
    """Makes ledgers that share one store: each call is a replica."""
    made: list[Ledger] = []
    if request.param == "memory":
        shared = MemoryLedger()

        def make() -> Ledger:
            return shared

        yield make
        return
    with RedisServer(tmp_path) as server:

        def make_redis() -> Ledger:
            ledger = RedisLedger(server.url)
            made.append(ledger)
            return ledger

        yield make_redis
        for ledger in made:
            await ledger.close()


async def test_a_reservation_that_does_not_fit_is_refused(ledgers: LedgerFactory) -> None:
    ledger, c = ledgers(), counter(usd=1)
    assert (await ledger.reserve("h1", [c], 600_000_000, NOW, 60)).ok
    verdict = await ledger.reserve("h2", [c], 500_000_000, NOW, 60)
    assert not verdict.ok and verdict.blocked == c
    assert verdict.standing == Standing(committed=0, held=600_000_000)
    await ledger.settle("h1", [c], 123_456, NOW)
    assert await ledger.standings([c], NOW) == [Standing(123_456, 0)]
    assert (await ledger.reserve("h2", [c], 500_000_000, NOW, 60)).ok


async def test_settles_and_retried_reservations_count_once(ledgers: LedgerFactory) -> None:
    ledger, c = ledgers(), counter()
    assert (await ledger.reserve("h", [c], 10, NOW, 60)).ok
    assert (await ledger.reserve("h", [c], 10, NOW, 60)).ok  # a retry after a timeout
    assert await ledger.standings([c], NOW) == [Standing(0, 10)]
    for _ in range(3):
        await ledger.settle("h", [c], 7, NOW)
    assert await ledger.standings([c], NOW) == [Standing(7, 0)]


async def test_all_counters_or_none(ledgers: LedgerFactory) -> None:
    ledger = ledgers()
    month, day = counter(usd=100, per="month"), counter(usd=1, per="day", model="m")
    assert (await ledger.reserve("a", [month, day], USD // 2, NOW, 60)).ok
    verdict = await ledger.reserve("b", [month, day], USD, NOW, 60)
    assert verdict.blocked == day
    assert await ledger.standings([month, day], NOW) == [Standing(0, USD // 2)] * 2
    await ledger.settle("a", [month, day], 5, NOW)
    assert await ledger.standings([month, day], NOW) == [Standing(5, 0)] * 2


async def test_holds_expire_so_a_dead_replica_leaks_nothing(ledgers: LedgerFactory) -> None:
    ledger, c = ledgers(), counter(usd=1)
    assert (await ledger.reserve("crashed", [c], USD, NOW, 30)).ok
    assert not (await ledger.reserve("next", [c], 1, NOW + 29, 30)).ok
    assert (await ledger.reserve("next", [c], 1, NOW + 31, 30)).ok
    assert await ledger.standings([c], NOW + 31) == [Standing(0, 1)]
    # a late settle of the expired hold still charges what the response cost
    await ledger.settle("crashed", [c], 42, NOW + 40)
    assert await ledger.standings([c], NOW + 40) == [Standing(42, 1)]


async def test_windows_and_teams_are_separate_counters(ledgers: LedgerFactory) -> None:
    ledger = ledgers()
    today, tomorrow = counter(now=NOW), counter(now=NOW + 86_400)
    other_team = counter(team="team-b")
    assert (await ledger.reserve("a", [today], USD, NOW, 60)).ok
    await ledger.settle("a", [today], USD, NOW)
    assert not (await ledger.reserve("b", [today], 1, NOW, 60)).ok
    assert (await ledger.reserve("c", [tomorrow], USD, NOW + 86_400, 60)).ok
    assert (await ledger.reserve("d", [other_team], USD, NOW, 60)).ok
    assert today.key != tomorrow.key and today.key.startswith("{team-a}:day:*:")


async def test_concurrent_replicas_never_hold_more_than_the_budget(
    ledgers: LedgerFactory,
) -> None:
    replicas = [ledgers() for _ in range(4)]
    c = counter(usd=5)

    async def one(n: int) -> bool:
        return (await replicas[n % 4].reserve(f"h{n}", [c], USD, NOW, 60)).ok

    taken = await asyncio.gather(*(one(n) for n in range(40)))
    assert sum(taken) == 5
    assert await replicas[0].standings([c], NOW) == [Standing(0, 5 * USD)]
    await asyncio.gather(*(replicas[n % 4].settle(f"h{n}", [c], 3, NOW)
                           for n, ok in enumerate(taken) if ok))
    assert await replicas[1].standings([c], NOW) == [Standing(15, 0)]


async def test_team_names_cannot_collide_through_the_key_format() -> None:
    a, b = counter(team="x}:day:*"), counter(team="x")
    assert a.key != b.key and a.key.count("{") == 1


async def test_redis_down_is_store_unavailable_without_the_password() -> None:
    ledger = RedisLedger(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    with pytest.raises(StoreUnavailable) as error:
        await ledger.reserve("h", [counter()], 1, NOW, 60)
    assert "secret" not in str(error.value) and "redis" in str(error.value)
    await ledger.close()


async def test_redis_keys_expire_after_the_window(tmp_path: Path) -> None:
    import redis

    with RedisServer(tmp_path) as server:
        ledger = RedisLedger(server.url)
        c = counter()
        assert (await ledger.reserve("h", [c], 5, NOW, 60)).ok
        await ledger.settle("h", [c], 5, NOW)
        client = redis.Redis.from_url(server.url)
        keys = client.keys("agent-gateway:budget:*")
        assert keys, "nothing written"
        for key in keys:
            ttl = client.ttl(key)
            assert 0 < ttl <= c.ttl_s(NOW), (key, ttl)
        client.close()
        await ledger.close()
