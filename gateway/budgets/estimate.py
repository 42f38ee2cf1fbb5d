"""What a Messages API request may cost, before it is sent: pure.

Input: the body's size over BYTES_PER_TOKEN, at the model's input price. Output: an allowance
of `min(max_tokens, reserve_output_tokens)` tokens at its output price. Claude Code asks for
tens of thousands of max_tokens on every request; reserving all of them would refuse small
budgets outright, so the allowance is capped, and the cap is what a response can overshoot by.

Nothing here parses a whole body (a long conversation would stall the proxy): `max_tokens` is
read only from the body's leading top-level fields; when it is not there the full allowance
is reserved, which only ever errs towards a larger hold.
"""

from __future__ import annotations

import re

from gateway.telemetry.pricing import ModelPrice, Usage, nanos_per_token

BYTES_PER_TOKEN = 4
DEFAULT_RESERVE_OUTPUT_TOKENS = 4096
COMPRESSED_RATIO = 4
"""A compressed body is taken to be this many times larger once decoded."""

# Top-level fields with simple values, from the opening brace on: nothing inside a nested
# value (a message, a tool input) can be taken for the request's own max_tokens.
_SIMPLE = rb'\s*"[^"\\]{1,64}"\s*:\s*(?:"[^"\\]{0,256}"|-?\d{1,20}(?:\.\d+)?|true|false|null)\s*'
_LEADING_FIELDS = re.compile(rb"\A\s*\{(?:" + _SIMPLE + rb",)*" + _SIMPLE + rb"[,}]")
_MAX_TOKENS = re.compile(rb'"max_tokens"\s*:\s*(\d{1,12})')


def leading_max_tokens(body: bytes) -> int | None:
    head = _LEADING_FIELDS.match(body[:4096])
    if head is None:
        return None
    found = _MAX_TOKENS.search(head.group(0))
    return int(found.group(1)) if found else None


def output_allowance(body: bytes, reserve_output_tokens: int) -> int:
    asked = leading_max_tokens(body)
    return reserve_output_tokens if asked is None else min(asked, reserve_output_tokens)


def input_tokens_estimate(size: int, compressed: bool) -> int:
    decoded = size * COMPRESSED_RATIO if compressed else size
    return -(-decoded // BYTES_PER_TOKEN)


def reservation(
    price: ModelPrice, body: bytes, *, compressed: bool, reserve_output_tokens: int,
    size: int | None = None,
) -> tuple[int, int]:
    """(nano-dollars to hold, the output allowance in tokens). `body` may be only the head of
    a body of `size` bytes."""
    allowance = output_allowance(body, reserve_output_tokens)
    size = len(body) if size is None else size
    nanos = input_tokens_estimate(size, compressed) * nanos_per_token(price.input)
    return nanos + allowance * nanos_per_token(price.output), allowance


def with_output_at_least(usage: Usage, tokens: int) -> Usage:
    """A cut stream's usage: its output is unknown, so it is charged the allowance."""
    from dataclasses import replace

    return replace(usage, output_tokens=max(usage.output_tokens, tokens))
