"""Per-model token prices (from prices.yaml) and the cost of one API response: pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from gateway.errors import ConfigError

PER_MILLION = 1_000_000
NANOS_PER_USD = 1_000_000_000
"""Budgets count in nano-dollars: integers, so sums are exact. A price of P USD per million
tokens is P * 1000 nano-dollars a token, exact for prices given to a thousandth."""
_DATED = re.compile(r"[-@]\d{8}\Z")
_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one API response, as the Messages API reports them.

    `input_tokens` excludes cache reads and writes (Anthropic's convention).
    `cache_creation_1h_input_tokens` is the 1-hour part of `cache_creation_input_tokens`
    when the API reported the split; the rest is priced as 5-minute writes.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_5m_input_tokens: int | None = None
    cache_creation_1h_input_tokens: int | None = None

    @property
    def total_input_tokens(self) -> int:
        """The GenAI conventions' input count for Anthropic: input + cache read + cache write."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True, slots=True)
class PriceTable:
    models: Mapping[str, ModelPrice]

    def price_for(self, model: str) -> ModelPrice | None:
        return self.models.get(model)

    def canonical(self, model: str) -> str:
        """The table's name for a model named with a snapshot date (`claude-opus-5-5-20261101`,
        Vertex's `claude-opus-5-5@20261101`): what the API bills it as. Other names as given."""
        if model in self.models:
            return model
        base = _DATED.sub("", model)
        return base if base in self.models else model

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for one response, or None when the model has no price (never a guess)."""
        price = self.price_for(model)
        if price is None:
            return None
        one_hour = usage.cache_creation_1h_input_tokens or 0
        five_min = usage.cache_creation_input_tokens - one_hour
        micro = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_read_input_tokens * price.cache_read
            + five_min * price.cache_write_5m
            + one_hour * price.cache_write_1h
        )
        return micro / PER_MILLION

    def cost_nanos(self, model: str, usage: Usage) -> int | None:
        """The same cost in whole nano-dollars (what budgets add up), or None when unpriced."""
        price = self.price_for(model)
        if price is None:
            return None
        one_hour = usage.cache_creation_1h_input_tokens or 0
        five_min = usage.cache_creation_input_tokens - one_hour
        return (
            usage.input_tokens * nanos_per_token(price.input)
            + usage.output_tokens * nanos_per_token(price.output)
            + usage.cache_read_input_tokens * nanos_per_token(price.cache_read)
            + five_min * nanos_per_token(price.cache_write_5m)
            + one_hour * nanos_per_token(price.cache_write_1h)
        )


def nanos_per_token(usd_per_million: float) -> int:
    return round(usd_per_million * NANOS_PER_USD / PER_MILLION)


def parse_price_table(data: Any, *, source: str = "prices.yaml") -> PriceTable:
    """Validate the loaded YAML; errors name the file, the model and the key."""
    if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
        raise ConfigError(f"{source}: expected a mapping with a 'models' mapping")
    models: dict[str, ModelPrice] = {}
    for name, entry in data["models"].items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{source}: model {name!r}: expected a mapping of prices")
        values: dict[str, float] = {}
        for key in _FIELDS:
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{source}: model {name!r}: {key!r} must be a non-negative number, "
                    f"got {value!r}"
                )
            values[key] = float(value)
        models[str(name)] = ModelPrice(**values)
    return PriceTable(models=models)


def load_price_table(text: str | None = None) -> PriceTable:
    """The bundled table, or `text` in the same YAML format."""
    if text is None:
        text = resources.files("gateway.telemetry").joinpath("prices.yaml").read_text("utf-8")
    return parse_price_table(yaml.safe_load(text))
