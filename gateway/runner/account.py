"""Who a run is accounted to: its team, the metrics it records, the budget it is checked
against and charged to. `agent-gateway run` opens its own metrics pipeline (OTEL_METRICS_*)
and exports it once, at the end; a remote run inside `serve` records into serve's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from gateway.budgets.local import chat_model, chat_usage
from gateway.env import otel_env
from gateway.runner.budget import LOCAL_TEAM, RunBudget
from gateway.telemetry import attributes as A
from gateway.telemetry.metrics import GatewayMetrics, metric_settings, open_metrics
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable, load_price_table

NO_SCRAPE = (
    "agent-gateway: OTEL_METRICS_EXPORTER=prometheus has nothing to scrape in a run (it ends); "
    "a run's metrics go to the other exporters named (otlp, console)\n"
)


@dataclass
class RunAccount:
    team: str = LOCAL_TEAM
    metrics: GatewayMetrics | None = None
    """None: the run opens its own from the OTEL_* variables and exports it when it ends."""
    budget: RunBudget | None = None
    check_first: bool = True
    """False where the budget was checked already (serve checks a remote run's)."""


def run_metrics(err: TextIO) -> GatewayMetrics:
    settings = metric_settings(otel_env())
    if "prometheus" in settings.exporters:
        err.write(NO_SCRAPE)
        kept = tuple(e for e in settings.exporters if e != "prometheus")
        settings = dataclasses.replace(settings, exporters=kept)
    return open_metrics(settings, periodic=False, known_models=load_price_table().models)


def chat_metrics(
    metrics: GatewayMetrics, team: str, prices: PriceTable
) -> Callable[[Sequence[SpanSpec]], None]:
    """Records each chat span of a run as a model call (tokens, duration, cost)."""

    def observe(specs: Sequence[SpanSpec]) -> None:
        for spec in specs:
            attrs = spec.attributes
            if attrs.get(A.GEN_AI_OPERATION_NAME) != A.OP_CHAT:
                continue
            usage = chat_usage(attrs)
            nanos = prices.cost_nanos(chat_model(attrs), usage) if usage is not None else None
            metrics.chat(
                team=team,
                model=str(attrs.get(A.GEN_AI_REQUEST_MODEL) or ""),
                usage=usage,
                duration_s=(spec.end_ns - spec.start_ns) / 1e9,
                cost_usd=None if nanos is None else nanos / NANOS_PER_USD,
                error_type=str(attrs.get(A.ERROR_TYPE) or ""),
            )

    return observe
