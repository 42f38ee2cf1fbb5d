"""The export shell: standard OTEL_* configuration, a batch pipeline, a bounded flush.

`export_settings(env, home)` is pure; `open_span_sink(settings)` builds the SDK pipeline;
`SpanSink.export(specs)` hands span specs to it with their exact ids and times. An unreachable
collector never fails or slows a run: exports run on the batch processor's thread with a short
timeout, a failure opens a breaker that drops (and counts) further batches for a while, the
flush at exit is bounded, and the dropped count is reported once through logging. Until an
export has succeeded (and again after a failure), a TCP connect to the collector comes first: a
refused connection (nothing listening) drops the batch at once, instead of the OTLP exporter's
retry backoff, which at the final flush would add about a second to every run.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from gateway.errors import ConfigError
from gateway.telemetry import openinference
from gateway.telemetry.content import capture_enabled
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.readable import to_readable
from gateway.telemetry.spanfile import SpanFileExporter, span_file_path

logger = logging.getLogger("agent_gateway.telemetry")

DEFAULT_SERVICE_NAME = "agent-gateway"
DEFAULT_EXPORT_TIMEOUT_S = 2.0
DEFAULT_FLUSH_TIMEOUT_S = 3.0
BREAKER_COOLDOWN_S = 30.0
PROBE_TIMEOUT_S = 0.25
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
PROTOCOLS = ("http/protobuf", "grpc")
EXPORTERS = ("otlp", "console", "none")
FILE = "file"
"""Not an OTEL_TRACES_EXPORTER value: what runs when no exporter is configured."""


@dataclass(frozen=True, slots=True)
class SignalSettings:
    """Where one signal (traces, logs, metrics) goes, from the standard OTEL_* variables."""

    exporters: tuple[str, ...]
    protocol: str = "http/protobuf"
    endpoint: str = ""
    timeout_s: float | None = DEFAULT_EXPORT_TIMEOUT_S
    resource: Mapping[str, str] = field(default_factory=dict)
    probe: bool = True
    """Probe the collector with a TCP connect before exporting (off behind a proxy)."""


@dataclass(frozen=True, slots=True)
class ExportSettings(SignalSettings):
    span_file: Path | None = None
    capture_content: bool = False
    openinference: bool = True
    """Add OpenInference attributes (AGENT_GATEWAY_OPENINFERENCE=0 turns them off)."""


def resource_attributes(env: Mapping[str, str]) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for item in (env.get("OTEL_RESOURCE_ATTRIBUTES") or "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            attrs[unquote(key.strip())] = unquote(value.strip())
    service = (env.get("OTEL_SERVICE_NAME") or "").strip()
    attrs["service.name"] = service or attrs.get("service.name") or DEFAULT_SERVICE_NAME
    return attrs


def otlp_endpoint(env: Mapping[str, str], protocol: str, signal: str = "traces") -> str:
    """The standard endpoint rules: the signal's own variable as is, else the base one plus
    `/v1/{signal}` for HTTP."""
    specific = (env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT") or "").strip()
    if specific:
        return specific
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    if protocol == "grpc":
        return base or "http://localhost:4317"
    return (base or "http://localhost:4318").rstrip("/") + f"/v1/{signal}"


def exporter_names(
    env: Mapping[str, str], variable: str, known: Sequence[str] = EXPORTERS
) -> tuple[str, ...] | None:
    """The exporters OTEL_{TRACES,LOGS,METRICS}_EXPORTER names (`none` dropped, each once),
    None when unset."""
    raw = (env.get(variable) or "").strip().lower()
    if not raw:
        return None
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    for name in names:
        if name not in known:
            raise ConfigError(
                f"{variable}: unsupported exporter {name!r} "
                f"(expected one of {', '.join(known)})"
            )
    return tuple(n for n in dict.fromkeys(names) if n != "none")


def endpoint_given(env: Mapping[str, str], signal: str) -> bool:
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    )


def otlp_transport(
    env: Mapping[str, str], signal: str, exporters: Sequence[str]
) -> tuple[str, str, float | None]:
    """Protocol, endpoint and timeout of a signal's OTLP exporter (the signal's own variables
    first); the timeout is ours unless a variable sets one."""
    upper = signal.upper()
    protocol = (
        env.get(f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if "otlp" in exporters and protocol not in PROTOCOLS:
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol {protocol!r} "
            f"(expected one of {', '.join(PROTOCOLS)})"
        )
    has_timeout = env.get(f"OTEL_EXPORTER_OTLP_{upper}_TIMEOUT") or env.get(
        "OTEL_EXPORTER_OTLP_TIMEOUT"
    )
    timeout = None if has_timeout else DEFAULT_EXPORT_TIMEOUT_S
    return protocol, otlp_endpoint(env, protocol, signal), timeout


def export_settings(env: Mapping[str, str], home: Path) -> ExportSettings:
    """Read the standard OTEL_* variables into settings: pure. Two of the gateway's own say
    where and how: AGENT_GATEWAY_SPAN_FILE=always keeps the local span file beside an
    exporter, AGENT_GATEWAY_OPENINFERENCE=0 leaves the OpenInference attributes out."""
    exporters = exporter_names(env, "OTEL_TRACES_EXPORTER")
    if exporters is None:
        exporters = ("otlp",) if endpoint_given(env, "traces") else (FILE,)
    keep_file = (env.get("AGENT_GATEWAY_SPAN_FILE") or "").strip().lower()
    if keep_file not in ("", "always", "auto"):
        raise ConfigError(
            f"AGENT_GATEWAY_SPAN_FILE: unsupported value {keep_file!r} (expected always or auto)"
        )
    if keep_file == "always" and FILE not in exporters:
        exporters = (*exporters, FILE)
    openinference = (env.get("AGENT_GATEWAY_OPENINFERENCE") or "1").strip().lower()
    if openinference not in ("0", "1", "true", "false"):
        raise ConfigError(
            f"AGENT_GATEWAY_OPENINFERENCE: unsupported value {openinference!r} (expected 1 or 0)"
        )
    protocol, endpoint, timeout = otlp_transport(env, "traces", exporters)
    return ExportSettings(
        exporters=exporters,
        protocol=protocol,
        endpoint=endpoint,
        timeout_s=timeout,
        span_file=span_file_path(home) if FILE in exporters else None,
        capture_content=capture_enabled(
            env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        ),
        resource=resource_attributes(env),
        probe=not any(env.get(name) for name in PROXY_VARIABLES),
        openinference=openinference in ("1", "true"),
    )


def connection_refused(endpoint: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True only when a TCP connect to the endpoint's host and port is refused: nothing listens
    there, so an export cannot succeed. Any other outcome (connected, timeout, DNS) is False."""
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    if not host:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


