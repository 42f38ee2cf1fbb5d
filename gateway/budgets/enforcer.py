"""The budget decision, whichever shell asks: which of a team's counters a call counts on, a
refusal when one is used up, a hold before a model call, the settle after it, a run's charge,
and the leases that keep the holds of calls in flight alive.

The proxy (server/budget_gate.py) asks per request: `reserve` takes a hold of the most the
request can cost (budgets/estimate.py) on each counter that applies to the model the API will
bill, atomically, or refuses it before any upstream call; `settle` replaces the hold by the
priced actual (`actual_cost`) once the response has ended, failed or been cut off, off the
request path and retried until the store answers (settling is idempotent). A run
(runner/budget.py, remote runs of `serve`) asks per run: `read` before it starts (a used-up
counter refuses it, what is left caps it), `charge` with its priced cost when it ends, without
a hold.

Holds are leases (budgets/ledger.py): the heartbeat renews the holds of this replica's calls
in flight every third of a lease, so a hold lives as long as its call; the holds of a replica
that died are charged, at the amount held, by whichever replica reads the counters next (each
one rereads every team's counters at least once a lease).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
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
from gateway.telemetry import metric_names as M
from gateway.telemetry.chat import ChatAccumulator
from gateway.telemetry.metrics import BudgetRow, GatewayMetrics
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable

log = logging.getLogger("gateway.budgets")

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
    reason: str
    """over_budget, store_unavailable or unpriced_model (metric_names)."""
    message: str
    """Names the team, the budget and when it resets (callers show it as written)."""


@dataclass(slots=True)
class Hold:
    """One call's reservation; settled exactly once, when its response is over."""

    id: str
    team: str
    model: str
    """The model the API bills (the price table's name for it)."""
    counters: tuple[Counter, ...]
    amount: int
    ceiling: int
    """The most the call can cost (what a response that cannot be read is charged)."""
    max_tokens: int
    settled: bool = field(default=False)


def store_down_message(team: str, exc: StoreUnavailable, consequence: str) -> str:
    return (f"agent-gateway: team {team}'s budget cannot be checked: the budget store did not "
            f"answer ({exc}){consequence}")


def used_up(team: str, read: Sequence[tuple[Counter, Standing]]) -> Refusal | None:
    """The refusal when one of the counters read has nothing left."""
    for counter, standing in read:
        if standing.remaining(counter.budget) <= 0:
            return Refusal(M.OVER_BUDGET, over_budget_message(team, counter, standing, 0))
    return None


def gauge_row(counter: Counter, remaining: int) -> BudgetRow:
    return (counter.team, counter.limit.per, counter.limit.model or "",
            remaining / NANOS_PER_USD, counter.budget / NANOS_PER_USD)


