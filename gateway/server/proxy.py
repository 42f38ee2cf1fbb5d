"""Streaming pass-through to the upstream Messages API, with a tap for chat spans.

Bytes go to the client as they arrive; the tap decodes a copy. Request bodies are forwarded
as sent (Content-Encoding included), streamed as they arrive under a size limit and a deadline
(upload.py). Auth headers pass unchanged, except the one that held the gateway's own token.
Every error the gateway itself answers is in the Messages API's own shape (`anthropic_error`).

The upstream is read independently of the client: a client that leaves (before the headers,
mid-stream, before the final usage) stops the writing, not the reading, so the response's
usage is still known when its call is settled. The gateway stops reading a stream whose client
left once its final usage (`message_delta`) has arrived, and any call once it has run
`max_stream_s` (a documented maximum: the call is cut, and charged as a cut stream).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from gateway.server.auth import caller_of, gateway_token_headers
from gateway.server.bodies import BodyError
from gateway.server.json_tap import TopLevelFields
from gateway.server.sse import SseDecoder
from gateway.server.upload import Upload
from gateway.telemetry.chat import ChatAccumulator, accumulate
from gateway.telemetry.content import DEFAULT_LIMIT

# Hop-by-hop headers and those aiohttp sets itself; everything else is forwarded as is.
_DROP_REQUEST = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "transfer-encoding",
        "keep-alive",
        "te",
        "upgrade",
        "proxy-authorization",
        "accept-encoding",
        "x-agent-gateway-token",
    }
)
_DROP_RESPONSE = frozenset(
    {"content-length", "connection", "transfer-encoding", "keep-alive", "content-encoding"}
)
SESSION_HEADER = "X-Claude-Code-Session-Id"
MAX_TAPPED_BODY = 1024 * 1024
"""Non-streaming response bodies up to this size are parsed whole (for the chat span's
content); larger ones give their top-level fields only (json_tap.py), content left out."""
DEFAULT_MAX_STREAM_S = 3600.0
"""The longest a proxied call may run, request to last byte (serve --max-stream-seconds)."""
CAPTURED_REQUEST_MAX = 8 * 1024 * 1024
"""Request bodies kept whole for content capture at most (larger: no input messages)."""
log = logging.getLogger("gateway.server.proxy")


@dataclass
class ProxiedExchange:
    """What the tap learned about one proxied request."""

    session_id: str
    agent_id: str
    path: str
    request_model: str
    status: int
    retry_count: int
    started_ns: int
    first_byte_ns: int = 0
    first_token_ns: int = 0
    ended_ns: int = 0
    streamed: ChatAccumulator | None = None
    """A streamed response, folded event by event as it passed (no event is kept)."""
    body_json: dict[str, Any] | None = None
    """A non-streaming response body (whole when small; its top-level fields but the content
    when large), for the chat span and the price."""
    error: str = ""
    client_left: bool = False
    """The client went away before the response ended (the upstream was read on)."""
    charged_nanos: int | None = None
    """What the call's team budget was charged (set by its hold), for the cost metric."""
    request_body: bytes = b""
    """The request as sent (for the input messages, when content capture is on)."""
    tenant: str = ""
    content_cap: int | None = DEFAULT_LIMIT
    """What the fold keeps of the content (ChatAccumulator.content_cap)."""
    _folded: ChatAccumulator | None = field(default=None, repr=False)

    def response(self) -> ChatAccumulator:
        """The response folded (usage, model, stop reason, content within the cap)."""
        if self._folded is None:
            self._folded = (
                self.streamed if self.streamed is not None
                else accumulate((), self.body_json, content_cap=self.content_cap)
            )
        return self._folded


ExchangeSink = Callable[[ProxiedExchange], None]


class Settles(Protocol):
    """A budget hold: told once how the response ended (server/budget_gate.py)."""

    def settle(self, exchange: ProxiedExchange) -> None: ...


