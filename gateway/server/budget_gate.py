"""Team budgets at the proxy: the budget enforcer (budgets/enforcer.py) asked by caller and
exchange. A budgeted caller's request gets a hold before it is forwarded (or a refusal), and
the hold is settled with the exchange once the response is over; a remote run is checked
before it starts.

Refusals are 402 `billing_error`: measured on Claude Code 2.1.332, it gives up on that at
once (one request) and shows `API Error: 402 <message>`; a 403 is shown behind "Failed to
authenticate.", a 429 is retried for minutes and a 400 six times.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gateway.budgets.enforcer import BudgetEnforcer, Hold, Refusal
from gateway.budgets.request import CallShape
from gateway.server.proxy import ProxiedExchange
from gateway.tenancy.tokens import Caller

log = logging.getLogger("gateway.server.budgets")

REFUSAL_STATUS = 402
REFUSAL_TYPE = "billing_error"


@dataclass(slots=True)
class CallHold:
    """A model call's hold, settled with its exchange (proxy.Settles)."""

    gate: BudgetEnforcer
    hold: Hold

    def settle(self, exchange: ProxiedExchange) -> None:
        if self.hold.settled:
            return
        try:
            actual = self.gate.actual_cost(self.hold, exchange.status, exchange.response())
        except Exception:  # never lose the charge: the ceiling is the most it could cost
            log.exception("pricing a proxied response failed; charging the most it can cost")
            actual = self.hold.ceiling
        exchange.charged_nanos = actual
        self.gate.settle(self.hold, actual)


class BudgetGate(BudgetEnforcer):
    """The enforcer of `serve`: its callers' teams and limits come from the tokens file."""

    async def hold_call(self, caller: Caller, shape: CallShape) -> CallHold | Refusal | None:
        """A hold for this request, a refusal, or None when the caller has no budget for its
        model."""
        if not caller.budget:
            return None
        outcome = await self.reserve(caller.name, caller.budget, shape)
        return CallHold(self, outcome) if isinstance(outcome, Hold) else outcome

    async def check_run(self, caller: Caller, model: str | None = None) -> Refusal | None:
        """Before a remote run starts: a refusal when a counter that applies is used up."""
        return await self.check(caller.name, caller.budget, model)