class BudgetEnforcer:
    """Team budgets over one ledger: every shell's holds, settles, charges and refusals."""

    def __init__(
        self,
        ledger: Ledger,
        prices: PriceTable,
        budgets: Mapping[str, tuple[Limit, ...]] | None = None,
        *,
        fail_open: bool = False,
        reserve_output_tokens: int | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Callable[[], float] = time.time,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        """`budgets`: the teams whose counters the gauges show and the refresher rereads
        (every team of the tokens file); `fail_open`: a store that does not answer lets
        calls and runs through unchecked (counted, logged) instead of refusing them."""
        self.ledger = ledger
        self.prices = prices
        self.budgets = dict(budgets or {})
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
        """Each counter as last read (the gauges)."""
        self._warned = 0.0
        self._refresher: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._live: dict[str, Hold] = {}
        """This replica's holds of calls in flight (renewed by the heartbeat)."""
        self._metrics.observe_budgets(self.rows)

    # --- which counters ---------------------------------------------------------------------
    def applies(self, limit: Limit, model: str) -> bool:
        """A per-model limit counts the model the API bills: a dated id is the same model."""
        return limit.model is None or self.prices.canonical(limit.model) == self.prices.canonical(
            model)

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
                if model is None or self.applies(limit, model)
            )
        return found

    # --- before a run -----------------------------------------------------------------------
    async def read(
        self, team: str, limits: tuple[Limit, ...], model: str | None
    ) -> list[tuple[Counter, Standing]]:
        """The counters that apply to `model` and where each stands (StoreUnavailable)."""
        counters = self.counters(team, limits, model)
        if not counters:
            return []
        standings = await self.ledger.standings(counters, self.clock())
        read = list(zip(counters, standings, strict=True))
        self._remember(read)
        return read

    async def check(
        self, team: str, limits: tuple[Limit, ...], model: str | None
    ) -> Refusal | None:
        """Before a remote run starts: a refusal when a counter that applies is used up."""
        try:
            read = await self.read(team, limits, model)
        except StoreUnavailable as exc:
            if self.fail_open:
                self._metrics.budget_unenforced(team)
                log.warning("budget store unreachable (%s): run of team %s not checked "
                            "(fail_open)", exc, team)
                return None
            return self._refuse(team, Refusal(M.STORE_UNAVAILABLE, store_down_message(
                team, exc, "; runs are refused until it is back (fail_closed)")))
        refusal = used_up(team, read)
        return None if refusal is None else self._refuse(team, refusal)

    async def charge(self, team: str, limits: tuple[Limit, ...], spent: Mapping[str, int]
                     ) -> None:
        """A run's priced cost (nano-dollars per model) added to the counters that apply, as
        a settle of a hold never taken; once: what a store that does not answer misses is
        logged."""
        try:
            for model, nanos in spent.items():
                counters = self.counters(team, limits, model)
                if counters:
                    await self.ledger.settle(uuid.uuid4().hex, counters, nanos, self.clock())
        except StoreUnavailable as exc:
            log.error("team %s: %s of spend not counted: %s", team, usd(sum(spent.values())),
                      exc)

    # --- before a model call ----------------------------------------------------------------
    async def reserve(
        self, team: str, limits: tuple[Limit, ...], shape: CallShape
    ) -> Hold | Refusal | None:
        """A hold for this call (read whole: budgets/request.py), a refusal, or None when no
        limit of the team applies to its model."""
        model = self.prices.canonical(shape.model)
        counters = self.counters(team, limits, model)
        if not counters:
            return None
        price = self.prices.price_for(model)
        if price is None:
            return self._refuse(team, Refusal(M.UNPRICED_MODEL, (
                f"agent-gateway: team {team} has a budget, and model {model!r}"
                " has no price in the gateway's price table, so its cost cannot be counted; "
                "the request is refused"
            )))
        held = reservation(price, shape, reserve_output_tokens=self.reserve_output_tokens)
        hold = Hold(uuid.uuid4().hex, team, model, counters, held.amount, held.ceiling,
                    held.max_tokens)
        self._live[hold.id] = hold  # renewed from now on: the reservation may take a while
        try:
            verdict = await self._reserve(hold)
        except StoreUnavailable as exc:
            self._live.pop(hold.id, None)
            return self._store_down(hold, exc)
        if verdict.blocked is not None:
            self._live.pop(hold.id, None)
            self._remember([(verdict.blocked, verdict.standing)])
            return self._refuse(team, Refusal(M.OVER_BUDGET, over_budget_message(
                team, verdict.blocked, verdict.standing, held.amount
            )))
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
        if not self.fail_open:
            return self._refuse(hold.team, Refusal(M.STORE_UNAVAILABLE, store_down_message(
                hold.team, exc, ". Model calls are refused until it is back (fail_closed)")))
        self._metrics.budget_unenforced(hold.team)
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY_S:
            self._warned = now
            log.warning(
                "budget store unreachable (%s): forwarding team %s's model call without a "
                "budget check (fail_open); its spend is counted once the store is back",
                exc, hold.team,
            )
        # A hold never taken: its settle adds what the call cost.
        return Hold(uuid.uuid4().hex, hold.team, hold.model, hold.counters, hold.amount,
                    hold.ceiling, hold.max_tokens)

    def _refuse(self, team: str, refusal: Refusal) -> Refusal:
        self._metrics.budget_refused(team, refusal.reason)
        return refusal

    # --- after the response -----------------------------------------------------------------
    def actual_cost(self, hold: Hold, status: int, response: ChatAccumulator) -> int:
        """The response priced (nano-dollars), never less than the API billed. Its usage comes
        from the stream or the body (exact); a stream cut before its final usage is charged its
        input and all of max_tokens; a failure before the response began costs nothing; a
        success whose usage could not be read costs the most the call can."""
        if not response.saw_start:
            return hold.ceiling if 200 <= status < 300 else 0
        usage = (response.usage if response.exact
                 else with_output_at_least(response.usage, hold.max_tokens))
        answered = self.prices.canonical(response.model) if response.model else hold.model
        cost = self.prices.cost_nanos(answered, usage)
        if cost is None:  # answered by a model without a price: priced as the one asked for
            cost = self.prices.cost_nanos(hold.model, usage)
        return cost if cost is not None else hold.ceiling

    def settle(self, hold: Hold, actual: int) -> None:
        """Replace the hold by `actual`, off the request path (retried until the store answers
        or SETTLE_GIVE_UP_S has passed). Once per hold: a second settle does nothing."""
        if hold.settled:
            return
        hold.settled = True
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
                self._remember(zip(hold.counters, standings, strict=True))
                return
        finally:
            self._live.pop(hold.id, None)

    # --- leases and gauges ------------------------------------------------------------------
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

    async def _refresh_forever(self) -> None:
        while True:
            counters = [c for team, limits in self.budgets.items()
                        for c in self.counters(team, limits, None)]
            try:
                standings = await self.ledger.standings(counters, self.clock())
            except StoreUnavailable:
                pass
            else:
                self._remember(zip(counters, standings, strict=True))
            await asyncio.sleep(min(REFRESH_S, self.lease_s))

    def _remember(self, read: Iterable[tuple[Counter, Standing]]) -> None:
        for counter, standing in read:
            self._standings[counter.key] = (counter, standing)

    def rows(self) -> list[BudgetRow]:
        """The budget gauges: each team's counters of the current windows, as last read."""
        current = {c.key for team, limits in self.budgets.items()
                   for c in self.counters(team, limits, None)}
        return [gauge_row(counter, standing.remaining(counter.budget))
                for key, (counter, standing) in list(self._standings.items()) if key in current]

    async def start(self) -> None:
        if self.budgets:
            loop = asyncio.get_running_loop()
            self._refresher = loop.create_task(self._refresh_forever())
            self._heartbeat = loop.create_task(self._renew_forever())

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
