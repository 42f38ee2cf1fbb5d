"""Team budgets at the proxy: reserve before forwarding, settle when the response ends.

`reserve` takes a hold of the request's expected cost (budgets/estimate.py) on each of the
team's counters that apply to the model, atomically; a request that does not fit is refused
before any upstream call. `Hold.settle(exchange)` replaces the hold by the priced actual once
the response has ended, failed or been cut off. It runs off the request path and is retried
until the store answers (settling is idempotent); holds the gateway never settles expire.

Refusals are 402 `billing_error`: measured on Claude Code 2.1.332, it gives up on that at
once (one request) and shows `API Error: 402 <message>`; a 403 is shown behind "Failed to
authenticate.", a 429 is retried for minutes and a 400 six times.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.budgets.estimate import (
    DEFAULT_RESERVE_OUTPUT_TOKENS,
    reservation,
    with_output_at_least,
)
from gateway.budgets.ledger import (
    Counter,
    Ledger,
    Standing,
    StoreUnavailable,
    Verdict,
    over_budget_message,
)
from gateway.budgets.limits import Limit, usd, window_of
from gateway.server.auth import Caller
from gateway.server.proxy import ProxiedExchange, request_model
from gateway.telemetry import metric_names as M
from gateway.telemetry.metrics import BudgetRow, GatewayMetrics
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable

log = logging.getLogger("gateway.server.budgets")

REFUSAL_STATUS = 402
REFUSAL_TYPE = "billing_error"
DEFAULT_HOLD_S = 900.0
"""A hold outlives any response the proxy still streams (upstream reads time out at 600 s)."""
SETTLE_RETRY_S = (0.05, 0.2, 0.5, 1.0, 2.0, 5.0)
REFRESH_S = 10.0
"""How often the budget gauges reread every team's counters (other replicas spend too)."""
WARN_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class Refusal:
    team: str
    reason: str
    """over_budget, store_unavailable or unpriced_model (metric_names)."""
    message: str


@dataclass(slots=True)
class Hold:
    """One request's reservation; settle it exactly once, when its response is over."""

    gate: BudgetGate
    id: str
    team: str
    model: str
    counters: tuple[Counter, ...]
    amount: int
    allowance: int
    checked: bool = True
    """False when the store was down and fail_open let the request through unchecked."""
    settled: bool = field(default=False)

    def settle(self, exchange: ProxiedExchange) -> None:
        if self.settled:
            return
        self.settled = True
        try:
            actual = self.gate.actual_cost(self, exchange)
        except Exception:  # never lose the charge: the hold is what the call may have cost
            log.exception("pricing a proxied response failed; charging its reservation")
            actual = self.amount
        self.gate.settle(self, actual)


