"""The metrics pipeline: standard variables only, bounded attributes, each exporter."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import ConfigError
from gateway.telemetry import metric_names as M
from gateway.telemetry.metrics import (
    BoundedValues,
    MetricSettings,
    metric_settings,
    open_metrics,
)
from gateway.telemetry.pricing import Usage
from gateway.types import Decision
from tests.otlp_receiver import OtlpReceiver
from tests.prometheus_text import series, total

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_settings_come_from_the_standard_variables_only() -> None:
    assert metric_settings({}).exporters == ()
    # An endpoint alone does not turn metrics on: a trace-only backend answers them with 404.
    assert metric_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).exporters == ()
    both = metric_settings({"OTEL_METRICS_EXPORTER": "prometheus, otlp,none"})
    assert both.exporters == ("prometheus", "otlp")
    assert metric_settings({"OTEL_METRICS_EXPORTER": "none",
                            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}).exporters == ()
    with pytest.raises(ConfigError, match="OTEL_METRICS_EXPORTER: unsupported exporter 'statsd'"):
        metric_settings({"OTEL_METRICS_EXPORTER": "statsd"})
    with pytest.raises(ConfigError, match="'thrift'"):
        metric_settings({"OTEL_METRICS_EXPORTER": "otlp",
                         "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "thrift"})


def test_disabled_metrics_cost_nothing_and_record_nothing() -> None:
    metrics = open_metrics(MetricSettings(exporters=()))
    assert not metrics.enabled and metrics.registry is None
    metrics.chat(team="t", model="m", usage=Usage(1, 1), duration_s=1, cost_usd=1.0)
    metrics.decision(Decision("deny", "r"), "Bash", "t")
    metrics.shutdown()


def test_open_ended_values_are_bounded() -> None:
    bounded = BoundedValues(limit=2, known=["claude-opus-5-5"])
    assert [bounded(v) for v in ("claude-opus-5-5", "a", "b", "c", "a")] == [
        "claude-opus-5-5", "a", "b", M.OTHER, "a"]
    metrics = open_metrics(MetricSettings(exporters=("prometheus",)))
    for n in range(200):  # an agent inventing tool names cannot grow the series without end
        metrics.decision(Decision("allow", "r"), f"tool-{n}", "t")
    tools = series(metrics.prometheus_text(), "agent_gateway_policy_decisions_total")
    assert len(tools) == 65
    other = [v for labels, v in tools.items() if ("gen_ai_tool_name", M.OTHER) in labels]
    assert other == [136.0]


def test_monitor_mode_decisions_are_counted_as_would_be_denies() -> None:
    metrics = open_metrics(MetricSettings(exporters=("prometheus",)))
    metrics.decision(Decision("allow", "org:deny[0]", would_deny=True), "Bash", "t")
    metrics.decision(Decision("deny", "org:deny[0]"), "Bash", "t")
    text = metrics.prometheus_text()
    assert total(text, "agent_gateway_policy_decisions_total", agent_gateway_policy_decision="deny",
                 agent_gateway_policy_mode="monitor") == 1
    assert total(text, "agent_gateway_policy_decisions_total", agent_gateway_policy_decision="deny",
                 agent_gateway_policy_mode="enforce") == 1


def test_otlp_export_at_shutdown_carries_every_instrument(otel: pytest.MonkeyPatch) -> None:
    with OtlpReceiver() as receiver:
        otel.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        otel.setenv("OTEL_SERVICE_NAME", "gw-test")
        metrics = open_metrics(metric_settings({"OTEL_METRICS_EXPORTER": "otlp"}), periodic=False)
        metrics.chat(team="t", model="claude-opus-5-5", usage=Usage(10, 3), duration_s=0.25,
                     cost_usd=0.5)
        metrics.chat(team="t", model="claude-opus-5-5", usage=None, duration_s=0.1,
                     cost_usd=None, error_type="529")
        metrics.decision(Decision("deny", "r1"), "Bash", "t")
        metrics.compaction("auto", M.ARCHIVED, "t")
        metrics.hook("PreToolUse", 0.002)
        metrics.budget_refused("t", M.OVER_BUDGET)
        metrics.budget_unenforced("t")
        metrics.observe_budgets(lambda: [("t", "day", "", 1.25, 5.0)])
        metrics.observe_reload_errors(lambda: 2)
        metrics.shutdown()
        points = receiver.latest_points()
    names = {p["name"] for p in points}
    assert names == set(M.UNITS)
    units = {p["name"]: p["unit"] for p in points}
    assert units == M.UNITS
    assert {p["resource"]["service.name"] for p in points} == {"gw-test"}
    (duration_error,) = [p for p in points if p["name"] == M.OPERATION_DURATION
                         and p["attributes"].get(M.ERROR_TYPE) == "529"]
    assert duration_error["count"] == 1
    (remaining,) = [p for p in points if p["name"] == M.BUDGET_REMAINING]
    assert remaining["value"] == 1.25 and remaining["attributes"] == {
        M.TEAM: "t", M.BUDGET_WINDOW: "day"}


def test_console_exporter_writes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    metrics = open_metrics(MetricSettings(exporters=("console",)), periodic=False)
    metrics.hook("Stop", 0.001)
    metrics.shutdown()
    assert M.HOOK_DURATION in capsys.readouterr().err


def test_an_unreachable_collector_never_raises(otel: pytest.MonkeyPatch) -> None:
    from tests.redis_server import free_port

    otel.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    metrics = open_metrics(metric_settings({"OTEL_METRICS_EXPORTER": "otlp"}), periodic=False)
    metrics.hook("Stop", 0.001)
    metrics.shutdown(timeout_s=2)
    assert metrics.dropped >= 1


def test_the_docs_table_lists_every_metric_with_its_type_and_unit() -> None:
    table = DOC.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| `([^`]+)` \|", table, flags=re.M)
    assert {name: unit for name, _, unit in rows} == M.UNITS
    kinds: dict[str, Any] = {name: kind for name, kind, _ in rows}
    assert kinds[M.TOKEN_USAGE] == kinds[M.HOOK_DURATION] == "histogram"
    assert kinds[M.COST] == "counter" and kinds[M.BUDGET_REMAINING] == "gauge"
    attributes = {v for k, v in vars(M).items() if k.isupper() and isinstance(v, str)
                  and "." in v and v not in M.UNITS}
    for attribute in attributes:
        assert f"`{attribute}`" in table, attribute
