"""A pool of worker processes whose jobs can be slowed down and killed, driven from asyncio.

`size` workers serve jobs in turn. A job not answered within `budget_s` (queueing included)
is ended: its worker is killed and `call` raises JobTimeout.

With `demote_after_s`, a job that has used that much CPU time is slow (CPU, not wall time: a
quick job that waits for a busy machine is not): its worker is niced (the kernel then gives
it only what the others leave), stops counting toward the pool, and a fresh worker takes its
place, so slow jobs do not hold quick ones up. At most `max_slow` jobs may be
slow at once; when one more turns slow, the job that has run longest is ended to make room. A
demoted worker is retired after its job, since its priority cannot be raised back. With
`niceness`, every worker runs niced from the start (a pool for the jobs known to be heavy).

Workers come from a forkserver, so starting one takes milliseconds, not an interpreter start.
A worker runs `serve_jobs`: it says it is ready, then answers each request in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

log = logging.getLogger("gateway.server.workers")

SLOW_NICENESS = 10
SEND_INLINE = 64 * 1024
"""Larger requests are written to the worker's pipe from a thread: a pipe holds 64 KiB, and
a niced worker may take its time to read the rest, which the event loop must not wait out."""
READY_TIMEOUT_S = 60.0
RESPAWN_DELAY_S = 1.0


class JobTimeout(Exception):
    """The job was not answered within the budget; its worker was killed."""


class JobFailed(Exception):
    """The worker died, or the job was ended to keep the pool responsive; `str()` says which."""


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    ready: bool = False
    slow: bool = False
    slow_since: float = 0.0
    dead: bool = False
    pending: asyncio.Future[Any] | None = None
    cpu_mark: int | None = None
    """The worker's CPU time (ns) when it last finished a job, as it reported."""
    ready_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    demote_timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class WorkerPool:
    def __init__(
        self,
        target: Callable[..., None],
        make_init: Callable[[], Any],
        *,
        size: int,
        budget_s: float,
        demote_after_s: float | None = None,
        max_slow: int | None = None,
        niceness: int = 0,
        preload: tuple[str, ...] = (),
        name: str = "agent-gateway-worker",
    ) -> None:
        self.size = max(1, size)
        self.budget_s = budget_s
        self._target = target
        self._make_init = make_init
        self._demote_after = demote_after_s
        self._max_slow = self.size if max_slow is None else max_slow
        self._niceness = niceness
        self._name = name
        self._ctx = multiprocessing.get_context("forkserver")
        if preload:
            self._ctx.set_forkserver_preload(list(preload))
        self._workers: set[_Worker] = set()
        self._idle: deque[_Worker] = deque()
        self._waiters: deque[asyncio.Future[_Worker]] = deque()
        self._starting = 0
        self._closing = False
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-spawn")
        self._senders = ThreadPoolExecutor(self.size, thread_name_prefix=f"{name}-send")
        self._tasks: set[asyncio.Task[None]] = set()
        self.spawned = 0
        """Workers started so far (initial ones included), for tests and logs."""

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Start `size` workers and wait until each has loaded and said it is ready."""
        await asyncio.gather(*(self._spawn() for _ in range(self.size)))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_TIMEOUT_S
        while len(self._idle) < self.size:
            if loop.time() > deadline or not self._workers:
                raise RuntimeError("decision workers did not start")
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        workers = list(self._workers)
        for worker in workers:
            self._drop(worker)
            with contextlib.suppress(OSError):
                worker.process.terminate()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._spawner, _reap, [w.process for w in workers])
        self._spawner.shutdown(wait=False)
        self._senders.shutdown(wait=False)

    @property
    def slow_jobs(self) -> int:
        return sum(1 for w in self._workers if w.slow)

    # --- jobs -------------------------------------------------------------------------------
    async def call(self, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.budget_s
        worker = await self._acquire(deadline)
        reply: asyncio.Future[Any] = loop.create_future()
        worker.pending = reply
        data = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)
        try:
            if len(data) > SEND_INLINE:
                await loop.run_in_executor(self._senders, worker.conn.send_bytes, data)
            else:
                worker.conn.send_bytes(data)
        except (OSError, ValueError):
            self._lost(worker)
            raise JobFailed("the decision worker exited") from None
        except asyncio.CancelledError:
            self._kill(worker, JobFailed("the request was cancelled"))
            raise
        if self._demote_after is not None:
            worker.demote_timer = loop.call_later(self._demote_after, self._demote, worker)
        expiry = loop.call_later(
            max(0.0, deadline - loop.time()),
            self._kill, worker, JobTimeout(f"no answer within {self.budget_s:g} s"),
        )
        finished = False
        try:
            result = await reply
            finished = True
            return result
        finally:
            expiry.cancel()
            if worker.demote_timer is not None:
                worker.demote_timer.cancel()
                worker.demote_timer = None
            if finished:
                self._release(worker)
            elif not worker.dead:
                self._kill(worker, JobFailed("the request was cancelled"))

    async def _acquire(self, deadline: float) -> _Worker:
        loop = asyncio.get_running_loop()
        while self._idle:
            # Last in, first out: the worker used most recently is the one still in cache,
            # and the others can stay asleep.
            worker = self._idle.pop()
            if not worker.dead:
                return worker
        waiter: asyncio.Future[_Worker] = loop.create_future()
        self._waiters.append(waiter)
        try:
            done, _ = await asyncio.wait({waiter}, timeout=max(0.0, deadline - loop.time()))
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._hand_out(waiter.result())  # handed to us as we were cancelled
            waiter.cancel()
            raise
        if not done:
            waiter.cancel()
            raise JobTimeout(f"no worker free within {self.budget_s:g} s")
        return waiter.result()

    def _release(self, worker: _Worker) -> None:
        worker.pending = None
        if worker.dead:
            return
        if worker.slow:
            self._retire(worker)
            return
        self._hand_out(worker)

    def _hand_out(self, worker: _Worker) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(worker)
                return
        self._idle.append(worker)

    def _demote(self, worker: _Worker) -> None:
        if worker.dead or worker.pending is None or worker.pending.done():
            return
        assert self._demote_after is not None
        now, before = cpu_ns(worker.process.pid), worker.cpu_mark
        if now is not None and before is not None and now - before < self._demote_after * 1e9:
            # Not yet that much CPU: the machine is busy, not the job. Look again later.
            worker.demote_timer = asyncio.get_running_loop().call_later(
                self._demote_after, self._demote, worker
            )
            return
        worker.demote_timer = None
        slow = [w for w in self._workers if w.slow]
        if len(slow) >= self._max_slow:
            # The job that has run longest is the likeliest to be pathological.
            oldest = min(slow, key=lambda w: w.slow_since)
            why = f"ended to make room: more than {self._max_slow} slow jobs in flight"
            self._kill(oldest, JobFailed(why))
        worker.slow = True
        worker.slow_since = asyncio.get_running_loop().time()
        _renice(worker.process, SLOW_NICENESS)
        log.info("%s: a slow job moved out of the way (worker %s niced)", self._name,
                 worker.process.pid)
        self._replenish()

    # --- workers ----------------------------------------------------------------------------
    def _replenish(self) -> None:
        if self._closing:
            return
        fast = self._starting + sum(1 for w in self._workers if not w.slow)
        for _ in range(self.size - fast):
            self._background(self._spawn())

    def _background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        self._starting += 1
        try:
            init = self._make_init()
            worker = await loop.run_in_executor(self._spawner, self._start_process, init)
        except Exception:
            log.exception("cannot start a decision worker; retrying in %.0f s", RESPAWN_DELAY_S)
            self._starting -= 1
            await asyncio.sleep(RESPAWN_DELAY_S)
            self._replenish()
            return
        self._starting -= 1
        if self._closing:
            worker.process.kill()
            return
        self.spawned += 1
        if self._niceness:
            _renice(worker.process, self._niceness)
        self._workers.add(worker)
        loop.add_reader(worker.conn.fileno(), self._on_readable, worker)
        worker.ready_timer = loop.call_later(
            READY_TIMEOUT_S, self._kill, worker, JobFailed("worker did not start")
        )

    def _start_process(self, init: Any) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=self._target, args=(child, init), daemon=True, name=self._name
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _on_readable(self, worker: _Worker) -> None:
        try:
            cpu, message = worker.conn.recv()
        except (EOFError, OSError, TypeError, ValueError):
            self._lost(worker)
            return
        worker.cpu_mark = cpu
        if not worker.ready:
            worker.ready = True
            if worker.ready_timer is not None:
                worker.ready_timer.cancel()
            self._hand_out(worker)
            return
        if worker.pending is not None and not worker.pending.done():
            worker.pending.set_result(message)

    def _lost(self, worker: _Worker) -> None:
        if worker.dead:
            return
        code = worker.process.exitcode
        self._drop(worker)
        if worker.pending is not None and not worker.pending.done():
            why = f"exit code {code}" if code is not None else "no answer"
            worker.pending.set_exception(JobFailed(f"the decision worker died ({why})"))
        self._replenish()

    def _kill(self, worker: _Worker, error: Exception) -> None:
        if worker.dead:
            return
        log.warning("%s: worker %s killed: %s", self._name, worker.process.pid, error)
        self._drop(worker)
        with contextlib.suppress(OSError):
            worker.process.kill()
        if worker.pending is not None and not worker.pending.done():
            worker.pending.set_exception(error)
        self._reap_later(worker)
        self._replenish()

    def _retire(self, worker: _Worker) -> None:
        self._drop(worker)
        with contextlib.suppress(OSError):
            worker.process.terminate()
        self._reap_later(worker)
        self._replenish()

    def _drop(self, worker: _Worker) -> None:
        worker.dead = True
        self._workers.discard(worker)
        with contextlib.suppress(ValueError):
            self._idle.remove(worker)
        if worker.ready_timer is not None:
            worker.ready_timer.cancel()
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        with contextlib.suppress(OSError):
            worker.conn.close()

    def _reap_later(self, worker: _Worker) -> None:
        if not self._closing:
            asyncio.get_running_loop().run_in_executor(self._spawner, _reap, [worker.process])


def start_forkserver(env: Mapping[str, str], preload: Sequence[str]) -> None:
    """Start multiprocessing's forkserver (and its resource tracker) now, with `env` as their
    environment (and only the installed code on their sys.path), what /proc/<pid>/environ
    shows of them and of every worker forked from it (a worker is given its environment with
    its WorkerInit). Swaps this process's environment for the moment: call it while the
    process has a single thread."""
    import multiprocessing.forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
    saved = dict(os.environ)
    os.environ.clear()
    # Both start as `python -c ...`, which puts the current directory first on sys.path:
    # started in an untrusted checkout they would import its `gateway` package (or a
    # `multiprocessing` posing as the standard one). PYTHONSAFEPATH leaves it out.
    os.environ.update({**env, "PYTHONSAFEPATH": "1"})
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def serve_jobs(conn: Connection, handle: Callable[[Any], Any]) -> None:
    """The worker's side: say it is ready, then answer each request with `handle`, each
    message carrying the worker's CPU time so far. Returns when the pool closes the pipe."""
    conn.send((time.thread_time_ns(), "ready"))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        reply = handle(request)
        conn.send((time.thread_time_ns(), reply))


def cpu_ns(pid: int | None) -> int | None:
    """A process's CPU time in ns, read from outside (Linux schedstat: the same clock as a
    main thread's own thread_time_ns), or None where that is not available."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _renice(process: BaseProcess, niceness: int) -> None:
    """Lower a worker's priority by `niceness` below the gateway's own (raising niceness
    needs no privilege; a gateway started under `nice` still moves slow work out of the way)."""
    if process.pid is not None:
        with contextlib.suppress(OSError):
            own = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, process.pid, min(19, own + niceness))


def _reap(processes: list[BaseProcess]) -> None:
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
