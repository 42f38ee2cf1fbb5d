"""Export through the real OTel SDK: OTLP/HTTP into the in-test receiver, a dead collector,
settings from the standard variables, the local span file and `trace show`."""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from rich.console import Console

from gateway.errors import ConfigError
from gateway.telemetry import attributes as A
from gateway.telemetry.export import FILE, GuardedExporter, export_settings, open_span_sink
from gateway.telemetry.show import trace_show
from tests.otlp_receiver import OtlpReceiver
from tests.telemetry.recordings import root, run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_settings_from_standard_variables(tmp_path: Path) -> None:
    local = export_settings({}, tmp_path)
    assert local.exporters == (FILE,)
    assert local.span_file == tmp_path / "spans" / "spans.jsonl"
    otlp = export_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_SERVICE_NAME": "gw",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=a%20b",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        },
        tmp_path,
    )
    assert otlp.exporters == ("otlp",)
    assert otlp.endpoint == "http://collector:4318/v1/traces"
    assert otlp.resource == {"deployment.environment": "ci", "team": "a b", "service.name": "gw"}
    assert otlp.capture_content is True
    grpc = export_settings(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, tmp_path
    )
    assert grpc.protocol == "grpc" and grpc.endpoint == "http://localhost:4317"
    assert export_settings({"OTEL_TRACES_EXPORTER": "none"}, tmp_path).exporters == ()
    assert export_settings({"OTEL_TRACES_EXPORTER": "console"}, tmp_path).exporters == ("console",)
    with pytest.raises(ConfigError, match="'zipkin'"):
        export_settings({"OTEL_TRACES_EXPORTER": "zipkin"}, tmp_path)
    with pytest.raises(ConfigError, match="'http/json'"):
        export_settings(
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, tmp_path
        )


def test_otlp_http_export_keeps_ids_parents_times_and_attributes(tmp_path: Path) -> None:
    spans = run("subagent-task")
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "gw-test"}
        sink = open_span_sink(export_settings(env, tmp_path))
        sink.export(spans)
        sink.shutdown()
        got = receiver.wait_for(lambda s: len(s) >= len(spans), timeout=10)
    assert sink.dropped == 0
    by_id = {s["span_id"]: s for s in got}
    assert len(by_id) == len(spans)
    for spec in spans:
        span = by_id[f"{spec.span_id:016x}"]
        assert span["name"] == spec.name
        assert span["trace_id"] == f"{spec.trace_id:032x}"
        expected_parent = f"{spec.parent_span_id:016x}" if spec.parent_span_id else None
        assert span["parent_span_id"] == expected_parent
        assert (span["start_ns"], span["end_ns"]) == (spec.start_ns, spec.end_ns)
        assert span["resource"]["service.name"] == "gw-test"
    top = root(spans)
    received_root = by_id[f"{top.span_id:016x}"]
    assert received_root["attributes"][A.RESULT_NUM_TURNS] == 3
    assert received_root["attributes"][A.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    chats = [s for s in got if s["name"].startswith("chat ")]
    assert all(s["kind"] == "SPAN_KIND_CLIENT" for s in chats)
    assert all(s["attributes"][A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 300 for s in chats)


def test_error_status_reaches_the_collector(tmp_path: Path) -> None:
    spans = run("max-turns-1")
    with OtlpReceiver() as receiver:
        sink = open_span_sink(
            export_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, tmp_path)
        )
        sink.export(spans)
        sink.shutdown()
        got = receiver.wait_for(lambda s: len(s) >= len(spans))
    (top,) = [s for s in got if s["name"] == "invoke_agent claude-code"]
    assert top["status"]["code"] == "STATUS_CODE_ERROR"
    assert "error_max_turns" in top["status"]["message"]


def test_collector_down_never_blocks_and_counts_drops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_free_port()}"}
    sink = open_span_sink(export_settings(env, tmp_path))
    spans = run("partial-messages")
    started = time.monotonic()
    sink.export(spans)
    exported = time.monotonic() - started
    assert exported < 0.1  # handing spans over never waits on the network
    sink.shutdown(timeout_s=3.0)
    assert time.monotonic() - started < 3.5
    assert sink.dropped == len(spans)
    warnings = [r for r in caplog.records if r.name == "agent_gateway.telemetry"]
    assert sum("unreachable" in r.getMessage() for r in warnings) == 2  # first failure + summary


def test_breaker_drops_batches_at_once_after_a_failure() -> None:
    calls: list[int] = []

    class Failing(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            calls.append(len(spans))
            return SpanExportResult.FAILURE

        def shutdown(self) -> None:
            return None

    now = [0.0]
    guard = GuardedExporter(Failing(), label="x", cooldown_s=30, clock=lambda: now[0])
    batch = [ReadableSpan("a"), ReadableSpan("b")]
    assert guard.export(batch) is SpanExportResult.FAILURE
    assert guard.export(batch) is SpanExportResult.FAILURE
    assert calls == [2] and guard.dropped == 4
    now[0] = 31.0
    guard.export(batch)
    assert calls == [2, 2]


def test_local_span_file_and_trace_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sink = open_span_sink(export_settings({}, tmp_path))
    first = run("hook-denied")
    second = run("subagent-task")
    sink.export(first)
    sink.export(second)
    sink.shutdown()
    assert (tmp_path / "spans" / "spans.jsonl").exists()

    out = io.StringIO()
    assert (
        trace_show(None, home=tmp_path, console=Console(file=out, width=200, color_system=None))
        == 0
    )
    text = out.getvalue()
    assert "invoke_agent claude-code" in text
    assert (
        "execute_tool Task" in text and "general-purpose" not in text.split("execute_tool Task")[0]
    )
    assert "in 1584 (cache read 300, write 50)" in text
    assert "success, 3 turns" in text

    session = root(first).attributes[A.GEN_AI_CONVERSATION_ID]
    out = io.StringIO()
    assert (
        trace_show(
            str(session), home=tmp_path, console=Console(file=out, width=200, color_system=None)
        )
        == 0
    )
    text = out.getvalue()
    # Claude Code's hook rejected the call: shown, and not an error
    assert "execute_tool Bash" in text and "reject (hook)" in text and "ERROR" not in text

    out = io.StringIO()
    assert trace_show("nope", home=tmp_path, console=Console(file=out, width=200)) == 1
    assert out.getvalue() == ""
    assert "no trace for session nope" in capsys.readouterr().err
