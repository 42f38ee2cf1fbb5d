"""The off-host copy of the audit trail, as it happens: every decision recorded and every
archive written is also emitted as an OpenTelemetry log record (gateway.telemetry.logs), with
the trace and span of its tool call, for a collector to ship where the agent cannot reach.

An export never changes a decision: failures are counted and reported once, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from gateway.env import otel_env
from gateway.telemetry.audit_events import LogEvent, archive_event, decision_event
from gateway.telemetry.ids import session_root, session_tool
from gateway.telemetry.logs import LogSink, log_settings, open_log_sink
from gateway.telemetry.model import SpanRef

if TYPE_CHECKING:
    from gateway.archive.manifest import Manifest
    from gateway.audit.record import AuditRecord

log = logging.getLogger("gateway.handlers.trail")


class SpanLocator(Protocol):
    """Where a tool call's span (and a session's root) sits in the trace."""

    def tool_ref(self, session_id: str, tool_use_id: str) -> SpanRef | None: ...

    def root_ref(self, session_id: str) -> SpanRef | None: ...


class SessionSpans:
    """Behind `serve` and the command hook: span ids derived from the session and tool_use id,
    the same ones the service's spans get."""

    def tool_ref(self, session_id: str, tool_use_id: str) -> SpanRef | None:
        return session_tool(session_id, tool_use_id) if session_id and tool_use_id else None

    def root_ref(self, session_id: str) -> SpanRef | None:
        return session_root(session_id) if session_id else None


class AuditExport:
    def __init__(self, sink: LogSink, spans: SpanLocator | None = None) -> None:
        self.sink = sink
        self._spans = spans or SessionSpans()

    def locate(self, spans: SpanLocator) -> None:
        """Take span ids from `spans` from now on (the run's tracer, once it exists)."""
        self._spans = spans

    def decision(self, record: AuditRecord) -> None:
        """An audit record just appended."""
        self._emit(
            lambda: decision_event(
                record,
                self._spans.tool_ref(record.get("session_id", ""), record.get("tool_use_id", "")),
            )
        )

    def archive(self, manifest: Manifest, store: str) -> None:
        """An archive just published in `store`."""
        self._emit(
            lambda: archive_event(manifest, store, self._spans.root_ref(manifest["session_id"]))
        )

    def _emit(self, build: Callable[[], LogEvent]) -> None:
        try:
            self.sink.emit(build())
        except Exception:  # the record is on disk; its copy must not fail the decision
            log.exception("audit log record not exported")

    def shutdown(self) -> None:
        self.sink.shutdown()


def audit_export_from_env(
    spans: SpanLocator | None = None, *, hook: bool = False
) -> AuditExport | None:
    """The export the OTEL_* variables configure, or None when they configure none.
    `hook`: one record then exit (synchronous export; only when OTEL_LOGS_EXPORTER asks)."""
    sink = open_log_sink(log_settings(otel_env()), synchronous=hook)
    return AuditExport(sink, spans) if sink is not None else None
