"""A worker for WorkerPool tests: each request says how to behave."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection
from typing import Any

from gateway.server.workers import serve_jobs


def worker(conn: Connection, init: Any) -> None:
    def handle(request: tuple[str, float]) -> tuple[str, int, int, Any]:
        kind, value = request
        if kind == "sleep":
            time.sleep(value)
        elif kind == "spin":
            end = time.monotonic() + value
            while time.monotonic() < end:
                pass
        elif kind == "die":
            os._exit(3)
        return (kind, os.getpid(), os.getpriority(os.PRIO_PROCESS, 0), init)

    serve_jobs(conn, handle)
