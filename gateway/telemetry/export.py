"""The export shell: which exporters run, one guard around each, a bounded flush.

The OpenTelemetry SDK reads the standard variables itself: each OTLP exporter its endpoint,
headers, timeout, compression and certificates (OTEL_EXPORTER_OTLP_[SIGNAL_]*), `Resource`
the service name and resource attributes, `SpanLimits` the attribute limits, `TracerProvider`
the sampler (OTEL_TRACES_SAMPLER[_ARG]). What is ours: which exporters run
(OTEL_{TRACES,LOGS,METRICS}_EXPORTER and the protocol), and the guard.

`Guarded` wraps an exporter of any signal. An exporter that fails never fails or slows the
gateway: the failure is counted and reported once, a breaker then skips batches for a while
(a dead collector costs one timeout, not one per batch), and until an export has succeeded a
TCP connect comes first, so a refused connection (nothing listens) costs nothing instead of
the exporter's retry backoff. Only real loss is counted as dropped (skipped, refused, rejected
by the endpoint); a batch whose export timed out may have arrived and is counted apart.
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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from gateway.errors import ConfigError
from gateway.telemetry import openinference
from gateway.telemetry.content import capture_enabled
from gateway.telemetry.model import SpanRef, SpanSpec
from gateway.telemetry.readable import to_readable, trace_state
from gateway.telemetry.spanfile import SpanFileExporter, span_file_path

logger = logging.getLogger("agent_gateway.telemetry")

DEFAULT_SERVICE_NAME = "agent-gateway"
DEFAULT_FLUSH_TIMEOUT_S = 3.0
BREAKER_COOLDOWN_S = 30.0
PROBE_TIMEOUT_S = 0.25
SDK_EXPORT_TIMEOUT_S = 10.0
"""The OTLP exporters' own default, if an exporter does not say what it read."""
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
PROTOCOLS = ("http/protobuf", "grpc")
EXPORTERS = ("otlp", "console", "none")
FILE = "file"
"""Not an OTEL_TRACES_EXPORTER value: what runs when no exporter is configured."""
ROOT_NAME = "invoke_agent claude-code"
MAX_DECISIONS = 4096
"""Traces whose sampling decision a sink remembers (serve exports each trace's spans apart)."""

_OTLP = {
    ("traces", "grpc"): "opentelemetry.exporter.otlp.proto.grpc.trace_exporter.OTLPSpanExporter",
    ("traces", "http/protobuf"):
        "opentelemetry.exporter.otlp.proto.http.trace_exporter.OTLPSpanExporter",
    ("logs", "grpc"): "opentelemetry.exporter.otlp.proto.grpc._log_exporter.OTLPLogExporter",
    ("logs", "http/protobuf"):
        "opentelemetry.exporter.otlp.proto.http._log_exporter.OTLPLogExporter",
    ("metrics", "grpc"):
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter.OTLPMetricExporter",
    ("metrics", "http/protobuf"):
        "opentelemetry.exporter.otlp.proto.http.metric_exporter.OTLPMetricExporter",
}
_GRPC_LOGGER = "opentelemetry.exporter.otlp.proto.grpc.exporter"


# --- which exporters (pure) ---------------------------------------------------------------
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
                f"{variable}: unsupported exporter {name!r} (expected one of {', '.join(known)})"
            )
    return tuple(n for n in dict.fromkeys(names) if n != "none")


def otlp_protocol(env: Mapping[str, str], signal: str) -> str:
    """OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL (the one choice
    the SDK's exporter classes leave to the caller)."""
    protocol = (
        env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol {protocol!r} "
            f"(expected one of {', '.join(PROTOCOLS)})"
        )
    return protocol


@dataclass(frozen=True, slots=True)
class ExportSettings:
    """Where spans go and what they carry, from the standard variables and two of ours."""

    exporters: tuple[str, ...]
    protocol: str = "http/protobuf"
    span_file: Path | None = None
    capture_content: bool = False
    openinference: bool = True
    """Add OpenInference attributes (AGENT_GATEWAY_OPENINFERENCE=0 turns them off)."""


