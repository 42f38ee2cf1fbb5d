from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.server.app import ServeConfig, create_app
from gateway.server.service import GatewayService
from gateway.server.tracing import ServerTracer
from gateway.telemetry import load_price_table
from gateway.telemetry.fact_state import TraceState
from gateway.telemetry.model import SpanSpec
from gateway.tenancy.tokens import TokenTable

POLICY = """\
version: 1
name: test
permissions:
  deny:
    - Bash(rm:*)
  allow:
    - Bash(echo:*)
"""


class ListSink:
    """Collects exported spans; reading them first lets the tracer's worker finish."""

    def __init__(self) -> None:
        self._spans: list[SpanSpec] = []
        self.tracer: ServerTracer | None = None

    def export(self, specs: Any) -> None:
        self._spans.extend(specs)

    @property
    def spans(self) -> list[SpanSpec]:
        if self.tracer is not None:
            assert self.tracer.flush(10), "the tracer did not finish its queue"
        return list(self._spans)


@pytest.fixture
def policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "gw-home"))
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    yield path


AppFactory = Callable[..., Any]


@pytest.fixture
async def make_client(policy_file: Path) -> AsyncIterator[AppFactory]:
    clients: list[TestClient[Any, Any]] = []

    async def make(
        *,
        tokens: TokenTable | None = None,
        upstream: str = "http://127.0.0.1:9",
        trace_state: TraceState | None = None,
        **service_options: Any,
    ) -> tuple[TestClient[Any, Any], ListSink]:
        sink = ListSink()
        tracer = sink.tracer = ServerTracer(sink, load_price_table(), state=trace_state)
        service = GatewayService([str(policy_file)], tracer, **service_options)
        config = ServeConfig(
            policy_paths=[str(policy_file)], upstream=upstream, tokens=tokens or TokenTable({})
        )
        client: TestClient[Any, Any] = TestClient(
            TestServer(create_app(config, service, tracer.on_exchange))
        )
        await client.start_server()
        clients.append(client)
        return client, sink

    yield make
    for client in clients:
        await client.close()