class Breaker:
    """What guards an exporter: failures are counted, never raised; after one, batches are
    dropped at once for `cooldown_s`, so a dead collector costs one timeout, not one per
    batch. Until an export has succeeded, `refused()` (a TCP probe) may drop a batch at once."""

    def __init__(
        self,
        *,
        label: str,
        what: str = "span",
        cooldown_s: float = BREAKER_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
        refused: Callable[[], bool] | None = None,
    ) -> None:
        self.label = label
        self.what = what
        self.dropped = 0
        self._refused = refused
        self._healthy = False
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._open_until = 0.0
        self._warned = False
        self._lock = threading.Lock()

    def run(self, count: int, send: Callable[[], bool]) -> bool:
        """Call `send` (True on success) unless the breaker is open; count what is dropped."""
        if self._clock() < self._open_until:
            self._drop(count, None)
            return False
        reason: Exception | None = None
        try:
            if not self._healthy and self._refused is not None and self._refused():
                reason, ok = ConnectionRefusedError("connection refused"), False
            else:
                ok = send()
        except Exception as error:  # an exporter must never break the run
            ok, reason = False, error
        self._healthy = ok
        if not ok:
            self._open_until = self._clock() + self._cooldown_s
            self._drop(count, reason)
        return ok

    def _drop(self, count: int, reason: Exception | None) -> None:
        with self._lock:
            self.dropped += count
            first = not self._warned
            self._warned = True
        if first:
            logger.warning(
                "%s export to %s failed%s; dropping %ss while it is unreachable",
                self.what,
                self.label,
                f" ({reason})" if reason else "",
                self.what,
            )


