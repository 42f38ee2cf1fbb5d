"""A worker for WorkerPool tests: each request says how to behave."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection
from typing import Any


def worker(conn: Connection, init: Any) -> None:
    conn.send(("ready",))
    while True:
        try:
            kind, value = conn.recv()
        except EOFError:
            return
        if kind == "sleep":
            time.sleep(value)
        elif kind == "spin":
            end = time.monotonic() + value
            while time.monotonic() < end:
                pass
        elif kind == "die":
            os._exit(3)
        conn.send((kind, os.getpid(), os.getpriority(os.PRIO_PROCESS, 0), init))
