"""An in-test OTLP/HTTP receiver: decodes ExportTraceServiceRequest and ExportLogsServiceRequest
protobuf into dicts, and keeps the log requests as OTLP JSON lines, the way the Collector's file
exporter writes them (`receiver.write_log_lines(path)`), for `audit verify --against`.

Sync tests:
    with OtlpReceiver() as receiver:              # serves on 127.0.0.1, its own thread
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        ...
        spans = receiver.wait_for(lambda spans: len(spans) >= 5, timeout=10)

Async tests: `app = make_app(collected)` and run it on the test's own loop.

Each span dict: name, trace_id / span_id / parent_span_id (lowercase hex; parent None when
absent), start_ns, end_ns, kind (SPAN_KIND_* name), status {code: STATUS_CODE_* name,
message}, attributes (plain Python values; arrays as lists), events (name, time_ns,
attributes), resource (attributes), scope.
Each log dict: event_name, body, severity_text, time_ns, trace_id / span_id (hex, "" when
absent), attributes, resource, scope.
Each metric point dict (from /v1/metrics): name, unit, type (sum, gauge, histogram),
attributes, value (sums and gauges), count / sum / bucket_counts (histograms), time_ns,
resource, scope. `receiver.latest_points()` keeps the last point of each series (cumulative
temporality: the total so far).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
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
                        "events": [
                            {
                                "name": e.name,
                                "time_ns": e.time_unix_nano,
                                "attributes": attributes(e.attributes),
                            }
                            for e in span.events
                        ],
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    }
                )
    return spans


Logs = list[dict[str, Any]]


def decode_logs(body: bytes) -> tuple[Logs, dict[str, Any]]:
    """All log records of one ExportLogsServiceRequest as plain dicts, and the request as
    OTLP JSON (ids in hex, as the OTLP JSON encoding and the Collector's file exporter have)."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    logs: Logs = []
    for resource_logs in request.resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                logs.append(
                    {
                        "event_name": record.event_name,
                        "body": any_value(record.body),
                        "severity_text": record.severity_text,
                        "time_ns": record.time_unix_nano,
                        "trace_id": record.trace_id.hex(),
                        "span_id": record.span_id.hex(),
                        "attributes": attributes(record.attributes),
                        "resource": resource,
                        "scope": scope_logs.scope.name,
                    }
                )
    return logs, otlp_json(request)


Points = list[dict[str, Any]]


def decode_metrics(body: bytes) -> Points:
    """Every data point of one ExportMetricsServiceRequest as a plain dict."""
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    points: Points = []
    for resource_metrics in request.resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points:
                    entry: dict[str, Any] = {
                        "name": metric.name,
                        "unit": metric.unit,
                        "type": kind,
                        "attributes": attributes(point.attributes),
                        "time_ns": point.time_unix_nano,
                        "resource": resource,
                        "scope": scope_metrics.scope.name,
                    }
                    if kind == "histogram":
                        entry.update(count=point.count, sum=point.sum,
                                     bucket_counts=list(point.bucket_counts))
                    else:
                        entry["value"] = getattr(point, point.WhichOneof("value"))
                    points.append(entry)
    return points


def otlp_json(request: ExportLogsServiceRequest) -> dict[str, Any]:
    data = MessageToDict(request)
    for resource_logs in data.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for record in scope_logs.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return data


def _decoded(request_body: bytes, headers: Any) -> bytes:
    encoding = headers.get("Content-Encoding", "").lower()
    if encoding == "gzip":
        return gzip.decompress(request_body)
    if encoding == "deflate":
        return zlib.decompress(request_body)
    return request_body


def make_app(
    collected: Spans,
    lock: threading.Lock | None = None,
    log_requests: list[bytes] | None = None,
    points: Points | None = None,
    signals: tuple[str, ...] = ("traces", "metrics", "logs"),
    answer_after_s: float = 0.0,
) -> web.Application:
    """An aiohttp app that appends decoded spans to `collected` and log export requests (as
    received, decoded only when read: decoding costs a benchmark's machine CPU) to
    `log_requests`, under `lock` when given. `answer_after_s`: a slow backend, which stores
    the spans at once and answers only after that long."""
    guard = lock or threading.Lock()

    async def log_export(request: web.Request) -> web.Response:
        body = _decoded(await request.read(), request.headers)
        try:
            ExportLogsServiceRequest().ParseFromString(body)
        except Exception as error:
            return web.Response(status=400, text=str(error))
        with guard:
            if log_requests is not None:
                log_requests.append(body)
        return web.Response(
            body=ExportLogsServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    async def traces(request: web.Request) -> web.Response:
        body = _decoded(await request.read(), request.headers)
        try:
            spans = decode_request(body)
        except Exception as error:  # a malformed body is a 400, as a collector would say
            return web.Response(status=400, text=str(error))
        with guard:
            collected.extend(spans)
        await asyncio.sleep(answer_after_s)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    async def metrics(request: web.Request) -> web.Response:
        body = _decoded(await request.read(), request.headers)
        try:
            decoded = decode_metrics(body)
        except Exception as error:
            return web.Response(status=400, text=str(error))
        with guard:
            if points is not None:
                points.extend(decoded)
        return web.Response(
            body=ExportMetricsServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    app = web.Application()
    handlers = {"traces": traces, "metrics": metrics, "logs": log_export}
    for name in signals:  # a trace-only backend (Jaeger, Phoenix) answers the others 404
        app.router.add_post(f"/v1/{name}", handlers[name])
    return app


class OtlpReceiver:
    """Serves `make_app` on 127.0.0.1 (port 0 = any free one) in a background thread."""

    def __init__(
        self, port: int = 0, signals: tuple[str, ...] = ("traces", "metrics", "logs"),
        answer_after_s: float = 0.0,
    ):
        self._port = port
        self._signals = signals
        self._answer_after_s = answer_after_s
        self._spans: Spans = []
        self._log_requests: list[bytes] = []
        self._logs: Logs = []
        self._log_lines: list[str] = []
        self._points: Points = []
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

    @property
    def logs(self) -> Logs:
        with self._lock:
            self._decode_new_logs()
            return list(self._logs)

    @property
    def points(self) -> Points:
        with self._lock:
            return list(self._points)

    def latest_points(self) -> Points:
        """The last point received of each series (name, attributes and resource)."""
        latest: dict[str, dict[str, Any]] = {}
        for point in self.points:
            key = json.dumps([point["name"], point["attributes"], point["resource"]],
                             sort_keys=True)
            if key not in latest or point["time_ns"] >= latest[key]["time_ns"]:
                latest[key] = point
        return list(latest.values())

    def write_log_lines(self, path: Path) -> Path:
        """The log requests received, as OTLP JSON lines (the Collector's file exporter)."""
        with self._lock:
            self._decode_new_logs()
            path.write_text("".join(line + "\n" for line in self._log_lines))
        return path

    def _decode_new_logs(self) -> None:
        for body in self._log_requests[len(self._log_lines) :]:
            records, as_json = decode_logs(body)
            self._logs.extend(records)
            self._log_lines.append(json.dumps(as_json))

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()
            self._log_requests.clear()
            self._logs.clear()
            self._log_lines.clear()
            self._points.clear()

    def wait_for_logs(self, predicate: Callable[[Logs], bool], timeout: float = 10.0) -> Logs:
        """The log records once `predicate(logs)` holds; raises TimeoutError with what came."""
        deadline = time.monotonic() + timeout
        while True:
            logs = self.logs
            if predicate(logs):
                return logs
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(logs)} log record(s) received: "
                                   f"{[r['event_name'] for r in logs]}")
            time.sleep(0.02)

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
        app = make_app(self._spans, self._lock, self._log_requests, self._points, self._signals,
                       self._answer_after_s)
        # A bounded stop: a gateway may still be exporting (its final flush) as a test ends.
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=1.0 + self._answer_after_s
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self._port

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
