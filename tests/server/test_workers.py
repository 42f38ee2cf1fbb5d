"""The killable, demoting worker pool that keeps decisions off the event loop."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.server.workers import JobFailed, JobTimeout, WorkerPool
from tests.server.pool_worker import worker

PoolFactory = Callable[..., "asyncio.Future[WorkerPool]"]
OWN = os.getpriority(os.PRIO_PROCESS, 0)
"""Workers are niced relative to the process that starts them (the tests may run niced)."""
NICED = min(19, OWN + 10)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purposes
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0] != "Z"


async def wait_until(condition: Callable[[], bool], timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


@pytest.fixture
async def make_pool() -> AsyncIterator[Callable[..., Any]]:
    pools: list[WorkerPool] = []

    async def make(**options: Any) -> WorkerPool:
        options.setdefault("size", 1)
        options.setdefault("budget_s", 5.0)
        pool = WorkerPool(worker, lambda: "init-data", **options)
        await pool.start()
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        await pool.close()


async def test_a_job_is_answered_by_a_worker(make_pool: Callable[..., Any]) -> None:
    pool = await make_pool()
    kind, pid, niceness, init = await pool.call(("sleep", 0))
    assert (kind, niceness, init) == ("sleep", OWN, "init-data") and pid != os.getpid()


async def test_a_job_over_budget_is_killed_and_replaced(make_pool: Callable[..., Any]) -> None:
    pool = await make_pool(budget_s=0.3)
    _, pid, _, _ = await pool.call(("sleep", 0))
    started = time.monotonic()
    with pytest.raises(JobTimeout, match=r"0\.3 s"):
        await pool.call(("spin", 30))
    assert time.monotonic() - started < 2
    assert await wait_until(lambda: not alive(pid))
    _, replacement, _, _ = await pool.call(("sleep", 0))
    assert replacement != pid


async def test_waiting_for_a_worker_counts_toward_the_budget(
    make_pool: Callable[..., Any],
) -> None:
    pool = await make_pool(budget_s=0.5)
    started = time.monotonic()
    replies = await asyncio.gather(
        *(pool.call(("sleep", 0.3)) for _ in range(3)), return_exceptions=True
    )
    assert time.monotonic() - started < 1.5
    assert replies[0][0] == "sleep"
    assert all(isinstance(r, JobTimeout) for r in replies[1:])


async def test_a_dying_worker_fails_its_job_and_is_replaced(
    make_pool: Callable[..., Any],
) -> None:
    pool = await make_pool()
    with pytest.raises(JobFailed, match="died"):
        await pool.call(("die", 0))
    assert (await pool.call(("sleep", 0)))[0] == "sleep"
    assert pool.spawned == 2


async def test_a_slow_job_is_niced_and_does_not_hold_quick_ones_up(
    make_pool: Callable[..., Any],
) -> None:
    pool = await make_pool(size=1, demote_after_s=0.05)
    slow = asyncio.ensure_future(pool.call(("spin", 1.0)))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    _, quick_pid, quick_niceness, _ = await pool.call(("sleep", 0))
    assert time.monotonic() - started < 0.5  # served by the replacement, not after the spin
    _, slow_pid, slow_niceness, _ = await slow
    assert slow_niceness == NICED and quick_niceness == OWN and slow_pid != quick_pid
    # the niced worker is retired once its job is done
    assert await wait_until(lambda: not alive(slow_pid))
    assert (await pool.call(("sleep", 0)))[1] == quick_pid


async def test_beyond_max_slow_the_longest_running_job_is_ended(
    make_pool: Callable[..., Any],
) -> None:
    pool = await make_pool(size=1, demote_after_s=0.05, max_slow=1)
    first = asyncio.ensure_future(pool.call(("spin", 3)))
    await asyncio.sleep(0.3)
    second = asyncio.ensure_future(pool.call(("spin", 0.5)))
    with pytest.raises(JobFailed, match="ended to make room"):
        await first
    assert (await second)[2] == NICED
    assert pool.slow_jobs == 0 or await wait_until(lambda: pool.slow_jobs == 0)


async def test_a_niced_pool_runs_every_job_niced(make_pool: Callable[..., Any]) -> None:
    pool = await make_pool(size=2, niceness=10)
    replies = await asyncio.gather(*(pool.call(("sleep", 0.05)) for _ in range(4)))
    assert {r[2] for r in replies} == {NICED}


async def test_close_stops_every_worker() -> None:
    pool = WorkerPool(worker, lambda: None, size=2, budget_s=1)
    await pool.start()
    pids = {(await pool.call(("sleep", 0)))[1] for _ in range(2)}
    await pool.close()
    assert all(not alive(pid) for pid in pids)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "200000 100000\n"}, 2),
        ({"cpu.max": "150000 100000\n"}, 2),
        ({"cpu.max": "max 100000\n"}, 0),
        ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0),
        ({}, 0),
    ],
)
def test_a_containers_cpu_quota_caps_the_pool_size(
    tmp_path: Any, files: dict[str, str], expected: int
) -> None:
    from gateway.server.offload import _cgroup_cpu_quota

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _cgroup_cpu_quota(str(tmp_path)) == expected


async def test_a_cancelled_wait_for_a_worker_leaks_nothing(make_pool: Callable[..., Any]) -> None:
    pool = await make_pool(size=1)
    busy = asyncio.ensure_future(pool.call(("sleep", 0.2)))
    await asyncio.sleep(0.02)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(pool.call(("sleep", 0)), timeout=0.05)
    await busy
    started = time.monotonic()
    assert (await pool.call(("sleep", 0)))[0] == "sleep"
    assert time.monotonic() - started < 1
    assert pool.spawned == 1  # the one worker served all of it


async def test_a_job_that_waits_without_using_the_cpu_is_not_demoted(
    make_pool: Callable[..., Any],
) -> None:
    pool = await make_pool(size=1, demote_after_s=0.05)
    _, pid, niceness, _ = await pool.call(("sleep", 0.4))
    assert niceness == OWN and pool.spawned == 1  # slow by the clock, not by CPU: kept
    assert (await pool.call(("sleep", 0)))[1] == pid
