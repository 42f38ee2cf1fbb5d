"""Team budgets at the proxy: reserve before forwarding, settle when the response ends.

`reserve` takes a hold of the most the request can cost (budgets/estimate.py) on each of the
team's counters that apply to the model the API will bill, atomically; a request that does not
fit is refused before any upstream call. `Hold.settle(exchange)` replaces the hold by the
priced actual once the response has ended, failed or been cut off. It runs off the request
path and is retried until the store answers (settling is idempotent).

Holds are leases (budgets/ledger.py): this replica's heartbeat renews the holds of its calls in
flight every third of a lease, so a hold lives as long as its call; the holds of a replica that
died are charged, at the amount held, by whichever replica reads the counters next (each one
rereads every team's counters at least once a lease).

Refusals are 402 `billing_error`: measured on Claude Code 2.1.332, it gives up on that at
once (one request) and shows `API Error: 402 <message>`; a 403 is shown behind "Failed to
authenticate.", a 429 is retried for minutes and a 400 six times.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.budgets.estimate import reservation, with_output_at_least
from gateway.budgets.ledger import (
    Counter,
    Ledger,
    Standing,
    StoreUnavailable,
    Verdict,
    over_budget_message,
)
from gateway.budgets.limits import Limit, usd, window_of
from gateway.budgets.request import CallShape
from gateway.server.proxy import ProxiedExchange
from gateway.telemetry import metric_names as M
from gateway.telemetry.metrics import BudgetRow, GatewayMetrics
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable
from gateway.tenancy.tokens import Caller

log = logging.getLogger("gateway.server.budgets")

REFUSAL_STATUS = 402
REFUSAL_TYPE = "billing_error"
DEFAULT_LEASE_S = 30.0
"""A hold not renewed for this long is its replica's that died: it is charged at its amount."""
SETTLE_RETRY_S = (0.05, 0.2, 0.5, 1.0, 2.0, 5.0)
SETTLE_GIVE_UP_S = 900.0
"""A settle retried this long is given up (logged): the hold's lease has long run out, so the
call was charged its hold; what it cost beyond that, if anything, is the only loss."""
REFRESH_S = 10.0
"""How often the budget gauges reread every team's counters (other replicas spend too); at
least once a lease, which is also when a dead replica's holds are charged."""
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
    """The model the API bills (the price table's name for it)."""
    counters: tuple[Counter, ...]
    amount: int
    ceiling: int
    """The most the call can cost (what a response that cannot be read is charged)."""
    max_tokens: int
    checked: bool = True
    """False when the store was down and fail_open let the request through unchecked."""
    settled: bool = field(default=False)

    def settle(self, exchange: ProxiedExchange) -> None:
        if self.settled:
            return
        self.settled = True
        try:
            actual = self.gate.actual_cost(self, exchange)
        except Exception:  # never lose the charge: the ceiling is the most it could cost
            log.exception("pricing a proxied response failed; charging the most it can cost")
            actual = self.ceiling
        exchange.charged_nanos = actual
        self.gate.settle(self, actual)


