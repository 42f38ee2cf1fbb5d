"""Tracing: Claude Code's messages and the gateway's hook events -> OpenTelemetry spans.

Names are loaded on first use, so a module here (say the log records of the command hook)
can be imported without loading the whole tracing pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "ChatAccumulator": "gateway.telemetry.chat",
    "ChatRequestMeta": "gateway.telemetry.chat",
    "ContentPolicy": "gateway.telemetry.content",
    "DeterministicIds": "gateway.telemetry.ids",
    "ExportSettings": "gateway.telemetry.export",
    "IdSource": "gateway.telemetry.ids",
    "ModelPrice": "gateway.telemetry.pricing",
    "PriceTable": "gateway.telemetry.pricing",
    "RandomIds": "gateway.telemetry.ids",
    "SpanRef": "gateway.telemetry.model",
    "SpanSink": "gateway.telemetry.export",
    "SpanSpec": "gateway.telemetry.model",
    "SpanStatus": "gateway.telemetry.model",
    "TraceBuilder": "gateway.telemetry.spans",
    "Usage": "gateway.telemetry.pricing",
    "capture_enabled": "gateway.telemetry.content",
    "chat_span_from_sse": "gateway.telemetry.chat",
    "export_settings": "gateway.telemetry.export",
    "install_exit_flush": "gateway.telemetry.export",
    "load_price_table": "gateway.telemetry.pricing",
    "open_span_sink": "gateway.telemetry.export",
    "parse_traceparent": "gateway.telemetry.ids",
    "span_sink_from_env": "gateway.telemetry.export",
    "trace_show": "gateway.telemetry.show",
    "traceparent_for": "gateway.telemetry.ids",
}
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

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gateway.telemetry' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
