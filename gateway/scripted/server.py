"""The scripted Messages API as an aiohttp app, runnable in a background thread."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from gateway.scripted.scenario import (
    RequestKind,
    Scenario,
    ScenarioCursor,
    classify_request,
    load_scenario,
)
from gateway.scripted.sse import encode_sse, error_body, message_body, stream_events

SESSION_HEADER = "X-Claude-Code-Session-Id"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the scripted API received, for assertions."""

    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    session_id: str
    kind: RequestKind
    response_index: int
    """Index into scenario.responses; -1 for the default, -2 when nothing was scripted."""
    message_id: str = ""
    status: int = 200

    @property
    def is_subagent(self) -> bool:
        return any(k.lower() == "x-claude-code-agent-id" for k in self.headers)


RequestObserver = Callable[[RecordedRequest], None]


@dataclass
class _State:
    scenario: Scenario
    cursor: ScenarioCursor
    on_request: RequestObserver | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=itertools.count)
    lock: threading.Lock = field(default_factory=threading.Lock)


_STATE: web.AppKey[_State] = web.AppKey("scripted_state", _State)


def build_app(scenario: Scenario, on_request: RequestObserver | None = None) -> web.Application:
    """`on_request` sees each Messages API request as it arrives, before it is answered."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[_STATE] = _State(scenario=scenario, cursor=ScenarioCursor(scenario), on_request=on_request)
    app.router.add_post("/v1/messages", _messages)
    app.router.add_post("/v1/messages/count_tokens", _count_tokens)
    return app


async def _messages(request: web.Request) -> web.StreamResponse:
    state = request.app[_STATE]
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return web.json_response(
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad JSON"}},
            status=400,
        )
    session_id = request.headers.get(SESSION_HEADER, "")
    kind = classify_request(body, request.headers)
    with state.lock:
        try:
            index, response = state.cursor.next_response(session_id, kind)
        except LookupError as exc:
            index, response = -2, None
            err = str(exc)
        message_id = f"msg_{next(state.ids):04d}"
        status = (
            response.status if response and response.status else (500 if response is None else 200)
        )
        recorded = RecordedRequest(
            path=request.path,
            headers=dict(request.headers),
            body=body,
            session_id=session_id,
            kind=kind,
            response_index=index,
            message_id=message_id,
            status=status,
        )
        state.requests.append(recorded)
    if state.on_request is not None:
        state.on_request(recorded)
    if response is None:
        return web.json_response(
            {"type": "error", "error": {"type": "api_error", "message": err}}, status=500
        )
    if response.delay_ms:
        await asyncio.sleep(response.delay_ms / 1000)
    if response.status is not None:
        return web.json_response(error_body(response), status=response.status)
    model = response.model or str(body.get("model") or state.scenario.model)
    if not body.get("stream"):
        return web.json_response(message_body(response, message_id, model))
    stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await stream.prepare(request)
    for event in stream_events(response, message_id, model):
        await stream.write(encode_sse(event))
    await stream.write_eof()
    return stream


async def _count_tokens(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    with state.lock:
        state.requests.append(
            RecordedRequest(
                path=request.path,
                headers=dict(request.headers),
                body={},
                session_id=request.headers.get(SESSION_HEADER, ""),
                kind="any",
                response_index=-1,
            )
        )
    return web.json_response({"input_tokens": state.scenario.count_tokens})


def _bound_port(site: web.TCPSite) -> int:
    server: Any = site._server  # aiohttp exposes the bound port only on the asyncio server
    return int(server.sockets[0].getsockname()[1])


class ScriptedServer:
    """Runs the scripted API on a free loopback port in a background thread.

    Use as a context manager; `url` is what ANTHROPIC_BASE_URL should be.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | Mapping[str, Any],
        *,
        port: int = 0,
        on_request: RequestObserver | None = None,
    ) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self._port = port
        self._app = build_app(self.scenario, on_request)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        # In-flight (e.g. delayed) responses get a second at stop, not aiohttp's default minute.
        self._runner = web.AppRunner(self._app, access_log=None, shutdown_timeout=1.0)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Messages API requests received so far (count_tokens excluded)."""
        state = self._app[_STATE]
        with state.lock:
            return [r for r in state.requests if r.path == "/v1/messages"]

    def start(self) -> ScriptedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    async def _start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        self.port = _bound_port(site)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
