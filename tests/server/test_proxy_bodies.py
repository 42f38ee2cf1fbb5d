"""Bad input to the Messages API proxy: every answer the gateway makes itself is a Messages API
error (`{"type": "error", "error": {"type", "message"}}`) with the right status, never
aiohttp's plain text; bodies stream through under a size limit and a deadline, and one over
the limit never reaches the upstream as a complete request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.server import app as app_module
from gateway.server.app import MAX_MESSAGES_BODY
from tests.server.conftest import AppFactory
from tests.server.processes import ThreadedApp

DEEP = b'{"messages": ' + b"[" * 10_000 + b"]" * 10_000 + b', "model": "claude-opus-5-5"}'
"""As the report sent it: not Claude Code's field order, so the model is looked for by parsing."""
REQUEST = {"model": "claude-opus-5-5", "max_tokens": 100,
           "messages": [{"role": "user", "content": "hi"}]}


@dataclass
class Upstream:
    """A Messages API stand-in that reads each body as it comes and keeps only its size."""

    response: bytes = json.dumps({"type": "message", "model": "claude-opus-5-5",
                                  "usage": {"input_tokens": 3, "output_tokens": 4}}).encode()
    received: list[int] = field(default_factory=list)
    """Sizes of the request bodies received whole."""
    cut: list[int] = field(default_factory=list)
    """Bytes of the request bodies that stopped before their end."""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/messages", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        size = 0
        try:
            while chunk := await request.content.readany():
                size += len(chunk)
        except (aiohttp.ClientPayloadError, ConnectionError):
            self.cut.append(size)  # the sender gave up: nothing to answer
            return web.Response(status=400)
        if request.content_length is not None and size < request.content_length:
            self.cut.append(size)
        else:
            self.received.append(size)
        return web.Response(body=self.response, content_type="application/json")


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    stand_in = Upstream()
    with ThreadedApp(stand_in.app()) as served:
        yield stand_in, served.url


def anthropic_error(body: Any, status: int, error_type: str) -> str:
    assert body["type"] == "error", body
    assert body["error"]["type"] == error_type, body
    message: str = body["error"]["message"]
    assert message
    return message


async def chunked(size: int, block: int = 64 * 1024) -> AsyncIterator[bytes]:
    sent = 0
    while sent < size:
        yield b"x" * min(block, size - sent)
        sent += block


async def test_a_deeply_nested_body_is_forwarded_and_accounted_for(
    make_client: AppFactory, upstream: tuple[Upstream, str]
) -> None:
    stand_in, url = upstream
    client, sink = await make_client(upstream=url)
    resp = await client.post("/v1/messages", data=DEEP,
                             headers={"Content-Type": "application/json",
                                      "X-Claude-Code-Session-Id": "sess-deep"})
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["type"] == "message"
    assert stand_in.received == [len(DEEP)]
    assert [s for s in sink.spans if s.name.startswith("chat")]  # the exchange was recorded


async def test_a_deeply_nested_body_to_an_unreachable_upstream_is_a_502(
    make_client: AppFactory
) -> None:
    """The report's 500: the model was looked for after the upstream failed, and the
    parser's RecursionError replaced the answer with aiohttp's plain text."""
    client, _ = await make_client(upstream="http://127.0.0.1:9")
    resp = await client.post("/v1/messages", data=DEEP,
                             headers={"Content-Type": "application/json"})
    assert resp.status == 502
    assert "upstream failed" in anthropic_error(await resp.json(), 502, "api_error")


async def test_a_deeply_nested_response_passes_through_whole(
    make_client: AppFactory, upstream: tuple[Upstream, str]
) -> None:
    stand_in, url = upstream
    stand_in.response = b'{"type": "message", "content": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    client, _ = await make_client(upstream=url)
    resp = await client.post("/v1/messages", json=REQUEST)
    assert resp.status == 200
    assert await resp.read() == stand_in.response


async def test_a_body_over_the_limit_by_content_length_is_refused_unread(
    make_client: AppFactory, upstream: tuple[Upstream, str]
) -> None:
    stand_in, url = upstream
    client, _ = await make_client(upstream=url)
    resp = await client.post("/v1/messages", data=b"x" * (MAX_MESSAGES_BODY + 1))
    assert resp.status == 413
    message = anthropic_error(await resp.json(), 413, "request_too_large")
    assert "32 MiB" in message
    assert stand_in.received == [] and stand_in.cut == []  # nothing was forwarded


async def test_a_streamed_body_over_the_limit_is_cut_and_refused(
    make_client: AppFactory, upstream: tuple[Upstream, str]
) -> None:
    stand_in, url = upstream
    client, _ = await make_client(upstream=url)
    resp = await client.post("/v1/messages", data=chunked(MAX_MESSAGES_BODY + 1024 * 1024))
    assert resp.status == 413
    anthropic_error(await resp.json(), 413, "request_too_large")
    await asyncio.sleep(0.2)
    assert stand_in.received == []  # the upstream never saw a complete request
    # ... and one within the limit, sent the same way, goes through whole
    resp = await client.post("/v1/messages", data=chunked(3 * 1024 * 1024))
    assert resp.status == 200
    assert stand_in.received == [3 * 1024 * 1024]


async def test_a_body_that_does_not_arrive_in_time_is_a_408(
    make_client: AppFactory, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "MESSAGES_BODY_TIMEOUT_S", 0.5)
    _, url = upstream
    client, _ = await make_client(upstream=url)

    async def slowly() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" "
            await asyncio.sleep(0.1)

    resp = await client.post("/v1/messages", data=slowly())
    assert resp.status == 408
    message = anthropic_error(await resp.json(), 408, "invalid_request_error")
    assert "did not arrive within 0.5 s" in message


@pytest.mark.parametrize(
    ("method", "path", "status", "error_type"),
    [
        ("GET", "/v1/messages", 405, "invalid_request_error"),
        ("POST", "/v1/messages/batches", 404, "not_found_error"),
    ],
)
async def test_routing_errors_are_messages_api_errors(
    make_client: AppFactory, method: str, path: str, status: int, error_type: str
) -> None:
    client, _ = await make_client()
    resp = await client.request(method, path)
    assert resp.status == status
    anthropic_error(await resp.json(), status, error_type)


async def test_an_internal_error_is_a_messages_api_500(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_args: Any, **_kw: Any) -> web.StreamResponse:
        raise RuntimeError("a bug")

    monkeypatch.setattr(app_module.Proxy, "handle", broken)
    client, _ = await make_client()
    resp = await client.post("/v1/messages", json=REQUEST)
    assert resp.status == 500
    message = anthropic_error(await resp.json(), 500, "api_error")
    assert "RuntimeError: a bug" in message
    # other paths answer JSON too, never plain text
    resp = await client.get("/nowhere")
    assert resp.status == 404 and await resp.json() == {"error": "Not Found"}
