"""A private redis-server on a free loopback port (`.ci/run` installs it when missing), and a
TCP relay in front of one that answers slowly or stalls, for the tests of what depends on it."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, directory: Path, port: int = 0, password: str = "") -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.directory = directory
        self.port = port or free_port()
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory),
             *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    auth = f"AUTH {self.password}\r\n".encode() if self.password else b""
                    conn.sendall(auth + b"PING\r\n")
                    expected = (b"+OK\r\n" if auth else b"") + b"+PONG"
                    data = b""
                    while len(data) < len(expected) and (chunk := conn.recv(64)):
                        data += chunk
                    if data.startswith(expected):
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class SlowRelay:
    """Relays TCP to `target_port`, delaying each reply by `delay_s`. Every `stall_every`-th
    reply is held `stall_s` instead (past a client's timeout: the command ran, the client
    never heard), unless another stall began less than `quiet_s` ago: one retry of a command
    that timed out always gets through. Runs its own loop on a thread."""

    def __init__(
        self, target_port: int, *, delay_s: float, stall_every: int = 0, stall_s: float = 0.0,
        quiet_s: float = 1.5,
    ) -> None:
        self.target_port = target_port
        self.delay_s, self.stall_every, self.stall_s = delay_s, stall_every, stall_s
        self.quiet_s = quiet_s
        self._last_stall = 0.0
        self.port = free_port()
        self.replies = 0
        self.stalls = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> SlowRelay:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def upstream() -> None:
            while data := await reader.read(65536):
                up_writer.write(data)
                await up_writer.drain()
            up_writer.close()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                self.replies += 1
                now = time.monotonic()
                if (self.stall_every and self.replies % self.stall_every == 0
                        and now - self._last_stall > self.quiet_s):
                    self._last_stall = now
                    self.stalls += 1
                    await asyncio.sleep(self.stall_s)
                else:
                    await asyncio.sleep(self.delay_s)
                writer.write(data)
                await writer.drain()
            writer.close()

        self._tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await asyncio.gather(upstream(), downstream())
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            up_writer.close()
            self._tasks.discard(asyncio.current_task())  # type: ignore[arg-type]

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0.05)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> SlowRelay:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
