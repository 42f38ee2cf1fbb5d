"""What a Messages API request may cost, before it is sent: pure.

The ceiling is the most the API can bill for the call: its input bound (budgets/request.py)
at the dearest input price (a token may be billed as plain input, a cache read or either cache
write), plus all of `max_tokens` at the output price. By default the hold is the ceiling, so
no call is forwarded that the budget could not pay for whatever it answers.

`reserve_output_tokens` (opt-in) holds `min(max_tokens, N)` output tokens instead: more calls
fit while a budget runs low, and a budget can be overshot by what the calls in flight output
beyond N. A call is never charged less than the API billed either way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.budgets.request import CallShape
from gateway.telemetry.pricing import ModelPrice, Usage, nanos_per_token


@dataclass(frozen=True, slots=True)
class Reservation:
    amount: int
    """Nano-dollars held while the call runs."""
    ceiling: int
    """The most the call can cost (what an unreadable response is charged)."""
    max_tokens: int


def input_nanos_ceiling(price: ModelPrice) -> int:
    """The dearest price an input token can be billed at (nano-dollars)."""
    return max(nanos_per_token(p) for p in (
        price.input, price.cache_write_5m, price.cache_write_1h, price.cache_read
    ))


def reservation(
    price: ModelPrice, shape: CallShape, *, reserve_output_tokens: int | None = None
) -> Reservation:
    held_output = (shape.max_tokens if reserve_output_tokens is None
                   else min(shape.max_tokens, reserve_output_tokens))
    inputs = shape.input_tokens_bound * input_nanos_ceiling(price)
    output = nanos_per_token(price.output)
    return Reservation(inputs + held_output * output, inputs + shape.max_tokens * output,
                       shape.max_tokens)


def with_output_at_least(usage: Usage, tokens: int) -> Usage:
    """A cut stream's usage: its input is known (message_start), its output is at most
    max_tokens, so it is charged all of them (never less than the API billed)."""
    return replace(usage, output_tokens=max(usage.output_tokens, tokens))
