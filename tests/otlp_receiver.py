"""An in-test OTLP/HTTP trace receiver: decodes ExportTraceServiceRequest protobuf into dicts.

Sync tests:
    with OtlpReceiver() as receiver:              # serves on 127.0.0.1, its own thread
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        ...
        spans = receiver.wait_for(lambda spans: len(spans) >= 5, timeout=10)

Async tests: `app = make_app(collected)` and run it on the test's own loop.

Each span dict: name, trace_id / span_id / parent_span_id (lowercase hex; parent None when
absent), start_ns, end_ns, kind (SPAN_KIND_* name), status {code: STATUS_CODE_* name,
message}, attributes (plain Python values; arrays as lists), resource (attributes), scope.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

Spans = list[dict[str, Any]]


def any_value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, which)


def attributes(items: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in items if isinstance(kv, KeyValue)}


def decode_request(body: bytes) -> Spans:
    """All spans of one ExportTraceServiceRequest, as plain dicts."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: Spans = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex() or None,
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                        "kind": Span.SpanKind.Name(span.kind),
                        "status": {
                            "code": Status.StatusCode.Name(span.status.code),
                            "message": span.status.message,
                        },
                        "attributes": attributes(span.attributes),
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    }
                )
    return spans


def make_app(collected: Spans, lock: threading.Lock | None = None) -> web.Application:
    """An aiohttp app that appends decoded spans to `collected` (under `lock` when given)."""
    guard = lock or threading.Lock()

    async def traces(request: web.Request) -> web.Response:
        body = await request.read()
        encoding = request.headers.get("Content-Encoding", "").lower()
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        try:
            spans = decode_request(body)
        except Exception as error:  # a malformed body is a 400, as a collector would say
            return web.Response(status=400, text=str(error))
        with guard:
            collected.extend(spans)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    return app


class OtlpReceiver:
    """Serves `make_app` on 127.0.0.1 (port 0 = any free one) in a background thread."""

    def __init__(self, port: int = 0) -> None:
        self._port = port
        self._spans: Spans = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    @property
    def endpoint(self) -> str:
        """Base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_endpoint(self) -> str:
        return f"{self.endpoint}/v1/traces"

    @property
    def spans(self) -> Spans:
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def wait_for(self, predicate: Callable[[Spans], bool], timeout: float = 10.0) -> Spans:
        """The spans once `predicate(spans)` holds; raises TimeoutError with what arrived."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(spans)} span(s) received: {[s['name'] for s in spans]}")
            time.sleep(0.02)

    def start(self) -> OtlpReceiver:
        self._thread = threading.Thread(target=self._serve, name="otlp-receiver", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("OTLP receiver did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._loop = None

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._startup())
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _startup(self) -> None:
        self._runner = web.AppRunner(make_app(self._spans, self._lock), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self._port

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
