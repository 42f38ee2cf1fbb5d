"""Tracing for one `agent-gateway run`: the message tap and hook events into TraceBuilder,
finished spans out to the configured sink; at the end, the subagent transcripts' final usage."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gateway.env import gateway_home, trace_context, trace_env
from gateway.telemetry import (
    ContentPolicy,
    SpanRef,
    SpanSpec,
    TraceBuilder,
    parse_traceparent,
    traceparent_for,
)
from gateway.telemetry.export import SpanSink, export_settings, install_exit_flush, open_span_sink
from gateway.telemetry.model import AttributeValue
from gateway.telemetry.subagents import (
    TRANSCRIPT_GLOB,
    FinalUsage,
    final_usage_by_message_id,
    subagents_dir,
)
from gateway.types import Decision

log = logging.getLogger("gateway.telemetry")


class RunTracer:
    def __init__(self, prompt: str | None) -> None:
        settings = export_settings(trace_env(), gateway_home())
        self._sink: SpanSink = open_span_sink(settings)
        self._uninstall = install_exit_flush(self._sink)
        traceparent, tracestate = trace_context()
        self._builder = TraceBuilder.for_wrapper(
            start_ns=time.time_ns(),
            traceparent=traceparent,
            tracestate=tracestate,
            content=ContentPolicy(capture=settings.capture_content),
            prompt=prompt,
        )
        # The sampler's decision (a caller's sampled=0 honoured) goes on to Claude Code too.
        parent = parse_traceparent(traceparent, tracestate)
        self._sampled = self._sink.decide(self._builder.root.trace_id, parent)
        self._transcript_path = ""
        self._closed = False
        self.observers: list[Callable[[Sequence[SpanSpec]], None]] = []
        """Called with every batch of finished spans (metrics, the run's budget charge)."""

    def _export(self, specs: Sequence[SpanSpec]) -> None:
        for observe in self.observers:
            try:
                observe(specs)
            except Exception:  # an observer never breaks the run's tracing
                log.exception("span observer failed")
        self._sink.export(specs)

    def tool_ref(self, session_id: str, tool_use_id: str) -> SpanRef | None:
        """The span a tool call gets in this run's trace (for its audit log record)."""
        del session_id  # one run, one trace
        return self._builder.tool_ref(tool_use_id) if tool_use_id else None

    def root_ref(self, session_id: str) -> SpanRef | None:
        del session_id
        return self._builder.root

    def child_env(self) -> dict[str, str]:
        """TRACEPARENT/TRACESTATE for Claude Code, so its native spans join this trace."""
        return traceparent_for(dataclasses.replace(self._builder.root, sampled=self._sampled))

    def annotate_root(self, attrs: dict[str, AttributeValue]) -> None:
        self._builder.annotate_root(attrs)

    def tap(self, message: dict[str, Any]) -> None:
        self._export(self._builder.feed(message, time.time_ns()))

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Decision | None) -> None:
        self._export(
            self._builder.on_pre_tool_use(tool_use_id, tool_name, decision, time.time_ns())
        )

    def transcript(self, path: str | None) -> None:
        """The session's transcript_path, as a hook input carried it (the first one wins)."""
        if path and not self._transcript_path:
            self._transcript_path = str(path)

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None) -> None:
        self._export(
            self._builder.on_compact_archived(archive_id, error, time.time_ns(), trigger=trigger)
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        final = read_subagent_usage(self._transcript_path)
        if final:
            self._export(self._builder.complete_from_transcripts(final))
        self._export(self._builder.finish(time.time_ns()))
        self._sink.shutdown()
        self._uninstall()


def read_subagent_usage(transcript_path: str) -> dict[str, FinalUsage]:
    """Final usage per message.id from `<transcript dir>/subagents/agent-*.jsonl` (only
    those files). Unreadable files are skipped with a warning: tracing never fails a run."""
    if not transcript_path:
        return {}
    directory = Path(subagents_dir(transcript_path))
    try:
        paths = sorted(directory.glob(TRANSCRIPT_GLOB))
    except OSError as exc:
        log.warning("subagent transcripts in %s not readable: %s", directory, exc)
        return {}
    found: dict[str, FinalUsage] = {}
    for path in paths:
        try:
            with path.open("rb") as lines:
                found.update(final_usage_by_message_id(lines))
        except OSError as exc:
            log.warning("subagent transcript %s not readable: %s", path, exc)
    return found
