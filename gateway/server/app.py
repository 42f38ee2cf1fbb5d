"""The aiohttp application: routes, middlewares and shared state. One short handler each."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from gateway.budgets.enforcer import Refusal
from gateway.budgets.request import CallShape, UnreadableRequest, call_shape
from gateway.errors import one_line
from gateway.hookio.events import is_hook_event, spelled_like
from gateway.server.audit_events import BUDGET_RULE, MODEL_REQUEST
from gateway.server.auth import (
    METRICS_AUTH_FAILURE,
    auth_middleware,
    caller_of,
    identify,
    scraper_allowed,
)
from gateway.server.bodies import BodyError, JSONBody, decode, parse_object, read_limited
from gateway.server.budget_gate import REFUSAL_STATUS, REFUSAL_TYPE
from gateway.server.hook_replies import cannot_answer
from gateway.server.proxy import (
    DEFAULT_MAX_STREAM_S,
    SESSION_HEADER,
    ExchangeSink,
    Proxy,
    anthropic_error,
    error_type,
)
from gateway.server.runs import RunRefused
from gateway.server.service import GatewayService
from gateway.server.upload import Upload
from gateway.telemetry.content import DEFAULT_LIMIT
from gateway.tenancy.tokens import TokenTable

DEFAULT_UPSTREAM = "https://api.anthropic.com"
MAX_HOOK_BODY = 1024 * 1024
MAX_MESSAGES_BODY = 32 * 1024 * 1024
"""The Messages API's own limit (32 MB): a larger body could only be refused upstream."""
HOOK_BODY_TIMEOUT_S = 10.0
"""A hook or run body (at most 1 MiB) must arrive whole within this."""
MESSAGES_BODY_TIMEOUT_S = 120.0
"""A Messages API body (at most 32 MiB) must arrive whole within this."""
PARSE_INLINE = 64 * 1024
"""Bodies up to this size are decoded and parsed on the loop; larger ones in a thread."""
PARSE_IN_PROCESS = 1024 * 1024
"""A budgeted request body larger than this is parsed in a process (about 20 ms of GIL a MiB)."""
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
log = logging.getLogger("gateway.server")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class ServeConfig:
    policy_paths: list[str]
    host: str = "127.0.0.1"
    port: int = 8787
    upstream: str = DEFAULT_UPSTREAM
    tokens: TokenTable = field(default_factory=lambda: TokenTable({}))
    metrics_token: str = ""
    """With authentication on, GET /metrics needs this token (a scraper's, not a tenant's:
    the series name every team's spend)."""
    content_cap: int | None = DEFAULT_LIMIT
    """What the proxy keeps of each response's content, for content capture (0: nothing)."""
    max_stream_s: float = DEFAULT_MAX_STREAM_S
    """The longest a proxied model call may run (serve --max-stream-seconds)."""


SERVICE: web.AppKey[GatewayService] = web.AppKey("service", GatewayService)
PROXY: web.AppKey[Proxy] = web.AppKey("proxy", Proxy)
CONFIG: web.AppKey[ServeConfig] = web.AppKey("config", ServeConfig)


def create_app(
    config: ServeConfig, service: GatewayService, sink: ExchangeSink | None = None
) -> web.Application:
    """`service` answers hooks and runs; `sink` gets each proxied exchange (chat spans)."""
    app = web.Application(
        # Bodies are read where their limits are (bodies.py, upload.py); this is a backstop.
        client_max_size=MAX_HOOK_BODY,
        middlewares=[_errors, auth_middleware(config.tokens)],
        # Bodies are decoded where the limits are (bodies.py); the proxy forwards them as sent.
        handler_args={"auto_decompress": False},
    )
    app[CONFIG] = config
    app[SERVICE] = service
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_post("/hooks/{event}", _hook)
    app.router.add_post("/v1/runs", _runs)
    app.router.add_post("/v1/messages", _messages)
    app.router.add_post("/v1/messages/count_tokens", _messages)
    if service.metrics.registry is not None:
        app.router.add_get("/metrics", _metrics)
    app.cleanup_ctx.append(_service_ctx)
    app.cleanup_ctx.append(_proxy_ctx(config, sink))
    app.on_startup.append(_freeze_startup_heap)
    return app


