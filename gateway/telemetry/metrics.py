"""Metrics through the OpenTelemetry metrics SDK: what a platform team graphs and alerts on.

Off unless OTEL_METRICS_EXPORTER asks (`otlp`, `prometheus`, `console`, `none`;
comma-separated; an OTLP endpoint alone does not: a trace-only backend answers metrics with
404). The SDK reads the rest itself: OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT / _PROTOCOL /
_TIMEOUT / _HEADERS, OTEL_METRIC_EXPORT_INTERVAL, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.
`prometheus` keeps a registry that `serve` exposes at GET /metrics.

`GatewayMetrics` is what the gateway records into: one method per fact, taking plain values,
so every caller (serve, run) records the same series. Recording never raises.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExportResult,
    MetricReader,
    PeriodicExportingMetricReader,
)

from gateway.errors import ConfigError
from gateway.telemetry import metric_names as M
from gateway.telemetry.export import (
    Guarded,
    Pipeline,
    exporter_names,
    guarded_otlp,
    otlp_protocol,
    resource,
)
from gateway.telemetry.pricing import Usage
from gateway.types import Decision

logger = logging.getLogger("agent_gateway.telemetry")

SCOPE = "agent_gateway"
METRIC_EXPORTERS = ("otlp", "prometheus", "console", "none")
MAX_VALUES = 64
"""Distinct values an open-ended attribute (model, tool, trigger) may take per process."""


@dataclass(frozen=True, slots=True)
class MetricSettings:
    exporters: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.exporters)


def metric_settings(env: Mapping[str, str]) -> MetricSettings:
    """Read the standard variables (and nothing else): pure."""
    exporters = exporter_names(env, "OTEL_METRICS_EXPORTER", METRIC_EXPORTERS) or ()
    if "otlp" in exporters:
        otlp_protocol(env, "metrics")  # a bad protocol stops the start, not the first export
    return MetricSettings(exporters=exporters)


class BoundedValues:
    """The first `limit` distinct values pass; later new ones become `other`, so a caller
    cannot grow a metric's series without bound (tool names and models arrive from outside)."""

    def __init__(self, limit: int = MAX_VALUES, known: Iterable[str] = ()) -> None:
        self._seen: set[str] = set(known)
        self._limit = limit + len(self._seen)
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        value = value[:128] if value else ""
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) >= self._limit:
                return M.OTHER
            self._seen.add(value)
        return value


BudgetRow = tuple[str, str, str, float, float]
"""(team, window: day|week|month, model or '', remaining USD, limit USD)"""


