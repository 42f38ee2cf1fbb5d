from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import ScriptedServer
from tests.e2e.harness import Sandbox


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    home, cwd, gw = tmp_path / "home", tmp_path / "work", tmp_path / "gateway-home"
    for d in (home, cwd, gw):
        d.mkdir()
    return Sandbox(home=home, cwd=cwd, gateway_home=gw)


@pytest.fixture
def scripted(sandbox: Sandbox) -> Iterator[Callable[[dict[str, Any]], ScriptedServer]]:
    """Start a scripted Messages API for a scenario and point the sandbox at it."""
    servers: list[ScriptedServer] = []

    def start(scenario: dict[str, Any]) -> ScriptedServer:
        server = ScriptedServer(scenario).start()
        servers.append(server)
        sandbox.base_url = server.url
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(autouse=True)
def _no_ambient_audit_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own key file or log exporter must not leak into the tests."""
    monkeypatch.delenv("AGENT_GATEWAY_AUDIT_KEY_FILE", raising=False)
    monkeypatch.delenv("OTEL_LOGS_EXPORTER", raising=False)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private redis-server on a free loopback port (`.ci/run` installs it when missing)."""
    import shutil
    import socket
    import subprocess
    import time

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
