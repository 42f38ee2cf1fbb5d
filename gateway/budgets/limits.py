"""Budget limits from the tokens file and their UTC calendar windows: pure.

```yaml
budget: {usd: 50, per: day}                       # the team's spend, any model
budget:                                           # or several limits, each optionally per model
  - {usd: 500, per: month}
  - {usd: 20, per: day, model: claude-opus-5-5}
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from gateway.errors import ConfigError
from gateway.telemetry.pricing import NANOS_PER_USD

Period = Literal["day", "week", "month"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")
MAX_USD = 1_000_000
"""Counters stay exact integers well past this (Redis scripts count in doubles: 2**53 nanos)."""
KEYS = frozenset({"usd", "per", "model"})


@dataclass(frozen=True, slots=True)
class Limit:
    nanos: int
    per: Period
    model: str | None = None

    @property
    def usd(self) -> float:
        return self.nanos / NANOS_PER_USD

    def applies_to(self, model: str) -> bool:
        return self.model is None or self.model == model

    def describe(self) -> str:
        """'$50.00 a day', '$20.00 a day for claude-opus-5-5'."""
        scope = f" for {self.model}" if self.model else ""
        return f"{usd(self.nanos)} a {self.per}{scope}"


@dataclass(frozen=True, slots=True)
class Window:
    """[start, end) in UTC."""

    per: Period
    start: datetime
    end: datetime

    @property
    def label(self) -> str:
        return self.start.strftime("%Y-%m-%d")

    def resets(self) -> str:
        return self.end.strftime("%Y-%m-%d %H:%M UTC")


def window_of(per: Period, now: float) -> Window:
    """The calendar window holding `now` (seconds since the epoch): a UTC day, an ISO week
    (Monday to Monday) or a month."""
    moment = datetime.fromtimestamp(now, UTC)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if per == "day":
        return Window(per, day, day + timedelta(days=1))
    if per == "week":
        start = day - timedelta(days=day.weekday())
        return Window(per, start, start + timedelta(days=7))
    start = day.replace(day=1)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(
        month=start.month + 1
    )
    return Window(per, start, end)


def usd(nanos: int) -> str:
    """Dollars for people: cents when whole, else as many decimals as the amount needs."""
    value = nanos / NANOS_PER_USD
    text = f"{value:,.2f}"
    if abs(value) < 1 and round(value, 2) != value:
        text = f"{value:,.6f}".rstrip("0")
    return f"${text}"


def parse_budget(value: Any, where: str) -> tuple[Limit, ...]:
    """A `budget:` value: one mapping or a list of them. Errors name the entry and the key."""
    items: Sequence[Any] = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: an empty list; give {{usd: N, per: day|week|month}}")
    limits: list[Limit] = []
    for n, item in enumerate(items):
        at = f"{where}[{n}]" if isinstance(value, list) else where
        limit = _limit(item, at)
        if any(old.per == limit.per and old.model == limit.model for old in limits):
            raise ConfigError(f"{at}: a second {limit.per} limit for the same scope")
        limits.append(limit)
    return tuple(limits)


def _limit(item: Any, where: str) -> Limit:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where} must be a mapping like {{usd: 50, per: day}}")
    unknown = sorted(str(k) for k in set(item) - KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: usd, per, model)")
    amount = item.get("usd")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not (
        0 < amount <= MAX_USD
    ):
        raise ConfigError(f"{where}.usd must be a number above 0 and at most {MAX_USD:,}, "
                          f"got {amount!r}")
    per = item.get("per")
    if per not in PERIODS:
        raise ConfigError(f"{where}.per must be one of day, week, month, got {per!r}")
    model = item.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise ConfigError(f"{where}.model must be a model name, got {model!r}")
    return Limit(round(amount * NANOS_PER_USD), cast(Period, per), model)
