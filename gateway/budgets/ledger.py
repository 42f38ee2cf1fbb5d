"""Where budget counters live: the protocol, and the in-process store.

A counter is one limit of one team in one window. It holds committed spend (settled
responses) and open holds (reservations of requests in flight). All amounts are nano-dollars.

Each hold is a lease: it expires unless the replica serving its call renews it (`renew`,
from that replica's heartbeat). A hold whose lease ran out belongs to a replica that died or
lost the store: whoever next reads the counter charges it, at the amount held (the most the
call could cost), and remembers it; if its replica was alive after all, its settle adds what
the call cost beyond the hold, if anything. So a killed replica's calls are charged within a
lease, by the survivors, and never less than they could have cost.

`reserve` is atomic across the counters it names: either every counter takes the hold, or
none does and the verdict names the first that would overflow. `settle` replaces a hold by
the priced actual; it is idempotent per hold id, so a settle retried after a timeout never
charges twice. A settle of a hold never taken (a call forwarded unchecked, a run's cost)
adds the actual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import quote

from gateway.budgets.limits import Limit, Window, usd

KEY_GRACE_S = 86_400
"""Counters outlive their window by a day, then the store drops them."""


@dataclass(frozen=True, slots=True)
class Counter:
    """One limit of one team in its current window."""

    team: str
    limit: Limit
    window: Window
    key: str = field(init=False, compare=False)
    """'{team}:per:model:window-start', the team in braces (a Redis Cluster hash tag: every
    counter of one team sits in one slot, so one script can touch them all)."""

    def __post_init__(self) -> None:
        model = quote(self.limit.model, safe="") if self.limit.model else "*"
        team = quote(self.team, safe="")
        object.__setattr__(self, "key", f"{{{team}}}:{self.limit.per}:{model}:{self.window.label}")

    @property
    def budget(self) -> int:
        return self.limit.nanos

    def ttl_s(self, now: float) -> int:
        return max(1, int(self.window.end.timestamp() - now) + KEY_GRACE_S)


@dataclass(frozen=True, slots=True)
class Standing:
    committed: int = 0
    held: int = 0

    def remaining(self, budget: int) -> int:
        return budget - self.committed - self.held


@dataclass(frozen=True, slots=True)
class Verdict:
    """A reservation's outcome: `blocked` is the counter it would overflow (None: taken)."""

    blocked: Counter | None = None
    standing: Standing = field(default_factory=Standing)

    @property
    def ok(self) -> bool:
        return self.blocked is None


class StoreUnavailable(Exception):
    """The store did not answer (in time): whether a write happened is unknown."""


class Ledger(Protocol):
    location: str
    shared: bool
    """True when every replica sees the same counters."""

    async def reserve(
        self, hold_id: str, counters: Sequence[Counter], amount: int, now: float, lease_s: float
    ) -> Verdict: ...

    async def renew(
        self, holds: Sequence[tuple[str, Sequence[Counter]]], now: float, lease_s: float
    ) -> int:
        """Extends each hold still open to `now + lease_s`; returns how many were."""
        ...

    async def settle(
        self, hold_id: str, counters: Sequence[Counter], actual: int, now: float
    ) -> list[Standing]:
        """Returns each counter's standing afterwards."""
        ...

    async def standings(self, counters: Sequence[Counter], now: float) -> list[Standing]: ...

    async def close(self) -> None: ...


@dataclass
class _Count:
    committed: int = 0
    holds: dict[str, tuple[int, float]] = field(default_factory=dict)
    """hold id -> (amount, expires at)"""
    expired: dict[str, int] = field(default_factory=dict)
    """hold id -> amount charged when its lease ran out"""

    def standing(self, now: float) -> Standing:
        for hold_id, (amount, expires) in list(self.holds.items()):
            if expires <= now:
                del self.holds[hold_id]
                self.expired[hold_id] = amount
                self.committed += amount
        return Standing(self.committed, sum(amount for amount, _ in self.holds.values()))

    def settle(self, hold_id: str, actual: int) -> None:
        if self.holds.pop(hold_id, None) is not None:
            self.committed += actual
        elif hold_id in self.expired:
            self.committed += max(0, actual - self.expired.pop(hold_id))
        else:
            self.committed += actual


class MemoryLedger:
    """Counters in this process: each replica enforces its own budget. Used without Redis
    (`serve` says so at start) and by tests. One event loop: every method is atomic."""

    shared = False

    def __init__(self) -> None:
        self.location = "in process (per replica)"
        self._counts: dict[str, _Count] = {}
        self._settled: dict[str, float] = {}

    async def reserve(
        self, hold_id: str, counters: Sequence[Counter], amount: int, now: float, lease_s: float
    ) -> Verdict:
        self._forget(now)
        counts = [self._counts.setdefault(c.key, _Count()) for c in counters]
        if hold_id in self._settled or all(hold_id in c.holds for c in counts):
            return Verdict()  # a retried reservation: it stands
        for counter, count in zip(counters, counts, strict=True):
            standing = count.standing(now)
            if standing.committed + standing.held + amount > counter.budget:
                return Verdict(counter, standing)
        for count in counts:
            count.holds[hold_id] = (amount, now + lease_s)
        return Verdict()

    async def renew(
        self, holds: Sequence[tuple[str, Sequence[Counter]]], now: float, lease_s: float
    ) -> int:
        renewed = 0
        for hold_id, counters in holds:
            for counter in counters:
                count = self._counts.get(counter.key)
                if count is None:
                    continue
                count.standing(now)
                if hold_id in count.holds:
                    count.holds[hold_id] = (count.holds[hold_id][0], now + lease_s)
                    renewed += 1
        return renewed

    async def settle(
        self, hold_id: str, counters: Sequence[Counter], actual: int, now: float
    ) -> list[Standing]:
        first = hold_id not in self._settled
        self._settled.setdefault(hold_id, now + KEY_GRACE_S)
        counts = [self._counts.setdefault(c.key, _Count()) for c in counters]
        for count in counts if first else ():
            count.settle(hold_id, actual)
        return [count.standing(now) for count in counts]

    async def standings(self, counters: Sequence[Counter], now: float) -> list[Standing]:
        return [
            self._counts[c.key].standing(now) if c.key in self._counts else Standing()
            for c in counters
        ]

    async def close(self) -> None:
        return None

    def _forget(self, now: float) -> None:
        """Drop counters of windows long gone, and old settle marks."""
        if len(self._settled) > 100_000:
            self._settled = {k: t for k, t in self._settled.items() if t > now}
        stale = [k for k, c in self._counts.items()
                 if not c.holds and not c.expired and c.committed == 0]
        for key in stale[:1000]:
            del self._counts[key]


def over_budget_message(team: str, counter: Counter, standing: Standing, needs: int) -> str:
    """Names the team, the budget and when it resets (Claude Code shows it as written)."""
    held = f", {usd(standing.held)} held by calls in flight" if standing.held else ""
    left = standing.remaining(counter.budget)
    if left <= 0 or not needs:
        state = f"is over its budget of {counter.limit.describe()}"
    else:
        state = (f"has {usd(left)} left of its budget of {counter.limit.describe()}, and this "
                 f"call may cost up to {usd(needs)}")
    return (
        f"agent-gateway: team {team} {state} ({usd(standing.committed)} spent{held}). "
        f"The budget resets at {counter.window.resets()}."
    )
