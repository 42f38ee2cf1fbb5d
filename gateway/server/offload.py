"""Bounded thread pools for the server's blocking work, so the event loop never waits on a disk.

Two pools, each sized to the cores: short jobs (audit appends, the session owner store,
readiness checks, policy loads) and archive jobs (whole transcripts, seconds each), so a few
compactions never hold an audit append up. Policy decisions do not run here: they run in
worker processes (see workers.py and decision_worker.py).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Offload:
    def __init__(self, threads: int | None = None) -> None:
        n = threads or cores()
        self._short = ThreadPoolExecutor(n, thread_name_prefix="agent-gateway-io")
        self._archive = ThreadPoolExecutor(n, thread_name_prefix="agent-gateway-archive")

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
