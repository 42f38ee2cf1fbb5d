"""A fake Messages API that bills like the real one, for the budget tests: each response's usage
is what it says it billed, a stream the caller cuts is billed its input and the output sent so
far, and tests can hold a response at named points (`gates`) to act while it is in flight."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.server.processes import ThreadedApp

MODEL = "claude-opus-5-5"


@dataclass
class Billed:
    input_tokens: int
    output_tokens: int
    complete: bool


@dataclass
class BillingUpstream:
    """`input_tokens`/`output_tokens`: each response's usage (output sent in `deltas` parts,
    `pause_s` apart). `gates`: names of points a response waits at until `release(name)`:
    'headers' (before the status line), 'after_start' (after message_start), 'before_final'
    (after the last delta, before message_delta). `text_bytes`: the size of a non-streaming
    response's text."""

    input_tokens: int = 1000
    output_tokens: int = 100_000
    deltas: int = 4
    pause_s: float = 0.0
    delay_s: float = 0.0
    gates: frozenset[str] = frozenset()
    text_bytes: int = 64
    model: str = MODEL
    received: int = 0
    billed: list[Billed] = field(default_factory=list)
    _open: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _app: ThreadedApp | None = None

    def __post_init__(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        self._app = ThreadedApp(app)

    @property
    def url(self) -> str:
        assert self._app is not None
        return self._app.url

    def start(self) -> BillingUpstream:
        assert self._app is not None
        self._app.start()
        return self

    def stop(self) -> None:
        assert self._app is not None
        self._app.stop()

    def __enter__(self) -> BillingUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def release(self, gate: str) -> None:
        with self._lock:
            self._open.add(gate)

    def billed_usage(self) -> list[Billed]:
        with self._lock:
            return list(self.billed)

    async def _gate(self, name: str) -> None:
        if name not in self.gates:
            return
        while True:
            with self._lock:
                if name in self._open:
                    return
            await asyncio.sleep(0.01)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.received += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        await self._gate("headers")
        if not body.get("stream"):
            return await self._json(request)
        return await self._sse(request)

    def _bill(self, output: int, complete: bool) -> None:
        with self._lock:
            self.billed.append(Billed(self.input_tokens, output, complete))

    async def _json(self, request: web.Request) -> web.StreamResponse:
        message = {
            "id": "msg_1", "type": "message", "role": "assistant", "model": self.model,
            "content": [{"type": "text", "text": "x" * self.text_bytes}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        try:
            await response.prepare(request)
            data = json.dumps(message).encode()
            for at in range(0, len(data), 256 * 1024):  # as a real server sends a large body
                await response.write(data[at:at + 256 * 1024])
            await response.write_eof()
        except ConnectionError:
            self._bill(self.output_tokens, False)  # generated before it was sent
            return response
        self._bill(self.output_tokens, True)
        return response

    async def _sse(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        sent = 0
        try:
            await response.prepare(request)
            await _event(response, {
                "type": "message_start",
                "message": {"id": "msg_1", "type": "message", "role": "assistant",
                            "model": self.model, "content": [], "stop_reason": None,
                            "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}},
            })
            await _event(response, {"type": "content_block_start", "index": 0,
                                    "content_block": {"type": "text", "text": ""}})
            await self._gate("after_start")
            part = self.output_tokens // self.deltas
            for n in range(self.deltas):
                if self.pause_s:
                    await asyncio.sleep(self.pause_s)
                await _event(response, {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": f"part {n} "}})
                sent = part * (n + 1)
            await _event(response, {"type": "content_block_stop", "index": 0})
            await self._gate("before_final")
            await _event(response, {"type": "message_delta",
                                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": self.output_tokens}})
            await _event(response, {"type": "message_stop"})
            await response.write_eof()
        except ConnectionError:
            self._bill(max(sent, 1), False)
            return response
        self._bill(self.output_tokens, True)
        return response


async def _event(response: web.StreamResponse, event: dict[str, Any]) -> None:
    await response.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
