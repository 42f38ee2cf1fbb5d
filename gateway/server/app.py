"""The aiohttp application: routes, middlewares and shared state. One short handler each."""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from gateway.server.auth import TokenTable, auth_middleware, caller_of
from gateway.server.proxy import ExchangeSink, Proxy
from gateway.server.service import GatewayService

DEFAULT_UPSTREAM = "https://api.anthropic.com"
MAX_HOOK_BODY = 1024 * 1024
MAX_MESSAGES_BODY = 64 * 1024 * 1024


@dataclass
class ServeConfig:
    policy_paths: list[str]
    host: str = "127.0.0.1"
    port: int = 8787
    upstream: str = DEFAULT_UPSTREAM
    tokens: TokenTable = field(default_factory=lambda: TokenTable({}))


SERVICE: web.AppKey[GatewayService] = web.AppKey("service", GatewayService)
PROXY: web.AppKey[Proxy] = web.AppKey("proxy", Proxy)
CONFIG: web.AppKey[ServeConfig] = web.AppKey("config", ServeConfig)


def create_app(
    config: ServeConfig, service: GatewayService, sink: ExchangeSink | None = None
) -> web.Application:
    """`service` answers hooks and runs; `sink` gets each proxied exchange (chat spans)."""
    app = web.Application(
        client_max_size=MAX_MESSAGES_BODY, middlewares=[auth_middleware(config.tokens)]
    )
    app[CONFIG] = config
    app[SERVICE] = service
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_post("/hooks/{event}", _hook)
    app.router.add_post("/v1/runs", _runs)
    app.router.add_post("/v1/messages", _messages)
    app.router.add_post("/v1/messages/count_tokens", _messages)
    app.cleanup_ctx.append(_proxy_ctx(config, sink))
    app.on_startup.append(_freeze_startup_heap)
    return app


async def _freeze_startup_heap(_app: web.Application) -> None:
    """Move what startup built (compiled policy, parsers, modules) out of the collector's
    reach: a full collection over it takes tens of milliseconds on the event loop, a pause
    every request in flight would wait out."""
    gc.collect()
    gc.freeze()


def _proxy_ctx(config: ServeConfig, sink: ExchangeSink | None) -> Any:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=600)
        connector = aiohttp.TCPConnector(limit=256, keepalive_timeout=30)
        async with aiohttp.ClientSession(
            timeout=timeout, connector=connector, auto_decompress=False
        ) as session:
            proxy = Proxy(config.upstream, session, sink)
            app[PROXY] = proxy
            yield

    return ctx


async def _messages(request: web.Request) -> web.StreamResponse:
    return await request.app[PROXY].handle(request)


async def _healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _readyz(request: web.Request) -> web.Response:
    problems = request.app[SERVICE].readiness_problems()
    status = 200 if not problems else 503
    return web.json_response({"ready": not problems, "problems": problems}, status=status)


async def _hook(request: web.Request) -> web.Response:
    event = request.match_info["event"]
    service = request.app[SERVICE]
    if not event.isascii() or not event.isalpha() or len(event) > 64:
        return web.json_response({"error": "unknown hook event"}, status=404)
    raw = await _read_limited(request, MAX_HOOK_BODY)
    if raw is None:
        return _bad_request(event, "hook body larger than 1 MiB")
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("hook input must be a JSON object")
    except ValueError as exc:
        return _bad_request(event, f"malformed JSON: {' '.join(str(exc).split())}")
    answer = await service.hook(event, body, caller_of(request))
    return web.json_response(answer)


def _bad_request(event: str, message: str) -> web.Response:
    body: dict[str, Any] = {"error": message}
    if event == "PreToolUse":
        # A client that reads the body anyway must see a deny, never a silent allow.
        body["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"agent-gateway could not read the hook input: {message}",
        }
    return web.json_response(body, status=400)


async def _read_limited(request: web.Request, limit: int) -> bytes | None:
    """The whole body, or None as soon as it exceeds `limit` (never buffered past it)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    data = bytearray()
    while chunk := await request.content.read(limit + 1 - len(data)):
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


async def _runs(request: web.Request) -> web.StreamResponse:
    service = request.app[SERVICE]
    raw = await _read_limited(request, MAX_HOOK_BODY)
    if raw is None:
        return web.json_response({"error": "run request larger than 1 MiB"}, status=400)
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("expected a JSON object")
        run = service.parse_run(body, caller_of(request))
    except ValueError as exc:
        return web.json_response({"error": " ".join(str(exc).split())}, status=400)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    async for line in service.stream_run(run):
        await response.write(line)
    await response.write_eof()
    return response