class GuardedExporter(SpanExporter):
    """A span exporter behind a `Breaker`."""

    def __init__(
        self,
        inner: SpanExporter,
        *,
        label: str,
        cooldown_s: float = BREAKER_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
        refused: Callable[[], bool] | None = None,
    ) -> None:
        self.inner = inner
        self.breaker = Breaker(label=label, cooldown_s=cooldown_s, clock=clock, refused=refused)

    @property
    def label(self) -> str:
        return self.breaker.label

    @property
    def dropped(self) -> int:
        return self.breaker.dropped

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self.breaker.run(
            len(spans), lambda: self.inner.export(spans) is SpanExportResult.SUCCESS
        )
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            logger.debug("exporter shutdown failed", exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_OTLP_EXPORTERS = {
    ("traces", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("traces", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("logs", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc._log_exporter", "OTLPLogExporter"),
    ("logs", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http._log_exporter",
        "OTLPLogExporter",
    ),
    ("metrics", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
        "OTLPMetricExporter",
    ),
    ("metrics", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
}


def otlp_exporter(signal: str, protocol: str, endpoint: str, timeout_s: float | None) -> Any:
    """The OTLP exporter for a signal and protocol, imported only when used (gRPC is heavy)."""
    module, name = _OTLP_EXPORTERS[(signal, protocol)]
    exporter_class = getattr(importlib.import_module(module), name)
    return exporter_class(endpoint=endpoint, timeout=timeout_s)


def _otlp_exporter(settings: ExportSettings) -> SpanExporter:
    exporter: SpanExporter = otlp_exporter(
        "traces", settings.protocol, settings.endpoint, settings.timeout_s
    )
    return exporter


class Pipeline:
    """What the span and log sinks share: a flush bounded in time, and a shutdown that happens
    once, never hangs the process, and reports what was dropped."""

    what = "item"
    signal = "telemetry"

    def __init__(self) -> None:
        self._closed = False
        self._lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return 0

    def _force_flush(self, timeout_ms: int) -> bool:
        return True

    def _stop(self) -> None:
        """Stop the SDK pipeline (called on a daemon thread)."""

    def flush(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> bool:
        """Export what is queued, waiting at most `timeout_s`; True when all went out."""
        done = threading.Event()
        ok: list[bool] = []

        def run() -> None:
            try:
                ok.append(self._force_flush(int(timeout_s * 1000)))
            finally:
                done.set()

        name = f"agent-gateway-{self.signal}-flush"
        threading.Thread(target=run, name=name, daemon=True).start()
        return done.wait(timeout_s) and all(ok)

    def shutdown(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        """Flush, stop the pipeline and report dropped items once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        flushed = self.flush(timeout_s)
        threading.Thread(target=self._stop, daemon=True).start()
        if self.dropped or not flushed:
            logger.warning(
                "%d %s(s) dropped%s: the %s exporter was unreachable",
                self.dropped,
                self.what,
                "" if flushed else " (and the final flush timed out)",
                self.signal,
            )


class SpanSink(Pipeline):
    """Where finished span specs go. Thread-safe; `shutdown` is idempotent and bounded."""

    what, signal = "span", "trace"

    def __init__(
        self,
        processors: Sequence[SpanProcessor],
        guards: Sequence[GuardedExporter],
        resource: Resource,
        *,
        settings: ExportSettings | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self._processors = list(processors)
        self._guards = list(guards)
        self._resource = resource

    @property
    def dropped(self) -> int:
        return sum(g.dropped for g in self._guards)

    @property
    def span_file(self) -> Path | None:
        return self.settings.span_file if self.settings else None

    def export(self, specs: Iterable[SpanSpec]) -> None:
        if self._closed or not self._processors:
            return  # OTEL_TRACES_EXPORTER=none: nothing to convert the specs for
        annotate = self.settings is not None and self.settings.openinference
        for spec in specs:
            span = to_readable(openinference.annotate(spec) if annotate else spec, self._resource)
            for processor in self._processors:
                processor.on_end(span)

    def _force_flush(self, timeout_ms: int) -> bool:
        return all([p.force_flush(timeout_ms) for p in self._processors])

    def _stop(self) -> None:
        for processor in self._processors:
            processor.shutdown()


def open_span_sink(settings: ExportSettings) -> SpanSink:
    """The SDK pipeline for `settings`: batch processors for network exporters."""
    resource = Resource.create(dict(settings.resource))
    processors: list[SpanProcessor] = []
    guards: list[GuardedExporter] = []
    for name in settings.exporters:
        if name == "otlp":
            guard = GuardedExporter(
                _otlp_exporter(settings),
                label=settings.endpoint,
                refused=partial(connection_refused, settings.endpoint) if settings.probe else None,
            )
            guards.append(guard)
            processors.append(BatchSpanProcessor(guard))
        elif name == "console":
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif name == FILE and settings.span_file is not None:
            guard = GuardedExporter(
                SpanFileExporter(settings.span_file), label=str(settings.span_file), cooldown_s=0
            )
            guards.append(guard)
            processors.append(SimpleSpanProcessor(guard))
    return SpanSink(processors, guards, resource, settings=settings)


def span_sink_from_env(env: Mapping[str, str] | None = None, home: Path | None = None) -> SpanSink:
    """Convenience for the runner: settings from `env` (default the OTEL_* variables) and
    the home dir."""
    from gateway.env import gateway_home, otel_env

    settings = export_settings(otel_env() if env is None else env, home or gateway_home())
    return open_span_sink(settings)


def install_exit_flush(sink: SpanSink) -> Callable[[], None]:
    """Shut the sink down at interpreter exit and on SIGTERM (then let SIGTERM proceed).

    Call from the main thread. Returns a function that undoes the installation.
    """
    atexit.register(sink.shutdown)
    previous: Any = None
    installed = threading.current_thread() is threading.main_thread()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        sink.shutdown()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    if installed:
        previous = signal.signal(signal.SIGTERM, on_sigterm)

    def uninstall() -> None:
        atexit.unregister(sink.shutdown)
        if installed and signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    return uninstall