async def _service_ctx(app: web.Application) -> AsyncIterator[None]:
    service = app[SERVICE]
    await service.start()
    yield
    await service.close()


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
            proxy = Proxy(config.upstream, session, sink, config.content_cap,
                          max_stream_s=config.max_stream_s)
            app[PROXY] = proxy
            yield

    return ctx


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """No error leaves as aiohttp's plain text: the Messages API paths answer in that API's
    shape (which Claude Code shows), the others `{"error": ...}`."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(request, exc.status, exc.reason)
    except Exception as exc:
        if request.writer.output_size:
            raise  # the answer is under way: aiohttp cuts the connection
        log.exception("%s %s not answered", request.method, request.path[:64])
        return _error(request, 500, f"agent-gateway could not answer: {one_line(exc, typed=True)}")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    if request.path.startswith("/v1/messages"):
        return anthropic_error(status, error_type(status), message)
    return web.json_response({"error": message}, status=status)


async def _messages(request: web.Request) -> web.StreamResponse:
    caller = caller_of(request)
    service = request.app[SERVICE]
    session_id = request.headers.get(SESSION_HEADER, "")
    refusal = await service.model_request_refusal(session_id, caller)
    if refusal:
        return anthropic_error(403, "permission_error", f"agent-gateway refused: {refusal}")
    proxy = request.app[PROXY]
    try:
        upload = Upload(request, MAX_MESSAGES_BODY, timeout_s=MESSAGES_BODY_TIMEOUT_S,
                        keep=proxy.keep)
        if service.gate is not None and request.path == "/v1/messages":
            return await _budgeted(request, upload)
    except BodyError as exc:
        return anthropic_error(exc.status, error_type(exc.status), f"agent-gateway: {exc}")
    return await proxy.handle(request, upload)


async def _budgeted(request: web.Request, upload: Upload) -> web.StreamResponse:
    """A model request of a caller who may have a team budget: a hold first, or a refusal."""
    caller = caller_of(request)
    service = request.app[SERVICE]
    if service.gate is None or not caller.budget:
        return await request.app[PROXY].handle(request, upload)
    # The hold is the most the call can cost: its model, max_tokens (Claude Code writes it
    # after the conversation) and size are read from the whole body before anything is sent.
    try:
        shape = await _call_shape(request, upload)
    except UnreadableRequest as exc:
        return anthropic_error(400, "invalid_request_error", f"agent-gateway: {exc}")
    outcome = await service.gate.hold_call(caller, shape)
    if isinstance(outcome, Refusal):
        await service.audit_refusal(
            MODEL_REQUEST, {"session_id": request.headers.get(SESSION_HEADER, "")}, caller,
            outcome.message, rule_id=BUDGET_RULE,
        )
        return anthropic_error(REFUSAL_STATUS, REFUSAL_TYPE, outcome.message)
    return await request.app[PROXY].handle(request, upload, outcome)


async def _call_shape(request: web.Request, upload: Upload) -> CallShape:
    """Reads the whole body (kept by `upload` to be forwarded; this copy is not kept)."""
    raw = await upload.buffer()
    encoding = request.headers.get("Content-Encoding", "")
    service = request.app[SERVICE]
    shape: CallShape
    if len(raw) > PARSE_IN_PROCESS:  # a thread would hold the GIL, and the loop, for long
        shape = await service.offload_cpu(read_call_shape, raw, encoding)
    elif encoding or len(raw) > PARSE_INLINE:
        shape = await service.offload(read_call_shape, raw, encoding)
    else:
        shape = read_call_shape(raw, encoding)
    return shape


def read_call_shape(raw: bytes, encoding: str) -> CallShape:
    """The request's cost shape, from its decoded body (BodyError: 4xx; UnreadableRequest)."""
    return call_shape(decode(raw, encoding, MAX_MESSAGES_BODY))


