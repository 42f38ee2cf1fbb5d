"""A team budget for `agent-gateway run`, and where `agent-gateway spend` reads spend.

A run belongs to a team when AGENT_GATEWAY_TOKENS_FILE and AGENT_GATEWAY_TOKEN name a tokens
file entry with a `budget:`. Before the run starts, its counters are checked: those in Redis
(AGENT_GATEWAY_REDIS_URL, the same counters every `serve` replica enforces) or, without
Redis, the spend the local span file records. A team over budget does not start; otherwise
--max-budget-usd is capped at what is left. With Redis, the run's priced cost is added to
the counters when it ends (the span file is its own record).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from gateway.budgets.ledger import Counter, Standing, StoreUnavailable, over_budget_message
from gateway.budgets.limits import Limit, usd, window_of
from gateway.budgets.local import SpanFileLedger, chat_model, chat_usage
from gateway.budgets.report import SpendRow, Standings, spend_rows
from gateway.env import TOKEN_ENV, gateway_home, gateway_token, redis_url, tokens_files
from gateway.errors import ConfigError, GatewayError
from gateway.telemetry import attributes as A
from gateway.telemetry.metrics import BudgetRow
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import NANOS_PER_USD, PriceTable, load_price_table
from gateway.telemetry.spanfile import span_file_path

if TYPE_CHECKING:
    from gateway.runner.options import AnyOptions

log = logging.getLogger("gateway.runner.budget")


class BudgetRefused(GatewayError):
    """The team's budget is used up (or cannot be checked): the run does not start."""

    exit_code = 1
LOCAL_TEAM = "local"


def run_team(tokens_file: str | None) -> tuple[str, tuple[Limit, ...]]:
    """The team this machine's runs belong to (its token's entry), or `local`."""
    token = (gateway_token() or "").strip()
    if not tokens_file or not token:
        return LOCAL_TEAM, ()
    from gateway.tenancy.tokens import load_tokens

    caller = load_tokens(None, tokens_file).lookup(token)
    if caller is None:
        raise ConfigError(f"{TOKEN_ENV} is not one of the tokens in {tokens_file}")
    return caller.name, caller.budget


@dataclass
class SpendSource:
    store: Standings
    budgets: dict[str, tuple[Limit, ...]]

    async def rows(self, budgets: Mapping[str, Sequence[Limit]], now: float) -> list[SpendRow]:
        try:
            return await spend_rows(self.store, budgets, now)
        finally:
            close = getattr(self.store, "close", None)
            if close is not None:
                await close()


def spend_source(
    redis: str | None, tokens_file: str | None
) -> tuple[SpendSource, dict[str, tuple[Limit, ...]]]:
    """Redis and the tokens file's teams, or the local span file and this machine's team."""
    redis = redis or redis_url()
    tokens_file = tokens_file or next(iter(tokens_files()), None)
    if redis:
        if not tokens_file:
            raise ConfigError(
                "the shared counters are per team: give the tokens file that sets the "
                "budgets (--tokens-file or AGENT_GATEWAY_TOKENS_FILE)"
            )
        from gateway.budgets.redis_ledger import RedisLedger
        from gateway.tenancy.tokens import read_budgets

        budgets = read_budgets(tokens_file)
        return SpendSource(RedisLedger(redis), budgets), budgets
    team, limits = run_team(tokens_file)
    ledger = SpanFileLedger(span_file_path(gateway_home()), load_price_table())
    budgets = {team: limits}
    return SpendSource(ledger, budgets), budgets


