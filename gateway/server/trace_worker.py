"""The one thread `serve`'s tracing runs on: jobs in arrival order, retries after a delay,
and a periodic sweep.

Nothing of span building runs on the event loop (a Redis round trip, a request body parsed
for content capture): the loop only queues. A job that fails is logged, never raised: tracing
never takes the gateway down.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable

log = logging.getLogger("gateway.server.tracing")


class TraceWorker:
    """Runs queued jobs in order on a daemon thread started on first use; `sweep` runs every
    `sweep_every()` seconds between them."""

    def __init__(self, sweep: Callable[[], None], sweep_every: Callable[[], float]) -> None:
        self._sweep = sweep
        self._sweep_every = sweep_every
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._later: list[tuple[float, int, Callable[[], None]]] = []
        """Retries: (due, order, job), a heap."""
        self._seq = itertools.count()
        self._busy = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self.closed = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._idle:
            self._busy += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="agent-gateway-trace", daemon=True
                )
                self._thread.start()
        self._queue.put(job)

    def retry(self, delay_s: float, job: Callable[[], None]) -> None:
        """Run `job` after `delay_s` (called on the worker thread)."""
        with self._idle:
            self._busy += 1
        heapq.heappush(self._later, (time.monotonic() + delay_s, next(self._seq), job))

    def _work(self) -> None:
        next_sweep = time.monotonic() + self._sweep_every()
        while True:
            wait = max(0.0, min([next_sweep, *(x[0] for x in self._later[:1])]) - time.monotonic())
            try:
                job = self._queue.get(timeout=wait)
            except queue.Empty:
                job = None
                if self.closed:
                    return
            else:
                if job is None:
                    return
            if job is not None:
                self._run(job)
            now = time.monotonic()
            while self._later and self._later[0][0] <= now:
                self._run(heapq.heappop(self._later)[2])
            if now >= next_sweep:
                self._sweep()
                next_sweep = now + self._sweep_every()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except OSError as exc:  # the shared trace state is unreachable: one line, not a trace
            log.error("span building failed: %s", exc)
        except Exception:  # tracing never takes the gateway down
            log.exception("span building failed")
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued job (and retry) is done; True when done in time."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Do what is queued (bounded), then stop the thread."""
        self.flush(timeout_s)
        self.closed = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout_s)