async def _metrics(request: web.Request) -> web.Response:
    config = request.app[CONFIG]
    if config.tokens.enabled and not scraper_allowed(request, config.metrics_token):
        return web.json_response({"error": METRICS_AUTH_FAILURE}, status=401,
                                 headers={"WWW-Authenticate": "Bearer"})
    service = request.app[SERVICE]
    text = await service.offload(service.metrics.prometheus_text)
    return web.Response(body=text, headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})


async def _healthz(request: web.Request) -> web.Response:
    # Whether callers need a token: `agent-gateway settings` writes what fits. Anyone can
    # learn it anyway from a 401.
    auth = "on" if request.app[CONFIG].tokens.enabled else "off"
    return web.json_response({"status": "ok", "auth": auth})


async def _readyz(request: web.Request) -> web.Response:
    """Ready or not, to anyone (a load balancer's probe carries no token); why, only to a
    token: the metrics (operator's) token sees everything, a tenant's token the problems and
    the warnings about its own policy files, never another tenant's."""
    config = request.app[CONFIG]
    service = request.app[SERVICE]
    state = await service.readiness()
    status = 200 if state.ready else 503
    if not config.tokens.enabled or scraper_allowed(request, config.metrics_token):
        return web.json_response(state.details(), status=status)
    caller = identify(config.tokens, request)
    if caller is None:
        return web.json_response({"ready": state.ready}, status=status)
    return web.json_response(state.details(service.policy_layers(caller)), status=status)


async def _hook(request: web.Request) -> web.Response:
    started = time.perf_counter()
    event = request.match_info["event"]
    if not is_hook_event(event):
        meant = spelled_like(event)
        hint = f" (Claude Code's name is {meant})" if meant else ""
        log.warning("hook request for unknown event %r%s: 404", event[:64], hint)
        return web.json_response(
            {"error": f"unknown hook event {event[:64]!r}{hint}; names are case-sensitive"},
            status=404,
        )
    try:
        raw, body = await _read_json(request, MAX_HOOK_BODY)
    except BodyError as exc:
        reply = await request.app[SERVICE].unreadable(event, {}, caller_of(request),
                                                      exc.status, str(exc))
        return web.json_response(reply.body, status=reply.status)
    service = request.app[SERVICE]
    try:
        # The fingerprint of the OS sandbox is in the hook URL the generated settings hold
        # (`?sandbox=`), which the agent cannot change.
        sandbox = request.query.get("sandbox", "")[:64]
        reply = await service.hook(event, body, raw, caller_of(request), sandbox=sandbox)
    except Exception as exc:  # fail closed: a deny (or block) and a 500, never a bare error
        log.exception("hook %s not answered", event)
        reply = cannot_answer(event, exc)
    response = web.json_response(reply.body, status=reply.status)
    if reply.after is not None:
        try:  # the answer goes out first; copies and spans after, even if the client left
            await response.prepare(request)
            await response.write_eof()
        finally:
            try:
                reply.after()
            except Exception:  # never changes an answer already sent
                log.exception("hook %s: work after the answer failed", event)
    service.metrics.hook(event, time.perf_counter() - started)
    return response


async def _read_json(request: web.Request, limit: int) -> JSONBody:
    """The decoded body and its JSON object, within the limits of bodies.py."""
    raw = await read_limited(request, limit, HOOK_BODY_TIMEOUT_S)
    encoding = request.headers.get("Content-Encoding", "")
    if len(raw) <= PARSE_INLINE and not encoding:
        return JSONBody(raw, parse_object(raw))
    return await request.app[SERVICE].offload_parse(raw, encoding, limit)


async def _runs(request: web.Request) -> web.StreamResponse:
    service = request.app[SERVICE]
    caller = caller_of(request)
    try:
        _, body = await _read_json(request, MAX_HOOK_BODY)
        run = await service.prepare_run(body, caller)
    except (BodyError, RunRefused) as exc:
        return web.json_response({"error": one_line(exc)}, status=exc.status)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    async for line in service.stream_run(run, caller):
        await response.write(line)
    await response.write_eof()
    return response
