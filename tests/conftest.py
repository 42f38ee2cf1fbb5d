from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox
from tests.redis_server import RedisServer


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


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private redis-server on a free loopback port (`.ci/run` installs it when missing)."""
    with RedisServer(tmp_path) as server:
        yield server.url


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ambient OTEL_* variables: the SDK's exporters read the process environment, so a test
    sets what it means with `otel.setenv`."""
    import os

    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture(autouse=True)
def _no_ambient_audit_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own key file, log exporter or policy must not leak into the tests."""
    monkeypatch.delenv("AGENT_GATEWAY_AUDIT_KEY_FILE", raising=False)
    monkeypatch.delenv("OTEL_LOGS_EXPORTER", raising=False)
    monkeypatch.delenv("AGENT_GATEWAY_POLICY", raising=False)