class BudgetGate:
    def __init__(
        self,
        ledger: Ledger,
        prices: PriceTable,
        budgets: Mapping[str, tuple[Limit, ...]],
        *,
        fail_open: bool = False,
        reserve_output_tokens: int = DEFAULT_RESERVE_OUTPUT_TOKENS,
        hold_s: float = DEFAULT_HOLD_S,
        clock: Callable[[], float] = time.time,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.ledger = ledger
        self.prices = prices
        self.budgets = dict(budgets)
        self.fail_open = fail_open
        self.reserve_output_tokens = reserve_output_tokens
        self.hold_s = hold_s
        self.clock = clock
        self._metrics = metrics or GatewayMetrics()
        self._tasks: set[asyncio.Task[None]] = set()
        self._counters: dict[tuple[Any, ...], tuple[Counter, ...]] = {}
        self._standings: dict[str, tuple[Counter, Standing]] = {}
        self._warned = 0.0
        self._refresher: asyncio.Task[None] | None = None
        self._metrics.observe_budgets(self.rows)

    # --- the request path -----------------------------------------------------------------
    def counters(
        self, team: str, limits: tuple[Limit, ...], model: str | None
    ) -> tuple[Counter, ...]:
        """The team's counters that apply to `model` (None: all), in the current windows."""
        # Windows start and end on a UTC minute, so counters built once a minute are exact.
        minute = int(self.clock() // 60)
        key = (team, limits, model, minute)
        found = self._counters.get(key)
        if found is None:
            if len(self._counters) > 4096:
                self._counters.clear()
            found = self._counters[key] = tuple(
                Counter(team, limit, window_of(limit.per, minute * 60.0))
                for limit in limits
                if model is None or limit.applies_to(model)
            )
        return found

    async def reserve(
        self, caller: Caller, body: bytes, *, compressed: bool, size: int | None = None
    ) -> Hold | Refusal | None:
        """A hold for this request, a refusal, or None when the caller has no budget. `body`
        may be the head of a body of `size` bytes (the model and max_tokens come first)."""
        if not caller.budget:
            return None
        model = request_model(body)
        counters = self.counters(caller.name, caller.budget, model)
        if not counters:
            return None
        price = self.prices.price_for(model)
        if price is None:
            return self._refuse(caller.name, M.UNPRICED_MODEL, (
                f"agent-gateway: team {caller.name} has a budget, and model {model or '(none)'!r}"
                " has no price in the gateway's price table, so its cost cannot be counted; "
                "the request is refused"
            ))
        amount, allowance = reservation(
            price, body, compressed=compressed, reserve_output_tokens=self.reserve_output_tokens,
            size=size,
        )
        hold = Hold(self, uuid.uuid4().hex, caller.name, model, counters, amount, allowance)
        try:
            verdict = await self._reserve(hold)
        except StoreUnavailable as exc:
            return self._store_down(hold, exc)
        if verdict.blocked is not None:
            self._standings[verdict.blocked.key] = (verdict.blocked, verdict.standing)
            return self._refuse(caller.name, M.OVER_BUDGET, over_budget_message(
                caller.name, verdict.blocked, verdict.standing, amount
            ))
        return hold

    async def _reserve(self, hold: Hold) -> Verdict:
        """One retry: a timed-out reservation may have been taken, and taking it again with
        the same id is a no-op, so the retry cannot hold twice."""
        for attempt in (0, 1):
            try:
                return await self.ledger.reserve(
                    hold.id, hold.counters, hold.amount, self.clock(), self.hold_s
                )
            except StoreUnavailable:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _store_down(self, hold: Hold, exc: StoreUnavailable) -> Hold | Refusal:
        self.settle(hold, 0)  # a reservation that timed out may stand: release it
        if self.fail_open:
            self._metrics.budget_unenforced(hold.team)
            now = time.monotonic()
            if now - self._warned >= WARN_EVERY_S:
                self._warned = now
                log.warning(
                    "budget store unreachable (%s): forwarding team %s's model call without a "
                    "budget check (fail_open); its spend is counted once the store is back",
                    exc, hold.team,
                )
            unchecked = Hold(self, uuid.uuid4().hex, hold.team, hold.model, hold.counters,
                             hold.amount, hold.allowance, checked=False)
            return unchecked
        return self._refuse(hold.team, M.STORE_UNAVAILABLE, (
            f"agent-gateway: team {hold.team}'s budget cannot be checked: the budget store "
            f"did not answer ({exc}). Model calls are refused until it is back (fail_closed)"
        ))

    def _refuse(self, team: str, reason: str, message: str) -> Refusal:
        self._metrics.budget_refused(team, reason)
        return Refusal(team, reason, message)

    async def check(self, caller: Caller, model: str | None = None) -> Refusal | None:
        """Before a remote run starts: a refusal when a counter that applies is used up."""
        counters = self.counters(caller.name, caller.budget, model)
        if not counters:
            return None
        try:
            standings = await self.ledger.standings(counters, self.clock())
        except StoreUnavailable as exc:
            if self.fail_open:
                self._metrics.budget_unenforced(caller.name)
                log.warning("budget store unreachable (%s): run of team %s not checked "
                            "(fail_open)", exc, caller.name)
                return None
            return self._refuse(caller.name, M.STORE_UNAVAILABLE, (
                f"agent-gateway: team {caller.name}'s budget cannot be checked: the budget "
                f"store did not answer ({exc}); runs are refused until it is back (fail_closed)"
            ))
        for counter, standing in zip(counters, standings, strict=True):
            self._standings[counter.key] = (counter, standing)
            if standing.remaining(counter.budget) <= 0:
                return self._refuse(caller.name, M.OVER_BUDGET, over_budget_message(
                    caller.name, counter, standing, 0
                ))
        return None

    # --- after the response ---------------------------------------------------------------
    def actual_cost(self, hold: Hold, exchange: ProxiedExchange) -> int:
        """The response priced (nano-dollars). Its usage comes from the stream (exact); a
        stream cut before its final usage is charged the output allowance; a failure before
        the response began costs nothing; a success the tap could not read costs the hold."""
        acc = exchange.response()
        if not acc.saw_start:
            return hold.amount if 200 <= exchange.status < 300 else 0
        usage = acc.usage if acc.exact else with_output_at_least(acc.usage, hold.allowance)
        cost = self.prices.cost_nanos(acc.model or hold.model, usage)
        if cost is None:  # answered by a model without a price: priced as the one asked for
            cost = self.prices.cost_nanos(hold.model, usage)
        return cost if cost is not None else hold.amount

    def settle(self, hold: Hold, actual: int) -> None:
        """Replace the hold by `actual`, off the request path (retried until the store answers
        or the hold would have expired anyway)."""
        task = asyncio.get_running_loop().create_task(self._settle(hold, actual))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _settle(self, hold: Hold, actual: int) -> None:
        deadline = time.monotonic() + self.hold_s
        for pause in (*SETTLE_RETRY_S, *([SETTLE_RETRY_S[-1]] * 10_000)):
            try:
                standings = await self.ledger.settle(hold.id, hold.counters, actual, self.clock())
            except StoreUnavailable as exc:
                if time.monotonic() + pause > deadline:
                    log.error("budget store unreachable (%s): %s of team %s's spend was not "
                              "counted", exc, usd(actual), hold.team)
                    return
                await asyncio.sleep(pause)
                continue
            for counter, standing in zip(hold.counters, standings, strict=True):
                self._standings[counter.key] = (counter, standing)
            return

    async def _refresh(self, counters: Sequence[Counter]) -> None:
        try:
            standings = await self.ledger.standings(counters, self.clock())
        except StoreUnavailable:
            return
        for counter, standing in zip(counters, standings, strict=True):
            self._standings[counter.key] = (counter, standing)

    # --- gauges and lifecycle -------------------------------------------------------------
    def rows(self) -> list[BudgetRow]:
        """The budget gauges: each team's counters of the current windows, as last read."""
        current = {c.key for team, limits in self.budgets.items()
                   for c in self.counters(team, limits, None)}
        return [
            (counter.team, counter.limit.per, counter.limit.model or "",
             standing.remaining(counter.budget) / NANOS_PER_USD, counter.budget / NANOS_PER_USD)
            for key, (counter, standing) in list(self._standings.items())
            if key in current
        ]

    async def start(self) -> None:
        if self.budgets:
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while True:
            await self._refresh([c for team, limits in self.budgets.items()
                                 for c in self.counters(team, limits, None)])
            await asyncio.sleep(REFRESH_S)

    async def close(self, timeout_s: float = 5.0) -> None:
        """Let pending settles finish (bounded), then close the store."""
        if self._refresher is not None:
            self._refresher.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)
        await self.ledger.close()

    @property
    def pending(self) -> int:
        return len(self._tasks)