@dataclass
class RunBudget:
    """The team budget a run is checked against (and, with Redis, charged to)."""

    team: str
    limits: tuple[Limit, ...]
    store: Any
    prices: PriceTable
    owns_store: bool = True
    charged: dict[str, int] = field(default_factory=dict)
    """Nano-dollars per model (a per-model limit counts only its own)."""
    _read: list[tuple[Counter, Standing]] = field(default_factory=list)

    @classmethod
    def from_env(cls) -> RunBudget | None:
        team, limits = run_team(next(iter(tokens_files()), None))
        if not limits:
            return None
        prices = load_price_table()
        shared = redis_url()
        if shared:
            from gateway.budgets.redis_ledger import RedisLedger

            return cls(team, limits, RedisLedger(shared), prices)
        from gateway.env import otel_env
        from gateway.telemetry.export import export_settings

        if export_settings(otel_env(), gateway_home()).span_file is None:
            raise ConfigError(
                f"team {team}'s budget is counted from the local span file, and "
                "OTEL_TRACES_EXPORTER sends the spans elsewhere: unset it, or set "
                "AGENT_GATEWAY_REDIS_URL to count the team's spend in Redis"
            )
        return cls(team, limits, SpanFileLedger(span_file_path(gateway_home()), prices), prices)

    def counters(self, model: str | None) -> list[Counter]:
        now = time.time()
        return [Counter(self.team, limit, window_of(limit.per, now)) for limit in self.limits
                if model is None or limit.applies_to(model)]

    async def left(self, model: str | None) -> tuple[int, str]:
        """Nano-dollars left on the tightest counter, and the refusal when none is."""

        counters = self.counters(model)
        try:
            standings = await self.store.standings(counters, time.time())
        except StoreUnavailable as exc:
            return 0, (f"agent-gateway: team {self.team}'s budget cannot be checked: the budget "
                       f"store did not answer ({exc}); the run is not started")
        self._read = list(zip(counters, standings, strict=True))
        tightest = min(s.remaining(c.budget) for c, s in self._read)
        for counter, standing in zip(counters, standings, strict=True):
            if standing.remaining(counter.budget) <= 0:
                return 0, over_budget_message(self.team, counter, standing, 0)
        return tightest, ""

    def observe(self, specs: Sequence[SpanSpec]) -> None:
        """Chat spans as the run emits them: their priced cost is what the run is charged."""
        for spec in specs:
            if spec.attributes.get(A.GEN_AI_OPERATION_NAME) != A.OP_CHAT:
                continue
            usage = chat_usage(spec.attributes)
            if usage is None:
                continue
            model = chat_model(spec.attributes)
            cost = self.prices.cost_nanos(model, usage)
            if cost is not None:
                self.charged[model] = self.charged.get(model, 0) + cost

    def rows(self) -> list[BudgetRow]:
        """The budget gauges at the end of the run: what was left, less what it spent."""
        rows: list[BudgetRow] = []
        for counter, standing in self._read:
            spent = sum(n for model, n in self.charged.items() if counter.limit.applies_to(model))
            left = standing.remaining(counter.budget) - spent
            rows.append((self.team, counter.limit.per, counter.limit.model or "",
                         left / NANOS_PER_USD, counter.budget / NANOS_PER_USD))
        return rows

    async def charge(self) -> None:
        """Add the run's cost to the counters (not to the span file: it records the run)."""
        try:
            if hasattr(self.store, "settle"):
                for model, nanos in self.charged.items():
                    counters = self.counters(model)
                    if counters:
                        await self.store.settle(uuid.uuid4().hex, counters, nanos, time.time())
        except StoreUnavailable as exc:
            spent = usd(sum(self.charged.values()))
            log.error("team %s: %s of spend not counted: %s", self.team, spent, exc)
        finally:
            await self.close()

    async def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None and self.owns_store:
            await close()


async def admit(budget: RunBudget, options: AnyOptions, err: TextIO) -> AnyOptions:
    """The options to start with: --max-budget-usd at most what the team has left (Claude
    Code stops the run there). BudgetRefused when nothing is left."""
    left, refusal = await budget.left(options.model)
    if refusal:
        await budget.close()
        raise BudgetRefused(refusal)
    cap = left / NANOS_PER_USD
    asked = options.max_budget_usd
    if asked is not None and asked <= cap:
        return options
    if asked is not None:
        err.write(f"agent-gateway: --max-budget-usd {asked} is more than team {budget.team} "
                  f"has left; using {cap:.6f}\n")
    return dataclasses.replace(options, max_budget_usd=cap)