def export_settings(env: Mapping[str, str], home: Path) -> ExportSettings:
    """Pure. Without OTEL_TRACES_EXPORTER: OTLP when an endpoint is set, else the local span
    file; AGENT_GATEWAY_SPAN_FILE=always keeps that file beside an exporter,
    AGENT_GATEWAY_OPENINFERENCE=0 leaves the OpenInference attributes out."""
    exporters = exporter_names(env, "OTEL_TRACES_EXPORTER")
    if exporters is None:
        given = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        )
        exporters = ("otlp",) if given else (FILE,)
    keep_file = (env.get("AGENT_GATEWAY_SPAN_FILE") or "").strip().lower()
    if keep_file not in ("", "always", "auto"):
        raise ConfigError(
            f"AGENT_GATEWAY_SPAN_FILE: unsupported value {keep_file!r} (expected always or auto)"
        )
    if keep_file == "always" and FILE not in exporters:
        exporters = (*exporters, FILE)
    oi = (env.get("AGENT_GATEWAY_OPENINFERENCE") or "1").strip().lower()
    if oi not in ("0", "1", "true", "false"):
        raise ConfigError(
            f"AGENT_GATEWAY_OPENINFERENCE: unsupported value {oi!r} (expected 1 or 0)"
        )
    return ExportSettings(
        exporters=exporters,
        protocol=otlp_protocol(env, "traces") if "otlp" in exporters else "http/protobuf",
        span_file=span_file_path(home) if FILE in exporters else None,
        capture_content=capture_enabled(
            env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        ),
        openinference=oi in ("1", "true"),
    )


def resource() -> Resource:
    """The SDK's Resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), named agent-gateway
    unless the variables name it."""
    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return found


# --- the guard ------------------------------------------------------------------------------
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


_said = threading.local()


