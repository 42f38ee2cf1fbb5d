"""What `agent-gateway spend` prints: each team's counters of the current windows."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from gateway.budgets.ledger import Counter, Standing
from gateway.budgets.limits import PERIODS, Limit, usd, window_of
from gateway.telemetry.pricing import NANOS_PER_USD

UNLIMITED = 0
"""A row without a budget (local spend with no team budget configured)."""


class Standings(Protocol):
    location: str

    async def standings(self, counters: Sequence[Counter], now: float) -> list[Standing]: ...


@dataclass(frozen=True, slots=True)
class SpendRow:
    counter: Counter
    standing: Standing

    @property
    def budgeted(self) -> bool:
        return self.counter.budget != UNLIMITED

    def as_json(self) -> dict[str, object]:
        c, s = self.counter, self.standing
        out: dict[str, object] = {
            "team": c.team,
            "per": c.limit.per,
            "model": c.limit.model,
            "window_start": c.window.start.isoformat(),
            "window_end": c.window.end.isoformat(),
            "spent_usd": s.committed / NANOS_PER_USD,
            "held_usd": s.held / NANOS_PER_USD,
            "spent_nanos": s.committed,
            "held_nanos": s.held,
        }
        if self.budgeted:
            out["budget_usd"] = c.budget / NANOS_PER_USD
            out["remaining_usd"] = s.remaining(c.budget) / NANOS_PER_USD
        return out


def counters_for(budgets: Mapping[str, Sequence[Limit]], now: float) -> list[Counter]:
    """Every limit's counter; a team with no limits gets one row per period, unbudgeted."""
    counters: list[Counter] = []
    for team, limits in budgets.items():
        shown = limits or [Limit(UNLIMITED, per) for per in PERIODS]
        counters += [Counter(team, limit, window_of(limit.per, now)) for limit in shown]
    return counters


async def spend_rows(
    store: Standings, budgets: Mapping[str, Sequence[Limit]], now: float
) -> list[SpendRow]:
    counters = counters_for(budgets, now)
    standings = await store.standings(counters, now)
    return [SpendRow(c, s) for c, s in zip(counters, standings, strict=True)]


HEADERS = ("TEAM", "WINDOW", "MODEL", "SPENT", "HELD", "BUDGET", "REMAINING", "RESETS")


def write_table(rows: Sequence[SpendRow], out: TextIO) -> None:
    table = [HEADERS]
    for row in rows:
        c, s = row.counter, row.standing
        table.append((
            c.team,
            f"{c.limit.per} {c.window.label}",
            c.limit.model or "all",
            usd(s.committed),
            usd(s.held),
            usd(c.budget) if row.budgeted else "-",
            usd(s.remaining(c.budget)) if row.budgeted else "-",
            c.window.resets(),
        ))
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    for r in table:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
        out.write("\n")


def write_json(rows: Sequence[SpendRow], out: TextIO) -> None:
    for row in rows:
        out.write(json.dumps(row.as_json()) + "\n")
