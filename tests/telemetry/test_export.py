"""Export through the real OTel SDK: OTLP/HTTP into the in-test receiver, a dead collector, a
backend that says 404 or answers late, the sampler and the span limits the SDK reads from the
standard variables, the local span file and `trace show`."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from aiohttp import web
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from rich.console import Console

from gateway.errors import ConfigError
from gateway.telemetry import attributes as A
from gateway.telemetry.export import FILE, Guarded, export_settings, open_span_sink
from gateway.telemetry.model import SpanRef
from gateway.telemetry.show import trace_show
from tests.otlp_receiver import OtlpReceiver, decode_request
from tests.telemetry.recordings import root, run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def otlp_env(otel: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return otel


def test_settings_from_standard_variables(tmp_path: Path) -> None:
    local = export_settings({}, tmp_path)
    assert local.exporters == (FILE,)
    assert local.span_file == tmp_path / "spans" / "spans.jsonl"
    otlp = export_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        },
        tmp_path,
    )
    assert otlp.exporters == ("otlp",) and otlp.span_file is None
    assert otlp.capture_content is True
    grpc = export_settings(
        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, tmp_path
    )
    assert grpc.protocol == "grpc"
    assert export_settings({"OTEL_TRACES_EXPORTER": "none"}, tmp_path).exporters == ()
    assert export_settings({"OTEL_TRACES_EXPORTER": "console"}, tmp_path).exporters == ("console",)
    with pytest.raises(ConfigError, match="'zipkin'"):
        export_settings({"OTEL_TRACES_EXPORTER": "zipkin"}, tmp_path)
    with pytest.raises(ConfigError, match="'http/json'"):
        export_settings(
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, tmp_path
        )


def test_otlp_http_export_keeps_ids_parents_times_and_attributes(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    spans = run("subagent-task")
    with OtlpReceiver() as receiver:
        # The SDK reads these itself: the endpoint, the service name, the resource attributes.
        otlp_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otlp_env.setenv("OTEL_SERVICE_NAME", "gw-test")
        otlp_env.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,team=a%20b")
        sink = open_span_sink(export_settings({"OTEL_TRACES_EXPORTER": "otlp"}, tmp_path))
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
        assert span["resource"]["team"] == "a b"
    top = root(spans)
    received_root = by_id[f"{top.span_id:016x}"]
    assert received_root["attributes"][A.RESULT_NUM_TURNS] == 3
    assert received_root["attributes"][A.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    chats = [s for s in got if s["name"].startswith("chat ")]
    assert all(s["kind"] == "SPAN_KIND_CLIENT" for s in chats)
    assert all(s["attributes"][A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 300 for s in chats)


def test_error_status_reaches_the_collector(tmp_path: Path, otlp_env: pytest.MonkeyPatch) -> None:
    spans = run("max-turns-1")
    with OtlpReceiver() as receiver:
        otlp_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.traces_endpoint)
        sink = open_span_sink(export_settings({"OTEL_TRACES_EXPORTER": "otlp"}, tmp_path))
        sink.export(spans)
        sink.shutdown()
        got = receiver.wait_for(lambda s: len(s) >= len(spans))
    (top,) = [s for s in got if s["name"] == "invoke_agent claude-code"]
    assert top["status"]["code"] == "STATUS_CODE_ERROR"
    assert "error_max_turns" in top["status"]["message"]
    assert top["resource"]["service.name"] == "agent-gateway"  # ours unless the variables say


def test_collector_down_never_blocks_and_counts_drops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, otlp_env: pytest.MonkeyPatch
) -> None:
    otlp_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{_free_port()}")
    sink = open_span_sink(export_settings({"OTEL_TRACES_EXPORTER": "otlp"}, tmp_path))
    spans = run("partial-messages")
    started = time.monotonic()
    sink.export(spans)
    exported = time.monotonic() - started
    assert exported < 0.1  # handing spans over never waits on the network
    sink.shutdown(timeout_s=3.0)
    assert time.monotonic() - started < 3.5
    assert sink.dropped == len(spans)
    warnings = [r.getMessage() for r in caplog.records if r.name == "agent_gateway.telemetry"]
    assert sum("connection refused" in w for w in warnings) == 2  # first failure + summary


def test_breaker_drops_batches_at_once_after_a_failure() -> None:
    calls: list[int] = []

    class Failing(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            calls.append(len(spans))
            return SpanExportResult.FAILURE

        def shutdown(self) -> None:
            return None

    now = [0.0]
    guard = Guarded(Failing(), label="x", cooldown_s=30, clock=lambda: now[0])
    batch = [ReadableSpan("a"), ReadableSpan("b")]
    assert guard.export(batch) is SpanExportResult.FAILURE
    assert guard.export(batch) is SpanExportResult.FAILURE
    assert calls == [2] and guard.dropped == 4
    now[0] = 31.0
    guard.export(batch)
    assert calls == [2, 2]


def test_one_unanswered_batch_leaves_the_breaker_closed_two_open_it() -> None:
    # A backend slow to answer its first request (MLflow loading its trace ingestion) must
    # not cost the rest of a short run's trace; one that keeps timing out is skipped.
    calls: list[int] = []
    now = [0.0]
    answers = [SpanExportResult.FAILURE, SpanExportResult.SUCCESS] + [SpanExportResult.FAILURE] * 2

    class Slow(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            calls.append(len(spans))
            answer = answers.pop(0)
            if answer is SpanExportResult.FAILURE:
                now[0] += 10.0  # no answer within the timeout
            return answer

        def shutdown(self) -> None:
            return None

    guard = Guarded(Slow(), label="x", cooldown_s=30, clock=lambda: now[0], timeout_s=10.0)
    batch = [ReadableSpan("a"), ReadableSpan("b")]
    for _ in range(5):
        guard.export(batch)
    # timed out, tried again and sent, timed out, timed out: then skipped
    assert calls == [2, 2, 2, 2]
    assert (guard.unconfirmed, guard.dropped) == (6, 2)


class Backend:
    """An OTLP/HTTP endpoint that stores what it gets, then answers `status` after `delay_s`
    (a trace-only backend's 404 for logs, or a slow one)."""

    def __init__(self, status: int = 200, delay_s: float = 0.0) -> None:
        self.status, self.delay_s = status, delay_s
        self.spans: list[dict[str, object]] = []
        self.port = _free_port()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()

    async def _handle(self, request: web.Request) -> web.Response:
        self.spans.extend(decode_request(await request.read()))
        await asyncio.sleep(self.delay_s)
        return web.Response(status=self.status, body=b"")

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/traces", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port).start())
        self._started.set()
        self._loop.run_forever()

    def __enter__(self) -> str:
        threading.Thread(target=self._serve, daemon=True).start()
        assert self._started.wait(10)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)