class BudgetGate:
    def __init__(
        self,
        ledger: Ledger,
        prices: PriceTable,
        budgets: Mapping[str, tuple[Limit, ...]],
        *,
        fail_open: bool = False,
        reserve_output_tokens: int | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Callable[[], float] = time.time,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.ledger = ledger
        self.prices = prices
        self.budgets = dict(budgets)
        self.fail_open = fail_open
        self.reserve_output_tokens = reserve_output_tokens
        """None (the default): hold all of max_tokens. N: hold min(max_tokens, N) output
        tokens, an opt-in overshoot."""
        self.lease_s = lease_s
        self.clock = clock
        self._metrics = metrics or GatewayMetrics()
        self._tasks: set[asyncio.Task[None]] = set()
        self._counters: dict[tuple[Any, ...], tuple[Counter, ...]] = {}
        self._standings: dict[str, tuple[Counter, Standing]] = {}
        self._warned = 0.0
        self._refresher: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._live: dict[str, Hold] = {}
        """This replica's holds of calls in flight (renewed by the heartbeat)."""
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
                if model is None or limit.model is None
                or self.prices.canonical(limit.model) == model
            )
        return found

    async def reserve(self, caller: Caller, shape: CallShape) -> Hold | Refusal | None:
        """A hold for this request (read whole: budgets/request.py), a refusal, or None when
        the caller has no budget for its model."""
        if not caller.budget:
            return None
        model = self.prices.canonical(shape.model)
        counters = self.counters(caller.name, caller.budget, model)
        if not counters:
            return None
        price = self.prices.price_for(model)
        if price is None:
            return self._refuse(caller.name, M.UNPRICED_MODEL, (
                f"agent-gateway: team {caller.name} has a budget, and model {model!r}"
                " has no price in the gateway's price table, so its cost cannot be counted; "
                "the request is refused"
            ))
        held = reservation(price, shape, reserve_output_tokens=self.reserve_output_tokens)
        hold = Hold(self, uuid.uuid4().hex, caller.name, model, counters, held.amount,
                    held.ceiling, held.max_tokens)
        self._live[hold.id] = hold  # renewed from now on: the reservation may take a while
        try:
            verdict = await self._reserve(hold)
        except StoreUnavailable as exc:
            self._live.pop(hold.id, None)
            return self._store_down(hold, exc)
        if verdict.blocked is not None:
            self._live.pop(hold.id, None)
            self._standings[verdict.blocked.key] = (verdict.blocked, verdict.standing)
            return self._refuse(caller.name, M.OVER_BUDGET, over_budget_message(
                caller.name, verdict.blocked, verdict.standing, held.amount
            ))
        return hold

    async def _reserve(self, hold: Hold) -> Verdict:
        """One retry: a timed-out reservation may have been taken, and taking it again with
        the same id is a no-op, so the retry cannot hold twice."""
        try:
            return await self.ledger.reserve(
                hold.id, hold.counters, hold.amount, self.clock(), self.lease_s)
        except StoreUnavailable:
            return await self.ledger.reserve(
                hold.id, hold.counters, hold.amount, self.clock(), self.lease_s)

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
                             hold.amount, hold.ceiling, hold.max_tokens, checked=False)
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
        counters = self.counters(caller.name, caller.budget,
                                 self.prices.canonical(model) if model else None)
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
        """The response priced (nano-dollars), never less than the API billed. Its usage comes
        from the stream or the body (exact); a stream cut before its final usage is charged its
        input and all of max_tokens; a failure before the response began costs nothing; a
        success whose usage could not be read costs the most the call can."""
        acc = exchange.response()
        if not acc.saw_start:
            return hold.ceiling if 200 <= exchange.status < 300 else 0
        usage = acc.usage if acc.exact else with_output_at_least(acc.usage, hold.max_tokens)
        answered = self.prices.canonical(acc.model) if acc.model else hold.model
        cost = self.prices.cost_nanos(answered, usage)
        if cost is None:  # answered by a model without a price: priced as the one asked for
            cost = self.prices.cost_nanos(hold.model, usage)
        return cost if cost is not None else hold.ceiling

    def settle(self, hold: Hold, actual: int) -> None:
        """Replace the hold by `actual`, off the request path (retried until the store answers
        or SETTLE_GIVE_UP_S has passed)."""
        task = asyncio.get_running_loop().create_task(self._settle(hold, actual))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _settle(self, hold: Hold, actual: int) -> None:
        deadline = time.monotonic() + SETTLE_GIVE_UP_S
        try:
            # the last pause repeats until the deadline ends the retries
            for pause in itertools.chain(SETTLE_RETRY_S, itertools.repeat(SETTLE_RETRY_S[-1])):
                try:
                    standings = await self.ledger.settle(hold.id, hold.counters, actual,
                                                         self.clock())
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
        finally:
            self._live.pop(hold.id, None)

    async def _renew_forever(self) -> None:
        """The heartbeat: every third of a lease, the holds of this replica's calls in flight
        are renewed (one round trip for all of them)."""
        warned = 0.0
        while True:
            await asyncio.sleep(self.lease_s / 3)
            holds = [(h.id, h.counters) for h in list(self._live.values())]
            if not holds:
                continue
            try:
                await self.ledger.renew(holds, self.clock(), self.lease_s)
            except StoreUnavailable as exc:
                if time.monotonic() - warned >= WARN_EVERY_S:
                    warned = time.monotonic()
                    log.warning("budget store unreachable (%s): %d holds not renewed; past "
                                "their lease they are charged at the amount held",
                                exc, len(holds))

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
            loop = asyncio.get_running_loop()
            self._refresher = loop.create_task(self._refresh_forever())
            self._heartbeat = loop.create_task(self._renew_forever())

    async def _refresh_forever(self) -> None:
        while True:
            await self._refresh([c for team, limits in self.budgets.items()
                                 for c in self.counters(team, limits, None)])
            await asyncio.sleep(min(REFRESH_S, self.lease_s))

    async def close(self, timeout_s: float = 5.0) -> None:
        """Let pending settles finish (bounded), then close the store."""
        if self._refresher is not None:
            self._refresher.cancel()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)
        await self.ledger.close()

    @property
    def pending(self) -> int:
        return len(self._tasks)
