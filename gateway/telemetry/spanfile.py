"""The local span file (JSON lines under AGENT_GATEWAY_HOME/spans/): writer and reader."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from gateway.telemetry.model import AttributeValue, SpanEvent, SpanSpec, SpanStatus

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
        "attributes": _plain(span.attributes),
        "events": [
            {"name": e.name, "time_ns": e.timestamp, "attributes": _plain(e.attributes)}
            for e in span.events
        ],
        "resource": dict(span.resource.attributes),
    }


def _plain(attributes: Any) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (attributes or {}).items()}


def _attributes(raw: Any) -> dict[str, AttributeValue]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in (raw or {}).items()}


def spec_from_record(record: dict[str, Any]) -> SpanSpec:
    parent = record.get("parent_span_id")
    status = record.get("status") or {}
    kind = record.get("kind")
    code = status.get("code")
    return SpanSpec(
        name=str(record.get("name") or ""),
        trace_id=int(record["trace_id"], 16),
        span_id=int(record["span_id"], 16),
        parent_span_id=int(parent, 16) if parent else None,
        start_ns=int(record.get("start_ns") or 0),
        end_ns=int(record.get("end_ns") or 0),
        attributes=_attributes(record.get("attributes")),
        status=SpanStatus(
            code if code in ("ok", "error") else "unset", str(status.get("description") or "")
        ),
        kind="client" if kind == "client" else ("server" if kind == "server" else "internal"),
        events=tuple(
            SpanEvent(str(e.get("name") or ""), int(e.get("time_ns") or 0),
                      _attributes(e.get("attributes")))
            for e in record.get("events") or ()
        ),
    )


class SpanFileExporter(SpanExporter):
    """Appends one JSON line per span; a write error drops the batch, never raises.

    The file stays open between exports (O_APPEND, one write per batch), so a span costs a
    write, not a mkdir, open and close: the exporter runs synchronously on the run's event
    loop, once per finished span. A file removed or replaced meanwhile is reopened.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans).encode()
        try:
            with self._lock:
                fd = self._open()
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
        except OSError:
            self._close()
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _open(self) -> int:
        """The open file, reopened when the path no longer names it (removed, rotated)."""
        if self._fd is not None:
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self._identity:
                    return self._fd
            except FileNotFoundError:
                pass
            self._close_locked()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        st = os.fstat(fd)
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)
        return fd

    def _close_locked(self) -> None:
        fd, self._fd, self._identity = self._fd, None, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _close(self) -> None:
        with self._lock:
            self._close_locked()

    def shutdown(self) -> None:
        self._close()


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