@dataclass
class Proxy:
    upstream: str
    session: aiohttp.ClientSession
    sink: ExchangeSink | None = None
    content_cap: int | None = DEFAULT_LIMIT
    """What each exchange keeps of the response's content (for content capture's output
    messages): the capture limit when capture is on, 0 when it is off."""
    max_stream_s: float = DEFAULT_MAX_STREAM_S

    @property
    def keep(self) -> int:
        """What each request body keeps: its head (the model, max_tokens), or for content
        capture the whole of one small enough to be parsed after the response."""
        return CAPTURED_REQUEST_MAX if self.content_cap != 0 else PARSE_REQUEST_MAX

    async def handle(
        self, request: web.Request, upload: Upload, hold: Settles | None = None
    ) -> web.StreamResponse:
        exchange = self._exchange(request)
        url = self.upstream.rstrip("/") + request.path_qs
        client = _Client(request)
        deadline = asyncio.timeout(self.max_stream_s)
        try:
            async with deadline, self.session.post(
                url, data=upload.chunks(), headers=_upstream_headers(request, upload)
            ) as upstream:
                exchange.status = upstream.status
                await client.start(upstream)
                await self._pump(upstream, client, exchange)
            return await client.finish()
        except (aiohttp.ClientError, TimeoutError, BodyError) as exc:
            return self._failed(exc, exchange, upload, client, deadline.expired())
        finally:
            exchange.ended_ns = time.time_ns()
            exchange.client_left = client.gone
            if hold is not None:
                hold.settle(exchange)
            self._record(request, upload, exchange)

    def _exchange(self, request: web.Request) -> ProxiedExchange:
        """What the tap will learn about this request, started now."""
        return ProxiedExchange(
            session_id=request.headers.get(SESSION_HEADER, ""),
            agent_id=request.headers.get("x-claude-code-agent-id", ""),
            path=request.path,
            request_model="",
            status=0,
            retry_count=_int(request.headers.get("X-Stainless-Retry-Count")),
            started_ns=time.time_ns(),
            tenant=caller_of(request).name,
            content_cap=self.content_cap,
        )

    def _failed(self, exc: BaseException, exchange: ProxiedExchange, upload: Upload,
                client: _Client, timed_out: bool) -> web.StreamResponse:
        """The answer to a call that failed: the request body refused, the maximum duration
        passed, or the upstream failed; a cut stream once the headers are out."""
        refused = upload.error  # the request body was refused as it streamed
        if refused is not None:
            exchange.error = f"request body refused: {refused}"
        elif timed_out:
            exchange.error = (f"the call ran past the gateway's maximum of "
                              f"{self.max_stream_s:g} s (serve --max-stream-seconds)")
        else:
            exchange.error = (
                f"upstream failed: {' '.join(str(exc).split()) or type(exc).__name__}"
            )
        if client.response is not None:
            # Headers are out: the client sees a cut stream, as from the upstream.
            log.warning("proxied call cut: %s", exchange.error)
            return client.cut()
        if refused is not None:
            exchange.status = refused.status
            return anthropic_error(refused.status, error_type(refused.status),
                                   f"agent-gateway: {refused}")
        exchange.status = 502
        return anthropic_error(502, "api_error", exchange.error)

    def _record(self, request: web.Request, upload: Upload, exchange: ProxiedExchange) -> None:
        """The exchange to the sink (the chat span, metrics) once the call is over."""
        if self.sink is None or request.path != "/v1/messages":
            return
        # Parsed after the response, off the time-to-first-byte path.
        whole = upload.whole
        exchange.request_model = request_model(whole or upload.head[:1024])
        exchange.request_body = whole or b""
        try:
            self.sink(exchange)
        except Exception:  # tracing must never break the proxied call
            log.exception("chat span for a proxied request failed")

    async def _pump(
        self,
        upstream: aiohttp.ClientResponse,
        client: _Client,
        exchange: ProxiedExchange,
    ) -> None:
        """Forward each chunk as it arrives; fold a decoded copy into the exchange's response
        as it passes, so what a stream holds here does not grow with its length. Reads on when
        the client has left, until the response's usage is known."""
        decoder = acc = None
        if _is_sse(upstream):
            decoder = SseDecoder()
            acc = exchange.streamed = ChatAccumulator(content_cap=exchange.content_cap)
        kept = bytearray()
        fields: TopLevelFields | None = None
        async for chunk in upstream.content.iter_any():
            now = time.time_ns()
            exchange.first_byte_ns = exchange.first_byte_ns or now
            await client.write(chunk)
            if decoder is None or acc is None:
                if fields is None and len(kept) + len(chunk) <= MAX_TAPPED_BODY:
                    kept += chunk
                    continue
                if fields is None:  # too large to parse whole: its top-level fields
                    fields = TopLevelFields()
                    fields.feed(bytes(kept))
                    kept = bytearray()
                fields.feed(chunk)
                continue
            for event in decoder.feed(chunk):
                if not exchange.first_token_ns and event.get("type") == "content_block_delta":
                    exchange.first_token_ns = now
                acc.apply(event)
            if client.gone and acc.exact:
                return  # the final usage is in: nobody reads the rest
        if decoder is None:
            exchange.body_json = fields.message() if fields is not None else (
                _json_object(bytes(kept)) if kept else None
            )