def _export_to(
    endpoint: str,
    tmp_path: Path,
    otlp_env: pytest.MonkeyPatch,
    timeout_s: float | None = 5.0,
    **variables: str,
) -> tuple[int, int, list[str]]:
    otlp_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    for name, value in variables.items():
        otlp_env.setenv(name, value)
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(f"{record.name}: {record.getMessage()}")  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    try:
        sink = open_span_sink(export_settings({"OTEL_TRACES_EXPORTER": "otlp"}, tmp_path))
        sink.export(run("tool-call"))
        sink.shutdown(timeout_s=timeout_s)
    finally:
        logging.getLogger().removeHandler(handler)
    return sink.dropped, sink.unconfirmed, records


def test_a_404_is_reported_once_as_a_rejection_not_as_unreachable(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    with Backend(status=404) as endpoint:
        dropped, unconfirmed, said = _export_to(endpoint, tmp_path, otlp_env)
    assert dropped == len(run("tool-call")) and unconfirmed == 0
    ours = [line for line in said if line.startswith("agent_gateway.telemetry")]
    assert len(ours) == 2 and all("404" in line for line in ours), said
    assert not any("unreachable" in line for line in said), said
    assert len(said) == 2, said  # the SDK exporter's own error lines are folded into ours


def test_a_slow_backend_within_the_sdk_timeout_loses_nothing(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    # The SDK's default wait (10 s) is used, not a shorter one of ours.
    with Backend(delay_s=2.5) as endpoint:
        dropped, unconfirmed, said = _export_to(endpoint, tmp_path, otlp_env)
    assert (dropped, unconfirmed, said) == (0, 0, [])


def test_the_final_flush_waits_as_long_as_the_exporter_does(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    # A 4 s answer is within OTEL_EXPORTER_OTLP_TIMEOUT=6: the final flush at exit waits for
    # it rather than giving up after a shorter wait of its own and calling the spans lost.
    backend = Backend(delay_s=4.0)
    with backend as endpoint:
        dropped, unconfirmed, said = _export_to(
            endpoint, tmp_path, otlp_env, None, OTEL_EXPORTER_OTLP_TIMEOUT="6"
        )
    assert len({s["span_id"] for s in backend.spans}) == len(run("tool-call"))
    assert (dropped, unconfirmed, said) == (0, 0, [])


def test_spans_that_timed_out_are_not_reported_as_dropped(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    backend = Backend(delay_s=2.0)
    with backend as endpoint:
        dropped, unconfirmed, said = _export_to(
            endpoint, tmp_path, otlp_env, 5.0, OTEL_EXPORTER_OTLP_TIMEOUT="0.5"
        )
        deadline = time.monotonic() + 5
        while not backend.spans and time.monotonic() < deadline:
            time.sleep(0.05)
    sent = len(run("tool-call"))
    assert len({s["span_id"] for s in backend.spans}) == sent  # they arrived
    assert dropped == 0 and unconfirmed == sent
    assert not any("dropped" in line for line in said), said
    assert any("may have arrived" in line for line in said), said


@pytest.mark.parametrize(
    ("sampler", "parent_sampled", "exported"),
    [
        ("", False, False),  # ParentBased by default: the caller's sampled=0 is honoured
        ("", True, True),
        ("always_off", True, False),
        ("parentbased_always_off", True, True),  # a sampled parent still wins
        ("always_on", False, True),
    ],
)
def test_the_sdk_sampler_decides_per_trace(
    tmp_path: Path,
    otlp_env: pytest.MonkeyPatch,
    sampler: str,
    parent_sampled: bool,
    exported: bool,
) -> None:
    spans = run("tool-call")
    trace_id = spans[0].trace_id
    with OtlpReceiver() as receiver:
        otlp_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        if sampler:
            otlp_env.setenv("OTEL_TRACES_SAMPLER", sampler)
        settings = export_settings(
            {"OTEL_TRACES_EXPORTER": "otlp", "AGENT_GATEWAY_SPAN_FILE": "always"}, tmp_path
        )
        sink = open_span_sink(settings)
        parent = SpanRef(trace_id, 0x1234, is_remote=True, sampled=parent_sampled)
        assert sink.decide(trace_id, parent) is exported
        sink.export(spans)
        sink.shutdown()
        time.sleep(0.2)
        assert (len(receiver.spans) == len(spans)) is exported
        assert exported or receiver.spans == []
    # The local span file is the gateway's own record: every trace (`trace show`, budgets).
    lines = (tmp_path / "spans" / "spans.jsonl").read_text().splitlines()
    assert len(lines) == len(spans)


def test_span_attribute_limits_come_from_the_standard_variables(
    tmp_path: Path, otlp_env: pytest.MonkeyPatch
) -> None:
    spans = run("tool-call")
    with OtlpReceiver() as receiver:
        otlp_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otlp_env.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "5")
        otlp_env.setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "8")
        sink = open_span_sink(export_settings({"OTEL_TRACES_EXPORTER": "otlp"}, tmp_path))
        sink.export(spans)
        sink.shutdown()
        got = receiver.wait_for(lambda s: len(s) >= len(spans))
    assert max(len(s["attributes"]) for s in got) == 5
    assert all(
        len(v) <= 8 for s in got for v in s["attributes"].values() if isinstance(v, str)
    )


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
