"""Decision and archive log records through the standard OTLP logs pipeline, to a receiver."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest

from gateway.audit import append_decision
from gateway.errors import ConfigError
from gateway.handlers.trail import AuditExport
from gateway.hashchain import canonical_json
from gateway.telemetry import log_attributes as L
from gateway.telemetry.ids import session_root, session_tool
from gateway.telemetry.logs import log_settings, open_log_sink
from gateway.types import Decision, ToolCall
from tests.otlp_receiver import OtlpReceiver

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit.md"


def test_settings_come_from_the_standard_variables_only() -> None:
    assert log_settings({}).exporters == ()
    # An endpoint alone does not turn logs on: a trace-only backend answers them with 404.
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
    assert log_settings(endpoint).exporters == ()
    explicit = {**endpoint, "OTEL_LOGS_EXPORTER": "otlp,console"}
    assert log_settings(explicit).exporters == ("otlp", "console")
    assert log_settings({**endpoint, "OTEL_LOGS_EXPORTER": "none"}).exporters == ()
    with pytest.raises(ConfigError, match="OTEL_LOGS_EXPORTER: unsupported exporter 'kafka'"):
        log_settings({"OTEL_LOGS_EXPORTER": "kafka"})
    with pytest.raises(ConfigError, match="'http/json'"):
        log_settings({"OTEL_LOGS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    # Our batch defaults step aside for the SDK's own variables.
    assert (log_settings({}).batch_delay_ms, log_settings({}).batch_size) == (200, 64)
    sdk = log_settings({"OTEL_BLRP_SCHEDULE_DELAY": "50", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "8"})
    assert (sdk.batch_delay_ms, sdk.batch_size) == (None, None)


def _decide(log: Path, n: int, session: str = "sess-1") -> dict[str, object]:
    call = ToolCall("Bash", {"command": f"rm -rf /srv/{n} --token ghp_{'a' * 36}"},
                    tool_use_id=f"toolu_{n}", session_id=session)
    return append_decision(call, Decision("deny", "no-rm", "not here"), log)


def test_a_decision_arrives_with_its_record_hash_and_tool_span(
    tmp_path: Path, otel: pytest.MonkeyPatch
) -> None:
    with OtlpReceiver() as receiver:
        otel.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint + "/v1/logs")
        otel.setenv("OTEL_SERVICE_NAME", "gw-test")
        settings = log_settings({"OTEL_LOGS_EXPORTER": "otlp"})
        sink = open_log_sink(settings)
        assert sink is not None
        export = AuditExport(sink)
        record = _decide(tmp_path / "audit.jsonl", 1)
        export.decision(record)
        export.archive({"hash": "a" * 64, "seq": 1, "session_id": "sess-1",
                        "trigger": "manual", "created_at": "2026-05-01T00:00:00.000Z"},
                       "/srv/archive")
        export.shutdown()
        logs = receiver.wait_for_logs(lambda got: len(got) == 2)
    decision, archive = sorted(logs, key=lambda r: r["event_name"], reverse=True)
    assert decision["event_name"] == L.EVENT_DECISION
    assert decision["body"] == canonical_json(record).decode()
    assert json.loads(decision["body"])["input"]["command"].endswith(
        "--token [REDACTED:builtin.github-token]")
    attrs = decision["attributes"]
    assert attrs[L.AUDIT_HASH] == record["hash"] and attrs[L.AUDIT_POSITION] == 1
    assert attrs[L.POLICY_DECISION] == "deny" and attrs[L.POLICY_RULE_ID] == "no-rm"
    assert attrs[L.GEN_AI_TOOL_NAME] == "Bash"
    assert attrs[L.AUDIT_CHAIN] == record["chain"]
    span = session_tool("sess-1", "toolu_1")
    assert decision["trace_id"] == f"{span.trace_id:032x}"
    assert decision["span_id"] == f"{span.span_id:016x}"
    assert decision["severity_text"] == "WARN" and decision["resource"]["service.name"] == "gw-test"
    assert archive["event_name"] == L.EVENT_ARCHIVE
    assert archive["attributes"][L.ARCHIVE_STORE] == "/srv/archive"
    assert archive["span_id"] == f"{session_root('sess-1').span_id:016x}"


def test_a_dead_collector_costs_one_refusal_and_is_counted(
    tmp_path: Path, otel: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    otel.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    sink = open_log_sink(log_settings({"OTEL_LOGS_EXPORTER": "otlp"}), synchronous=True)
    assert sink is not None
    export = AuditExport(sink)
    started = time.monotonic()
    for n in range(5):
        export.decision(_decide(tmp_path / "audit.jsonl", n))
    export.shutdown()
    assert time.monotonic() - started < 2.0
    assert sink.dropped == 5


def test_every_log_attribute_is_documented_once() -> None:
    names = {
        v for k, v in vars(L).items()
        if k.isupper() and isinstance(v, str) and v not in L.EVENT_NAMES
    }
    table = DOC.read_text().split("\n## Log record attributes", 1)[1].split("\n# ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == names


def test_batched_export_sends_everything_by_shutdown(
    tmp_path: Path, otel: pytest.MonkeyPatch
) -> None:
    with OtlpReceiver() as receiver:
        otel.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otel.setenv("OTEL_BLRP_SCHEDULE_DELAY", "60000")  # only size or shutdown
        settings = log_settings({"OTEL_LOGS_EXPORTER": "otlp",
                                 "OTEL_BLRP_SCHEDULE_DELAY": "60000"})
        sink = open_log_sink(settings)
        assert sink is not None
        export = AuditExport(sink)
        records = [_decide(tmp_path / "audit.jsonl", n) for n in range(150)]
        for record in records:
            export.decision(record)
        export.shutdown()
        logs = receiver.wait_for_logs(lambda got: len(got) == 150)
    assert sorted(r["attributes"][L.AUDIT_POSITION] for r in logs) == list(range(1, 151))