def _upstream_headers(request: web.Request, upload: Upload) -> dict[str, str]:
    """The request's headers as forwarded: hop-by-hop ones dropped, and the one that held
    the gateway's own token (it is not the upstream's credential)."""
    drop = _DROP_REQUEST | gateway_token_headers(request)
    headers = {k: v for k, v in request.headers.items() if k.lower() not in drop}
    headers["Accept-Encoding"] = "identity"  # the tap reads the SSE as text
    if upload.length is not None:  # streamed on as it came, not chunked
        headers["Content-Length"] = str(upload.length)
    return headers


class _Client:
    """The client's side of one proxied call: writes stop, quietly, once it has left."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self.gone = False

    async def start(self, upstream: aiohttp.ClientResponse) -> None:
        self.response = web.StreamResponse(
            status=upstream.status,
            headers={k: v for k, v in upstream.headers.items()
                     if k.lower() not in _DROP_RESPONSE},
        )
        try:
            await self.response.prepare(self.request)
        except ConnectionError:
            self.gone = True

    async def write(self, chunk: bytes) -> None:
        if self.gone or self.response is None:
            return
        try:
            await self.response.write(chunk)
        except ConnectionError:
            self.gone = True

    async def finish(self) -> web.StreamResponse:
        assert self.response is not None
        if not self.gone:
            try:
                await self.response.write_eof()
            except ConnectionError:
                self.gone = True
        return self.response

    def cut(self) -> web.StreamResponse:
        """End the connection without the end of the response: the client sees it cut."""
        assert self.response is not None
        transport = self.request.transport
        if transport is not None:
            transport.close()
        return self.response


def anthropic_error(status: int, error_type: str, message: str) -> web.Response:
    """An error in the Messages API's own shape, which Claude Code shows to the user."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return web.json_response(body, status=status)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 529: "overloaded_error"}


def error_type(status: int) -> str:
    """The Messages API's error type for a status (its docs: other 4xx are
    invalid_request_error, 5xx api_error)."""
    return _ERROR_TYPES.get(status) or ("invalid_request_error" if status < 500 else "api_error")


def _is_sse(response: aiohttp.ClientResponse) -> bool:
    return response.headers.get("Content-Type", "").startswith("text/event-stream")


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: not read
        return None
    return value if isinstance(value, dict) else None


_LEADING_MODEL = re.compile(rb'\A\s*\{\s*"model"\s*:\s*"([^"\\]{1,256})"')
PARSE_REQUEST_MAX = 256 * 1024


def request_model(body: bytes) -> str:
    """The requested model: Claude Code writes `model` first, so the head says it; other
    bodies are parsed only when small (a long conversation would stall the loop)."""
    found = _LEADING_MODEL.match(body[:1024])
    if found:
        return found.group(1).decode("utf-8", "replace")
    if len(body) > PARSE_REQUEST_MAX:
        return ""
    model = (_json_object(body) or {}).get("model")
    return model if isinstance(model, str) else ""


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
