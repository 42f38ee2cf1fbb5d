"""Tracing: Claude Code's messages and the gateway's hook events -> OpenTelemetry spans."""

from gateway.telemetry.chat import ChatAccumulator, ChatRequestMeta, chat_span_from_sse
from gateway.telemetry.content import ContentPolicy, capture_enabled
from gateway.telemetry.export import (
    ExportSettings,
    SpanSink,
    export_settings,
    install_exit_flush,
    open_span_sink,
    span_sink_from_env,
)
from gateway.telemetry.ids import (
    DeterministicIds,
    IdSource,
    RandomIds,
    parse_traceparent,
    traceparent_for,
)
from gateway.telemetry.model import SpanRef, SpanSpec, SpanStatus
from gateway.telemetry.pricing import ModelPrice, PriceTable, Usage, load_price_table
from gateway.telemetry.show import trace_show
from gateway.telemetry.spans import TraceBuilder

__all__ = [
    "ChatAccumulator",
    "ChatRequestMeta",
    "ContentPolicy",
    "DeterministicIds",
    "ExportSettings",
    "IdSource",
    "ModelPrice",
    "PriceTable",
    "RandomIds",
    "SpanRef",
    "SpanSink",
    "SpanSpec",
    "SpanStatus",
    "TraceBuilder",
    "Usage",
    "capture_enabled",
    "chat_span_from_sse",
    "export_settings",
    "install_exit_flush",
    "load_price_table",
    "open_span_sink",
    "parse_traceparent",
    "span_sink_from_env",
    "trace_show",
    "traceparent_for",
]
