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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from gateway.budgets.enforcer import BudgetEnforcer, gauge_row, store_down_message, used_up
from gateway.budgets.ledger import Counter, Standing, StoreUnavailable
from gateway.budgets.limits import Limit
from gateway.budgets.local import SpanFileLedger, chat_model, chat_usage
from gateway.budgets.report import SpendRow, Standings, spend_rows
from gateway.env import TOKEN_ENV, gateway_home, gateway_token, redis_url, tokens_files
from gateway.errors import ConfigError, GatewayError
from gateway.telemetry import attributes as A
from gateway.telemetry.metrics import BudgetRow
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import NANOS_PER_USD, load_price_table
from gateway.telemetry.spanfile import span_file_path

if TYPE_CHECKING:
    from gateway.runner.options import AnyOptions

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
    """The team budget a run is checked against (and, with Redis, charged to): the budget
    enforcer (budgets/enforcer.py) asked once before the run and once after it."""

    team: str
    limits: tuple[Limit, ...]
    enforcer: BudgetEnforcer
    owns_store: bool = True
    """False for a remote run: the enforcer is serve's."""
    charges: bool = True
    """False when the counters are read from the local span file: its spans are the run's
    record, so there is nothing to add."""
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

            return cls(team, limits, BudgetEnforcer(RedisLedger(shared), prices))
        from gateway.env import otel_env
        from gateway.telemetry.export import export_settings

        if export_settings(otel_env(), gateway_home()).span_file is None:
            raise ConfigError(
                f"team {team}'s budget is counted from the local span file, and "
                "OTEL_TRACES_EXPORTER sends the spans elsewhere: unset it, or set "
                "AGENT_GATEWAY_REDIS_URL to count the team's spend in Redis"
            )
        ledger = SpanFileLedger(span_file_path(gateway_home()), prices)
        return cls(team, limits, BudgetEnforcer(ledger, prices), charges=False)

    async def left(self, model: str | None) -> tuple[int | None, str]:
        """Nano-dollars left on the tightest counter (None: no limit applies to `model`), and
        the refusal when none is."""
        try:
            self._read = await self.enforcer.read(self.team, self.limits, model)
        except StoreUnavailable as exc:
            return 0, store_down_message(self.team, exc, "; the run is not started")
        refusal = used_up(self.team, self._read)
        if refusal is not None:
            return 0, refusal.message
        return min((s.remaining(c.budget) for c, s in self._read), default=None), ""

    def observe(self, specs: Sequence[SpanSpec]) -> None:
        """Chat spans as the run emits them: their priced cost is what the run is charged."""
        for spec in specs:
            if spec.attributes.get(A.GEN_AI_OPERATION_NAME) != A.OP_CHAT:
                continue
            usage = chat_usage(spec.attributes)
            if usage is None:
                continue
            model = chat_model(spec.attributes)
            cost = self.enforcer.prices.cost_nanos(model, usage)
            if cost is not None:
                self.charged[model] = self.charged.get(model, 0) + cost

    def rows(self) -> list[BudgetRow]:
        """The budget gauges at the end of the run: what was left, less what it spent."""
        return [
            gauge_row(counter, standing.remaining(counter.budget) - sum(
                n for model, n in self.charged.items()
                if self.enforcer.applies(counter.limit, model)))
            for counter, standing in self._read
        ]

    async def charge(self) -> None:
        """Add the run's cost to the counters (not to the span file: it records the run)."""
        try:
            if self.charges:
                await self.enforcer.charge(self.team, self.limits, self.charged)
        finally:
            await self.close()

    async def close(self) -> None:
        if self.owns_store:
            await self.enforcer.close()


async def admit(budget: RunBudget, options: AnyOptions, err: TextIO) -> AnyOptions:
    """The options to start with: --max-budget-usd at most what the team has left (Claude
    Code stops the run there). BudgetRefused when nothing is left."""
    left, refusal = await budget.left(options.model)
    if refusal:
        await budget.close()
        raise BudgetRefused(refusal)
    if left is None:
        return options
    cap = left / NANOS_PER_USD
    asked = options.max_budget_usd
    if asked is not None and asked <= cap:
        return options
    if asked is not None:
        err.write(f"agent-gateway: --max-budget-usd {asked} is more than team {budget.team} "
                  f"has left; using {cap:.6f}\n")
    return dataclasses.replace(options, max_budget_usd=cap)
