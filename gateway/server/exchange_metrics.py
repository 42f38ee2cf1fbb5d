"""Metrics of each proxied model call: tokens, duration and priced cost, by model and team.

The cost is the figure the team's budget counted (cut streams included); for a team without a
budget, the usage the response reported, or for a cut stream what it carried until the cut."""

from __future__ import annotations

import logging

from gateway.server.proxy import ExchangeSink, ProxiedExchange
from gateway.telemetry.metrics import GatewayMetrics
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable

ANONYMOUS_TEAM = "anonymous"
log = logging.getLogger("gateway.server")


def exchange_metrics(metrics: GatewayMetrics, prices: PriceTable) -> ExchangeSink:
    def on_exchange(exchange: ProxiedExchange) -> None:
        if not metrics.enabled:
            return
        acc = exchange.response()
        model = exchange.request_model or acc.model
        nanos = exchange.charged_nanos  # what the team's budget counted, when it has one
        if nanos is None and acc.saw_start:
            # Without a budget: the usage known (a cut stream: its input and the output sent)
            answered = prices.canonical(acc.model or model)
            nanos = prices.cost_nanos(answered, acc.usage)
        error = acc.error_type or (
            str(exchange.status) if exchange.status >= 400 else ("cut" if exchange.error else "")
        )
        metrics.chat(
            team=exchange.tenant or ANONYMOUS_TEAM,
            model=model,
            usage=acc.usage if acc.exact else None,
            duration_s=(exchange.ended_ns - exchange.started_ns) / 1e9,
            cost_usd=None if nanos is None else nanos / NANOS_PER_USD,
            error_type=error,
        )

    return on_exchange


def both(*sinks: ExchangeSink) -> ExchangeSink:
    """Each sink in turn; one that fails (logged) does not keep the next from its record."""

    def on_exchange(exchange: ProxiedExchange) -> None:
        for sink in sinks:
            try:
                sink(exchange)
            except Exception:
                log.exception("recording a proxied exchange failed")

    return on_exchange
