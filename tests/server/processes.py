"""Test helpers: an aiohttp app on a background thread, and `agent-gateway serve` processes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from aiohttp import web

ROOT = Path(__file__).parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadedApp:
    """An aiohttp app served on 127.0.0.1 from its own thread and loop."""

    def __init__(self, app: web.Application, port: int = 0) -> None:
        self.port = port or free_port()
        self._runner = web.AppRunner(app, access_log=None)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ThreadedApp:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    async def _start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> ThreadedApp:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ServeProcess:
    """`python -m gateway serve` on a free port; stopped with SIGTERM (graceful)."""

    def __init__(
        self,
        policies: Sequence[str],
        upstream: str,
        env: Mapping[str, str],
        *,
        port: int = 0,
        log: Path | None = None,
        args: Sequence[str] = (),
        wrapper: Sequence[str] = (),
    ) -> None:
        """`wrapper`: a command that runs serve (`setpriv ...`)."""
        self.port = port or free_port()
        cmd = [*wrapper, sys.executable, "-m", "gateway", "serve", "--port", str(self.port)]
        for p in policies:
            cmd += ["--policy", p]
        cmd += ["--upstream", upstream, "--drain-seconds", "5", *args]
        self._log = (log or Path(os.devnull)).open("ab")
        # The checkout first; a PYTHONPATH in `env` after it (a test's sitecustomize).
        path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        self.proc = subprocess.Popen(
            cmd, env={**env, "PYTHONPATH": path}, stdout=self._log, stderr=self._log
        )
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("serve did not become healthy")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return int(self.proc.returncode)

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