class GatewayMetrics(Pipeline):
    """The instruments, and one recording method per fact. Disabled (no exporter): every
    method returns at once."""

    what, signal = "metric export", "metrics"

    def __init__(
        self,
        provider: MeterProvider | None = None,
        *,
        guards: Sequence[Guarded] = (),
        registry: Any = None,
        known_models: Iterable[str] = (),
    ) -> None:
        super().__init__(guards)
        self.enabled = provider is not None
        self.registry = registry
        """The Prometheus registry GET /metrics serves (None: prometheus not chosen)."""
        self._provider = provider
        self._models = BoundedValues(known=known_models)
        self._tools = BoundedValues()
        self._small = BoundedValues(limit=16)
        self._budget_rows: Callable[[], Iterable[BudgetRow]] = list
        self._reload_errors: Callable[[], int] = lambda: 0
        if provider is not None:
            self._create_instruments(provider.get_meter(SCOPE))

    def _create_instruments(self, meter: Meter) -> None:
        self._tokens = meter.create_histogram(
            M.TOKEN_USAGE, M.UNITS[M.TOKEN_USAGE], "Tokens per model call, by token type",
            explicit_bucket_boundaries_advisory=M.TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            M.OPERATION_DURATION, M.UNITS[M.OPERATION_DURATION], "Model call duration",
            explicit_bucket_boundaries_advisory=M.DURATION_BUCKETS,
        )
        self._cost = meter.create_counter(
            M.COST, M.UNITS[M.COST], "Priced cost of model calls (the gateway's price table)"
        )
        self._decisions = meter.create_counter(
            M.POLICY_DECISIONS, M.UNITS[M.POLICY_DECISIONS], "PreToolUse decisions"
        )
        self._compactions = meter.create_counter(
            M.COMPACTIONS, M.UNITS[M.COMPACTIONS], "Compactions, by trigger and archive outcome"
        )
        self._hook = meter.create_histogram(
            M.HOOK_DURATION, M.UNITS[M.HOOK_DURATION], "Time to answer a hook event",
            explicit_bucket_boundaries_advisory=M.HOOK_BUCKETS,
        )
        self._refusals = meter.create_counter(
            M.BUDGET_REFUSALS, M.UNITS[M.BUDGET_REFUSALS], "Model calls refused by a team budget"
        )
        self._unenforced = meter.create_counter(
            M.BUDGET_UNENFORCED, M.UNITS[M.BUDGET_UNENFORCED],
            "Model calls forwarded unchecked: the budget store was unreachable (fail_open)",
        )
        meter.create_observable_gauge(
            M.BUDGET_REMAINING, [self._observe_remaining], M.UNITS[M.BUDGET_REMAINING],
            "Budget left in the current window (committed spend and open holds taken off)",
        )
        meter.create_observable_gauge(
            M.BUDGET_LIMIT, [self._observe_limit], M.UNITS[M.BUDGET_LIMIT],
            "The team's budget for the window",
        )
        meter.create_observable_gauge(
            M.RELOAD_ERRORS, [self._observe_reload_errors], M.UNITS[M.RELOAD_ERRORS],
            "Policy sets whose last reload failed (the last good policy stays in force)",
        )

    # --- recording ------------------------------------------------------------------------
    def chat(
        self,
        *,
        team: str,
        model: str,
        usage: Usage | None,
        duration_s: float,
        cost_usd: float | None,
        error_type: str = "",
    ) -> None:
        """One model call: tokens (when the response said), duration, cost (when priced)."""
        if not self.enabled:
            return
        base = {
            M.OPERATION_NAME: "chat",
            M.PROVIDER_NAME: "anthropic",
            M.REQUEST_MODEL: self._models(model),
            M.TEAM: team,
        }
        if usage is not None:
            self._tokens.record(usage.total_input_tokens, {**base, M.TOKEN_TYPE: M.TOKEN_INPUT})
            self._tokens.record(usage.output_tokens, {**base, M.TOKEN_TYPE: M.TOKEN_OUTPUT})
        timed = {**base, M.ERROR_TYPE: self._small(error_type)} if error_type else base
        self._duration.record(max(0.0, duration_s), timed)
        if cost_usd is not None:
            self._cost.add(cost_usd, base)

    def decision(self, decision: Decision, tool: str, team: str) -> None:
        if not self.enabled:
            return
        monitored = decision.would_deny
        self._decisions.add(1, {
            M.DECISION: "deny" if monitored else decision.kind,
            M.RULE_ID: decision.rule_id,
            M.TOOL_NAME: self._tools(tool),
            M.TEAM: team,
            M.MODE: M.MODE_MONITOR if monitored else M.MODE_ENFORCE,
        })

    def compaction(self, trigger: str, outcome: str, team: str) -> None:
        if self.enabled:
            self._compactions.add(1, {
                M.TRIGGER: self._small(trigger), M.ARCHIVE_OUTCOME: outcome, M.TEAM: team,
            })

    def hook(self, event: str, seconds: float) -> None:
        if self.enabled:
            self._hook.record(max(0.0, seconds), {M.HOOK_EVENT: event})

    def budget_refused(self, team: str, reason: str) -> None:
        if self.enabled:
            self._refusals.add(1, {M.TEAM: team, M.BUDGET_REASON: reason})

    def budget_unenforced(self, team: str) -> None:
        if self.enabled:
            self._unenforced.add(1, {M.TEAM: team})

    # --- observed at collection -----------------------------------------------------------
    def observe_budgets(self, rows: Callable[[], Iterable[BudgetRow]]) -> None:
        self._budget_rows = rows

    def observe_reload_errors(self, count: Callable[[], int]) -> None:
        self._reload_errors = count

    def _rows(self) -> list[BudgetRow]:
        try:
            return list(self._budget_rows())
        except Exception:
            logger.exception("budget gauges failed")
            return []

    def _observe_remaining(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(row[3], _budget_attrs(row)) for row in self._rows()]

    def _observe_limit(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(row[4], _budget_attrs(row)) for row in self._rows()]

    def _observe_reload_errors(self, _options: CallbackOptions) -> Iterable[Observation]:
        try:
            return [Observation(self._reload_errors())]
        except Exception:
            logger.exception("reload error gauge failed")
            return []

    # --- Prometheus and shutdown ----------------------------------------------------------
    def prometheus_text(self) -> bytes:
        """The exposition text for GET /metrics (collects now)."""
        from prometheus_client import generate_latest

        return bytes(generate_latest(self.registry))

    def _force_flush(self, timeout_ms: int) -> bool:
        return self._provider.force_flush(timeout_ms) if self._provider else True

    def _stop(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Export what was recorded (the end of a run), then stop: bounded in time."""
        if self._provider is not None:
            super().shutdown(timeout_s)


def _budget_attrs(row: BudgetRow) -> dict[str, str]:
    attrs = {M.TEAM: row[0], M.BUDGET_WINDOW: row[1]}
    if row[2]:
        attrs[M.REQUEST_MODEL] = row[2]
    return attrs


PROMETHEUS_MISSING = (
    "OTEL_METRICS_EXPORTER=prometheus needs opentelemetry-exporter-prometheus "
    "(pip install opentelemetry-exporter-prometheus)"
)


def open_metrics(
    settings: MetricSettings, *, known_models: Iterable[str] = (), periodic: bool = True
) -> GatewayMetrics:
    """The SDK pipeline for `settings`. `periodic=False` (a run) exports only when shut down."""
    if not settings.enabled:
        return GatewayMetrics(known_models=known_models)
    readers: list[MetricReader] = []
    guards: list[Guarded] = []
    registry = None
    interval = None if periodic else 24 * 3600 * 1000.0
    for name in settings.exporters:
        if name == "otlp":
            guard = guarded_otlp(
                "metrics", what="metric export", failure=MetricExportResult.FAILURE
            )
            guards.append(guard)
            exporter: Any = guard
            readers.append(PeriodicExportingMetricReader(exporter, interval))
        elif name == "console":
            console = ConsoleMetricExporter(out=sys.stderr)
            readers.append(PeriodicExportingMetricReader(console, interval))
        elif name == "prometheus":
            try:
                from opentelemetry.exporter.prometheus import PrometheusMetricReader
                from prometheus_client import CollectorRegistry
            except ImportError:
                raise ConfigError(PROMETHEUS_MISSING) from None
            registry = CollectorRegistry(auto_describe=True)
            readers.append(PrometheusMetricReader(registry=registry))
    provider = MeterProvider(metric_readers=readers, resource=resource(), shutdown_on_exit=False)
    return GatewayMetrics(provider, guards=guards, registry=registry, known_models=known_models)
