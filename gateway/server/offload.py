"""Bounded thread pools for the server's blocking work, so the event loop never waits on a disk.

Two pools, each sized to the cores: short jobs (audit appends, the session owner store,
readiness checks, policy loads) and archive jobs (whole transcripts, seconds each), so a few
compactions never hold an audit append up. Policy decisions do not run here: they run in
worker processes (see workers.py and decision_worker.py). Parsing that would hold the GIL for
long (a budgeted team's large request body) runs in one process of its own, started from the
forkserver when first needed.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")


def cores() -> int:
    """CPUs this process may use: its affinity, capped by a cgroup CPU quota (a container
    limited to 2 CPUs on a 64-core node gets 2)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(n, quota) if quota else n)


def _cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> int:
    """ceil(quota / period) from cgroup v2 `cpu.max` or v1 `cpu.cfs_*`; 0 when unlimited."""
    try:
        with open(f"{root}/cpu.max") as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        try:
            with open(f"{root}/cpu/cpu.cfs_quota_us") as f:
                quota = f.read().strip()
            with open(f"{root}/cpu/cpu.cfs_period_us") as f:
                period = f.read().strip()
        except OSError:
            return 0
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max": no quota
        return 0
    return -(-q // p) if q > 0 and p > 0 else 0


class Offload:
    def __init__(self, threads: int | None = None) -> None:
        n = threads or cores()
        self._short = ThreadPoolExecutor(n, thread_name_prefix="agent-gateway-io")
        self._archive = ThreadPoolExecutor(n, thread_name_prefix="agent-gateway-archive")
        self._cpu: ProcessPoolExecutor | None = None

    async def cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a process (fn and args picklable): for parsing that would hold the
        GIL, and so stall the event loop, for long. A process that died is replaced once."""
        import multiprocessing

        for attempt in (0, 1):
            if self._cpu is None:
                self._cpu = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("forkserver")
                )
            try:
                return await asyncio.get_running_loop().run_in_executor(self._cpu, fn, *args)
            except BrokenProcessPool:
                self._cpu = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._run(self._short, fn, *args, **kwargs)

    async def archive(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._run(self._archive, fn, *args, **kwargs)

    async def _run(
        self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        call = functools.partial(fn, *args, **kwargs) if kwargs else functools.partial(fn, *args)
        return await asyncio.get_running_loop().run_in_executor(pool, call)

    def close(self) -> None:
        """Let queued appends finish: a record accepted is a record written."""
        self._short.shutdown(wait=True)
        self._archive.shutdown(wait=True)
        if self._cpu is not None:
            self._cpu.shutdown(wait=False, cancel_futures=True)
