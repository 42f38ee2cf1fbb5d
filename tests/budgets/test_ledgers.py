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


async def test_a_lease_that_runs_out_is_charged_its_hold(ledgers: LedgerFactory) -> None:
    # A replica that died mid-call renews nothing: whoever reads the counter next charges the
    # hold, the most the call could have cost, and the budget is free of the hold itself.
    ledger, c = ledgers(), counter(usd=3)
    assert (await ledger.reserve("crashed", [c], USD, NOW, 30)).ok
    assert await ledger.standings([c], NOW + 29) == [Standing(0, USD)]
    assert await ledger.standings([c], NOW + 31) == [Standing(USD, 0)]
    assert await ledger.standings([c], NOW + 32) == [Standing(USD, 0)]  # charged once
    assert (await ledger.reserve("next", [c], USD, NOW + 31, 30)).ok
    assert not (await ledger.reserve("third", [c], USD + 1, NOW + 31, 30)).ok
    # its replica was alive after all: a settle within the hold adds nothing more ...
    await ledger.settle("crashed", [c], 42, NOW + 40)
    assert await ledger.standings([c], NOW + 40) == [Standing(USD, USD)]
    # ... and one beyond it (a smaller hold, opted in) adds what is beyond
    assert (await ledger.reserve("small", [c], 10, NOW + 40, 30)).ok
    # both leases run out ("next" is never settled either)
    assert await ledger.standings([c], NOW + 71) == [Standing(2 * USD + 10, 0)]
    await ledger.settle("small", [c], 25, NOW + 72)
    await ledger.settle("small", [c], 25, NOW + 72)  # a retry counts once
    assert await ledger.standings([c], NOW + 72) == [Standing(2 * USD + 25, 0)]


async def test_a_renewed_hold_lives_as_long_as_its_call(ledgers: LedgerFactory) -> None:
    ledger, other = ledgers(), ledgers()
    month, day = counter(usd=100, per="month"), counter(usd=3, per="day", model="m")
    assert (await ledger.reserve("long", [month, day], USD, NOW, 30)).ok
    for t in range(20, 200, 20):
        assert await ledger.renew([("long", [month, day])], NOW + t, 30) == 2
        assert await other.standings([month, day], NOW + t + 29) == [Standing(0, USD)] * 2
    await ledger.settle("long", [month, day], 7, NOW + 200)
    assert await other.standings([month, day], NOW + 300) == [Standing(7, 0)] * 2
    # a hold already settled, or charged when its lease ran out, is not brought back
    assert await ledger.renew([("long", [month, day])], NOW + 300, 30) == 0
    assert (await ledger.reserve("late", [day], USD, NOW + 300, 30)).ok
    assert await other.standings([day], NOW + 331) == [Standing(USD + 7, 0)]
    assert await ledger.renew([("late", [day])], NOW + 331, 30) == 0
    assert await other.standings([day], NOW + 400) == [Standing(USD + 7, 0)]


async def test_an_unchecked_call_is_added_when_settled(ledgers: LedgerFactory) -> None:
    ledger, c = ledgers(), counter()
    await ledger.settle("never-held", [c], 11, NOW)
    await ledger.settle("never-held", [c], 11, NOW)
    assert await ledger.standings([c], NOW) == [Standing(11, 0)]


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
