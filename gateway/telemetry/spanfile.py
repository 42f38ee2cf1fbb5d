"""The local span file (JSON lines under AGENT_GATEWAY_HOME/spans/): writer and reader."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from gateway.telemetry.model import SpanSpec, SpanStatus

SPAN_FILE = "spans.jsonl"


def span_file_path(home: Path) -> Path:
    return home / "spans" / SPAN_FILE


def span_record(span: ReadableSpan) -> dict[str, Any]:
    context, parent = span.context, span.parent
    status_code = span.status.status_code.name.lower()
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}" if context else "",
        "span_id": f"{context.span_id:016x}" if context else "",
        "parent_span_id": f"{parent.span_id:016x}" if parent else None,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "kind": span.kind.name.lower(),
        "status": {"code": status_code, "description": span.status.description or ""},
        "attributes": {
            k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()
        },
        "resource": dict(span.resource.attributes),
    }


def spec_from_record(record: dict[str, Any]) -> SpanSpec:
    parent = record.get("parent_span_id")
    status = record.get("status") or {}
    attrs = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in (record.get("attributes") or {}).items()
    }
    kind = record.get("kind")
    return SpanSpec(
        name=str(record.get("name") or ""),
        trace_id=int(record["trace_id"], 16),
        span_id=int(record["span_id"], 16),
        parent_span_id=int(parent, 16) if parent else None,
        start_ns=int(record.get("start_ns") or 0),
        end_ns=int(record.get("end_ns") or 0),
        attributes=attrs,
        status=SpanStatus(
            "error" if status.get("code") == "error" else "unset",
            str(status.get("description") or ""),
        ),
        kind="client" if kind == "client" else ("server" if kind == "server" else "internal"),
    )


class SpanFileExporter(SpanExporter):
    """Appends one JSON line per span; a write error drops the batch, never raises."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans)
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(lines)
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def read_span_file(path: Path) -> Iterator[SpanSpec]:
    """Every well-formed span in the file; damaged lines are skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                yield spec_from_record(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
