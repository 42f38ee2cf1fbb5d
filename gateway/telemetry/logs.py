"""OpenTelemetry log records through the standard logs pipeline.

Off unless OTEL_LOGS_EXPORTER asks (`otlp`, `console`; an OTLP endpoint alone does not: a
trace-only backend answers logs with 404). The SDK's exporter reads the rest itself:
OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT / _PROTOCOL / _TIMEOUT / _HEADERS, OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES. Exports run behind the span exporters' guard: a failure is counted
and reported once, never raised, and costs one timeout, not one per record.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    ConsoleLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.util.types import AnyValue

from gateway.telemetry.audit_events import LogEvent
from gateway.telemetry.export import (
    Guarded,
    Pipeline,
    exporter_names,
    guarded_otlp,
    otlp_protocol,
    resource,
)

SCOPE = "agent_gateway.audit"


@dataclass(frozen=True, slots=True)
class LogSettings:
    exporters: tuple[str, ...] = ()
    batch_delay_ms: int | None = None
    """None: the SDK's OTEL_BLRP_SCHEDULE_DELAY; ours otherwise (see BATCH_DELAY_MS)."""
    batch_size: int | None = None


BATCH_DELAY_MS = 200
BATCH_SIZE = 64
"""Small, frequent batches: encoding a record costs ~50 us, and the exporter's thread holds
the GIL while it encodes, so the SDK's 512 at once would stall the service's event loop for
tens of milliseconds at 400 decisions a second. OTEL_BLRP_* still override these."""


def log_settings(env: Mapping[str, str]) -> LogSettings:
    """Read the standard variables (and nothing else): pure."""
    exporters = exporter_names(env, "OTEL_LOGS_EXPORTER") or ()
    if "otlp" in exporters:
        otlp_protocol(env, "logs")  # a bad protocol stops the start, not the first record
    return LogSettings(
        exporters=exporters,
        batch_delay_ms=None if env.get("OTEL_BLRP_SCHEDULE_DELAY") else BATCH_DELAY_MS,
        batch_size=None if env.get("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE") else BATCH_SIZE,
    )


class LogSink(Pipeline):
    """Emits `LogEvent`s through the SDK's LoggerProvider. Thread-safe; `shutdown` is
    idempotent and bounded."""

    what, signal = "log record", "log"

    def __init__(self, provider: LoggerProvider, guards: Sequence[Guarded]) -> None:
        super().__init__(guards)
        self._provider = provider
        self._logger = provider.get_logger(SCOPE)

    def emit(self, event: LogEvent) -> None:
        if self._closed:
            return
        self._logger.emit(
            timestamp=event.time_ns or None,
            context=_trace_context(event.trace_id, event.span_id),
            severity_number=getattr(SeverityNumber, event.severity, SeverityNumber.INFO),
            severity_text=event.severity,
            body=event.body,
            attributes=attributes_of(event.attributes),
            event_name=event.event_name,
        )

    def _force_flush(self, timeout_ms: int) -> bool:
        return self._provider.force_flush(timeout_ms)

    def _stop(self) -> None:
        self._provider.shutdown()


def _trace_context(trace_id: int, span_id: int) -> Context | None:
    if not trace_id or not span_id:
        return Context()  # not the caller's current span: a record carries only its own ids
    ctx = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(ctx))


def open_log_sink(settings: LogSettings, *, synchronous: bool = False) -> LogSink | None:
    """The SDK pipeline for `settings`, or None when no exporter is configured. `synchronous`
    (a process that emits once and exits) exports in `emit` instead of on a batch thread."""
    if not settings.exporters:
        return None
    # Shut down by its owner (LogSink.shutdown), not again at exit: twice warns on stderr.
    provider = LoggerProvider(resource=resource(), shutdown_on_exit=False)
    guards: list[Guarded] = []
    for name in settings.exporters:
        processor: LogRecordProcessor
        if name == "otlp":
            guard = guarded_otlp("logs", what="log record", failure=LogRecordExportResult.FAILURE)
            guards.append(guard)
            exporter: Any = guard
            processor = (
                SimpleLogRecordProcessor(exporter)
                if synchronous
                else BatchLogRecordProcessor(
                    exporter,
                    schedule_delay_millis=settings.batch_delay_ms,
                    max_export_batch_size=settings.batch_size,
                )
            )
        else:  # console
            processor = SimpleLogRecordProcessor(ConsoleLogRecordExporter(out=sys.stderr))
        provider.add_log_record_processor(processor)
    return LogSink(provider, guards)


def attributes_of(pairs: Mapping[str, Any]) -> dict[str, AnyValue]:
    """Record fields as log attributes: scalars as they are, structures as JSON text, None
    and empty strings left out (an attribute cannot be null)."""
    out: dict[str, AnyValue] = {}
    for key, value in pairs.items():
        if value is None or value == "":
            continue
        if isinstance(value, str | bool | int | float):
            out[key] = value
        else:
            out[key] = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return out
