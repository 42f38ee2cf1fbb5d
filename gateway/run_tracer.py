"""Tracing for one `agent-gateway run`: the message tap and hook events into TraceBuilder,
finished spans out to the configured sink."""

from __future__ import annotations

import os
import time
from typing import Any

from gateway.settings import gateway_home, otel_env
from gateway.telemetry import ContentPolicy, TraceBuilder, traceparent_for
from gateway.telemetry.export import SpanSink, export_settings, install_exit_flush, open_span_sink
from gateway.types import Decision


class RunTracer:
    def __init__(self, prompt: str | None) -> None:
        settings = export_settings(otel_env(), gateway_home())
        self._sink: SpanSink = open_span_sink(settings)
        self._uninstall = install_exit_flush(self._sink)
        self._builder = TraceBuilder.for_wrapper(
            start_ns=time.time_ns(),
            traceparent=os.environ.get("TRACEPARENT"),
            tracestate=os.environ.get("TRACESTATE"),
            content=ContentPolicy(capture=settings.capture_content),
            prompt=prompt,
        )
        self._closed = False

    def child_env(self) -> dict[str, str]:
        """TRACEPARENT/TRACESTATE for Claude Code, so its native spans join this trace."""
        return traceparent_for(self._builder.root)

    def tap(self, message: dict[str, Any]) -> None:
        self._sink.export(self._builder.feed(message, time.time_ns()))

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Decision | None) -> None:
        self._sink.export(
            self._builder.on_pre_tool_use(tool_use_id, tool_name, decision, time.time_ns())
        )

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None) -> None:
        self._sink.export(
            self._builder.on_compact_archived(archive_id, error, time.time_ns(), trigger=trigger)
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._sink.export(self._builder.finish(time.time_ns()))
        self._sink.shutdown()
        self._uninstall()
