"""Pure: an audit record or an archive manifest as the OpenTelemetry log record that carries
it off the host. The body is the record as canonical JSON, byte for byte what was hashed
(plus its hash and MAC), so whoever receives it can check it without trusting the sender."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.hashchain import HASH_KEY, canonical_json
from gateway.telemetry import log_attributes as L
from gateway.telemetry.model import SpanRef

_SEVERITY = {"deny": "WARN", "ask": "WARN"}


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One log record to emit: an event name, a string body and attributes."""

    event_name: str
    body: str
    attributes: Mapping[str, Any]
    time_ns: int
    trace_id: int = 0
    span_id: int = 0
    severity: str = "INFO"


def decision_event(record: Mapping[str, Any], span: SpanRef | None) -> LogEvent:
    # Where the record sits and what was decided; every other field is in the body. Each
    # attribute costs the service ~5 us per decision to emit and encode, on the decision's
    # CPU: a collector can lift the body's fields into attributes (README) off the host.
    attrs = {
        L.AUDIT_CHAIN: record.get("chain"),
        L.AUDIT_POSITION: record.get("seq"),
        L.AUDIT_HASH: record.get(HASH_KEY),
        L.POLICY_DECISION: record.get("decision"),
        L.POLICY_RULE_ID: record.get("rule_id"),
        L.GEN_AI_TOOL_NAME: record.get("tool"),
    }
    return _event(L.EVENT_DECISION, record, attrs, str(record.get("time", "")), span,
                  _SEVERITY.get(str(record.get("decision")), "INFO"))


def archive_event(manifest: Mapping[str, Any], store: str, span: SpanRef | None) -> LogEvent:
    attrs = {
        L.AUDIT_CHAIN: f"archive:{store}",
        L.AUDIT_POSITION: manifest.get("seq"),
        L.AUDIT_HASH: manifest.get(HASH_KEY),
        L.ARCHIVE_STORE: store,
        L.COMPACTION_ARCHIVE_ID: manifest.get(HASH_KEY),
        L.COMPACTION_TRIGGER: manifest.get("trigger"),
        L.GEN_AI_CONVERSATION_ID: manifest.get("session_id"),
    }
    return _event(L.EVENT_ARCHIVE, manifest, attrs, str(manifest.get("created_at", "")), span)


def _event(
    name: str,
    record: Mapping[str, Any],
    attrs: Mapping[str, Any],
    when: str,
    span: SpanRef | None,
    severity: str = "INFO",
) -> LogEvent:
    return LogEvent(
        event_name=name,
        body=canonical_json(record).decode(),
        attributes=attrs,
        time_ns=_ns(when),
        trace_id=span.trace_id if span else 0,
        span_id=span.span_id if span else 0,
        severity=severity,
    )


def _ns(stamp: str) -> int:
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0