class _Hush(logging.Filter):
    """An exporter's own error lines, kept for the guard's one report instead of printed on
    every batch (they run on the exporting thread, inside `Guarded.export`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_said, "listening", False):
            _said.message = record.getMessage()
            return False
        return True


_HUSH = _Hush()


def _hush(inner: Any) -> None:
    for name in (type(inner).__module__, _GRPC_LOGGER):
        target = logging.getLogger(name)
        if _HUSH not in target.filters:
            target.addFilter(_HUSH)


class Guarded:
    """An exporter of any signal behind a breaker; everything else is the inner exporter's."""

    def __init__(
        self,
        inner: Any,
        *,
        label: str,
        what: str = "span",
        cooldown_s: float = BREAKER_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
        refused: Callable[[], bool] | None = None,
        timeout_s: float | None = None,
        failure: Any = SpanExportResult.FAILURE,
    ) -> None:
        self.inner = inner
        self._failure = failure
        self.label = label
        self.what = what
        self.dropped = 0
        """Known lost: skipped while the breaker was open, refused, or rejected."""
        self.unconfirmed = 0
        """Sent, but no answer came within the exporter's timeout (they may have arrived)."""
        self.reason = ""
        self._refused = refused
        self._healthy = False
        self._cooldown_s = cooldown_s
        self._clock = clock
        self.timeout_s = timeout_s
        self._open_until = 0.0
        self._timeouts = 0
        self._lock = threading.Lock()
        _hush(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        count = len(batch) if hasattr(batch, "__len__") else 1
        if self._clock() < self._open_until:
            self._count(count, lost=True, reason="")
            return self._failure
        _said.listening, _said.message = True, ""
        started = self._clock()
        try:
            if not self._healthy and self._refused is not None and self._refused():
                result, reason = None, f"connection refused: nothing listens at {self.label}"
            else:
                result = self.inner.export(batch, *args, **kwargs)
                reason = _said.message
        except Exception as error:  # an exporter never breaks the gateway
            result, reason = None, str(error) or type(error).__name__
        finally:
            _said.listening = False
        self._healthy = getattr(result, "name", "") == "SUCCESS"
        if self._healthy:
            self._timeouts = 0
            return result
        timed_out = self.timeout_s is not None and (
            self._clock() - started >= self.timeout_s * 0.95
        )
        # One unanswered batch is a slow backend (its first request, say): the next is tried.
        # A second in a row, or any other failure, opens the breaker.
        self._timeouts = self._timeouts + 1 if timed_out else 0
        opened = self._timeouts != 1
        if opened:
            self._open_until = self._clock() + self._cooldown_s
        reason = reason or "the exporter reported failure"
        self._count(count, lost=not timed_out, reason=reason, opened=opened)
        return result if result is not None else self._failure

    def _count(self, count: int, *, lost: bool, reason: str, opened: bool = True) -> None:
        with self._lock:
            first = not self.reason and bool(reason)
            if lost:
                self.dropped += count
            else:
                self.unconfirmed += count
            if first:
                self.reason = reason
        if first:
            then = f"skipping exports for {self._cooldown_s:.0f} s" if opened else (
                "the next batch is tried")
            logger.warning("%s export to %s failed (%s); %s", self.what, self.label, reason, then)

    def shutdown(self, *args: Any, **kwargs: Any) -> None:
        try:
            self.inner.shutdown(*args, **kwargs)
        except Exception:
            logger.debug("exporter shutdown failed", exc_info=True)

    def force_flush(self, *args: Any, **kwargs: Any) -> bool:
        return True


def _timeout_s(inner: Any) -> float:
    """The wait the SDK's exporter read from its variables (seconds), to tell a timeout from a
    refusal: the gRPC exporters keep it, the HTTP ones their client."""
    for holder in (inner, getattr(inner, "_client", None)):
        value = getattr(holder, "_timeout", None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return SDK_EXPORT_TIMEOUT_S


def guarded_otlp(signal: str, *, what: str, failure: Any) -> Guarded:
    """The SDK's OTLP exporter for `signal` (it reads its own variables), guarded; not probed
    behind a proxy. The gRPC exporters are imported only when chosen: they are heavy."""
    module, _, name = _OTLP[(signal, otlp_protocol(os.environ, signal))].rpartition(".")
    inner = getattr(importlib.import_module(module), name)()
    endpoint = str(getattr(inner, "_endpoint", "") or "")
    probe = endpoint and not any(os.environ.get(v) for v in PROXY_VARIABLES)
    return Guarded(
        inner,
        label=endpoint or f"the OTLP {signal} endpoint",
        what=what,
        refused=(lambda: connection_refused(endpoint)) if probe else None,
        timeout_s=_timeout_s(inner),
        failure=failure,
    )


# --- pipelines --------------------------------------------------------------------------------
class Pipeline:
    """What the span, log and metric sinks share: a flush bounded in time, and a shutdown that
    happens once, never hangs the process, and reports what was lost."""

    what = "item"
    signal = "telemetry"

    def __init__(self, guards: Sequence[Guarded] = ()) -> None:
        self._guards = list(guards)
        self._closed = False
        self._lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return sum(g.dropped for g in self._guards)

    @property
    def unconfirmed(self) -> int:
        return sum(g.unconfirmed for g in self._guards)

    def _force_flush(self, timeout_ms: int) -> bool:
        return True

    def _stop(self) -> None:
        """Stop the SDK pipeline (called on a daemon thread)."""

    @property
    def flush_timeout_s(self) -> float:
        """How long a final flush may wait: twice the exporters' own timeout (the SDK's
        variables): a batch in flight, then the rest; at least DEFAULT_FLUSH_TIMEOUT_S. Only a
        slow backend makes it wait: a refused connection costs nothing (the probe)."""
        waits = [2 * g.timeout_s + 0.5 for g in self._guards if g.timeout_s is not None]
        return max([DEFAULT_FLUSH_TIMEOUT_S, *waits])

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

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Flush, stop the pipeline and report once what was lost."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        timeout_s = self.flush_timeout_s if timeout_s is None else timeout_s
        flushed = self.flush(timeout_s)
        threading.Thread(target=self._stop, daemon=True).start()
        for guard in self._guards:
            if guard.dropped:
                logger.warning(
                    "%d %s(s) dropped: the %s export to %s failed (%s)",
                    guard.dropped, self.what, self.signal, guard.label, guard.reason,
                )
            if guard.unconfirmed:
                logger.warning(
                    "%d %s(s) sent to %s got no answer within the export timeout; they may "
                    "have arrived (OTEL_EXPORTER_OTLP_TIMEOUT sets the wait)",
                    guard.unconfirmed, self.what, guard.label,
                )
        if not flushed:
            logger.warning(
                "the final %s flush did not finish within %.1f s: %ss it had not sent by then "
                "are lost", self.signal, timeout_s, self.what,
            )


class SpanSink(Pipeline):
    """Where finished span specs go: sampled (the SDK's sampler, per trace), limited (the SDK's
    span limits), then to each exporter. Thread-safe; `shutdown` is idempotent and bounded."""

    what, signal = "span", "trace"

    def __init__(
        self,
        processors: Sequence[SpanProcessor],
        guards: Sequence[Guarded],
        *,
        settings: ExportSettings | None = None,
        local: Sequence[SpanProcessor] = (),
        sampler: Sampler | None = None,
    ) -> None:
        super().__init__(guards)
        self.settings = settings
        self._processors = list(processors)
        self._local = list(local)
        self._resource = resource() if processors or local else Resource.get_empty()
        self._limits = SpanLimits()
        self._sampler = sampler or TracerProvider(shutdown_on_exit=False).sampler
        self._decisions: OrderedDict[int, bool] = OrderedDict()

    @property
    def span_file(self) -> Path | None:
        return self.settings.span_file if self.settings else None

    def decide(self, trace_id: int, parent: SpanRef | None = None) -> bool:
        """Whether the trace is sampled: the sampler asked once per trace, with the caller's
        remote parent (TRACEPARENT) when there is one; ParentBased by default, so a parent's
        sampled=0 is honoured."""
        known = self._decisions.get(trace_id)
        if known is not None:
            return known
        context = None
        if parent is not None:
            flags = TraceFlags(TraceFlags.SAMPLED if parent.sampled else TraceFlags.DEFAULT)
            remote = SpanContext(
                parent.trace_id, parent.span_id, True, flags, trace_state(parent.trace_state)
            )
            context = set_span_in_context(NonRecordingSpan(remote))
        decision = self._sampler.should_sample(context, trace_id, ROOT_NAME).decision
        sampled = decision is Decision.RECORD_AND_SAMPLE
        self._decisions[trace_id] = sampled
        while len(self._decisions) > MAX_DECISIONS:
            self._decisions.popitem(last=False)
        return sampled

    def export(self, specs: Iterable[SpanSpec]) -> None:
        if self._closed or not (self._processors or self._local):
            return  # OTEL_TRACES_EXPORTER=none: nothing to convert the specs for
        annotate = self.settings is None or self.settings.openinference
        for spec in specs:
            span = to_readable(
                openinference.annotate(spec) if annotate else spec, self._resource, self._limits
            )
            for processor in self._local:  # the gateway's own record keeps every trace
                processor.on_end(span)
            if self._processors and self.decide(spec.trace_id):
                for processor in self._processors:
                    processor.on_end(span)

    def _force_flush(self, timeout_ms: int) -> bool:
        return all([p.force_flush(timeout_ms) for p in (*self._processors, *self._local)])

    def _stop(self) -> None:
        for processor in (*self._processors, *self._local):
            processor.shutdown()


def open_span_sink(settings: ExportSettings) -> SpanSink:
    """The SDK pipeline for `settings`: a batch processor for the network exporter."""
    processors: list[SpanProcessor] = []
    local: list[SpanProcessor] = []
    guards: list[Guarded] = []
    for name in settings.exporters:
        if name == "otlp":
            guard = guarded_otlp("traces", what="span", failure=SpanExportResult.FAILURE)
            guards.append(guard)
            processors.append(BatchSpanProcessor(guard))  # type: ignore[arg-type]
        elif name == "console":
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif name == FILE and settings.span_file is not None:
            guard = Guarded(
                SpanFileExporter(settings.span_file), label=str(settings.span_file), cooldown_s=0
            )
            guards.append(guard)
            local.append(SimpleSpanProcessor(guard))  # type: ignore[arg-type]
    return SpanSink(processors, guards, settings=settings, local=local)


def span_sink_from_env(env: Mapping[str, str] | None = None, home: Path | None = None) -> SpanSink:
    """Settings from `env` (default the OTEL_* variables) and the home dir."""
    from gateway.env import gateway_home, trace_env

    settings = export_settings(trace_env() if env is None else env, home or gateway_home())
    return open_span_sink(settings)


def install_exit_flush(sink: Pipeline) -> Callable[[], None]:
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
