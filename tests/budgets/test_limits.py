"""Budget limits: parsing (one-line errors naming the key), UTC calendar windows, estimates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.budgets.estimate import reservation
from gateway.budgets.limits import Limit, parse_budget, usd, window_of
from gateway.budgets.request import (
    FRAMING_TOKENS,
    IMAGE_TOKENS,
    UnreadableRequest,
    call_shape,
)
from gateway.errors import ConfigError
from gateway.telemetry.pricing import Usage, load_price_table

PRICES = load_price_table()


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_one_limit_or_several_per_model() -> None:
    assert parse_budget({"usd": 50, "per": "day"}, "b") == (Limit(50_000_000_000, "day"),)
    both = parse_budget(
        [{"usd": 500, "per": "month"}, {"usd": 2.5, "per": "day", "model": "claude-opus-5-5"}],
        "b",
    )
    assert both[1] == Limit(2_500_000_000, "day", "claude-opus-5-5")
    assert both[1].applies_to("claude-opus-5-5") and not both[1].applies_to("other")
    assert both[0].applies_to("anything")
    assert both[1].describe() == "$2.50 a day for claude-opus-5-5"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"usd": 5}, "b.per must be one of day, week, month, got None"),
        ({"usd": "5", "per": "day"}, "b.usd must be a number above 0"),
        ({"usd": True, "per": "day"}, "b.usd must be a number above 0"),
        ({"usd": 0, "per": "day"}, "b.usd must be a number above 0"),
        ({"usd": 2_000_000, "per": "day"}, "at most 1,000,000"),
        ({"usd": 5, "per": "day", "model": ""}, "b.model must be a model name"),
        ("50/day", "b must be a mapping like {usd: 50, per: day}"),
        ([], "an empty list"),
        ([{"usd": 1, "per": "day"}, {"usd": 2, "per": "day"}], "b[1]: a second day limit"),
    ],
)
def test_mistakes_are_one_line_errors(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_budget(value, "b")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_windows_are_utc_calendar_windows() -> None:
    now = at("2026-05-13T23:59:59.5")  # a Wednesday
    day, week, month = (window_of(p, now) for p in ("day", "week", "month"))  # type: ignore[arg-type]
    assert (day.start.isoformat(), day.end.isoformat()) == (
        "2026-05-13T00:00:00+00:00", "2026-05-14T00:00:00+00:00")
    assert (week.start.isoformat(), week.end.isoformat()) == (
        "2026-05-11T00:00:00+00:00", "2026-05-18T00:00:00+00:00")
    assert (month.start.isoformat(), month.end.isoformat()) == (
        "2026-05-01T00:00:00+00:00", "2026-06-01T00:00:00+00:00")
    assert window_of("day", at("2026-05-14T00:00:00")).label == "2026-05-14"
    december = window_of("month", at("2026-12-31T12:00:00"))
    assert december.end.isoformat() == "2027-01-01T00:00:00+00:00"
    assert day.resets() == "2026-05-14 00:00 UTC"


def test_amounts_for_people() -> None:
    assert usd(50_000_000_000) == "$50.00"
    assert usd(5_640_000) == "$0.00564"
    assert usd(1_234_567_890_000) == "$1,234.57"


def test_nano_dollar_costs_are_exact_and_agree_with_the_float_cost() -> None:
    usage = Usage(input_tokens=6170, output_tokens=285, cache_read_input_tokens=1500,
                  cache_creation_input_tokens=250)
    assert PRICES.cost_nanos("claude-opus-5-5", usage) == 31_930_000
    assert PRICES.cost("claude-opus-5-5", usage) == pytest.approx(0.03193)
    assert PRICES.cost_nanos("unknown", usage) is None


def test_max_tokens_and_the_model_are_read_from_the_whole_body() -> None:
    # Claude Code writes max_tokens after the conversation
    shape = call_shape(b'{"model":"m","messages":[],"max_tokens":128000}')
    assert (shape.model, shape.max_tokens) == ("m", 128000)
    # an agent-written tool input cannot pass for the request's own fields
    nested = (b'{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result",'
              b'"content":[{"type":"image"}],"input":{"max_tokens":1,"model":"x"}}]}],'
              b'"max_tokens":64000}')
    shape = call_shape(nested)
    assert (shape.model, shape.max_tokens, shape.images) == ("m", 64000, 1)
    assert shape.input_tokens_bound == len(nested) + FRAMING_TOKENS + IMAGE_TOKENS


@pytest.mark.parametrize("body", [
    b'{"model":"claude-haiku","max_tokens":10,"model":"claude-opus-5-5"}',
    b'{"model":"claude-haiku","max_tokens":10,"\\u006dodel":"claude-opus-5-5"}',
    b'{"model":"m","max_tokens":1,"messages":[],"max_tokens":100000}',
    b'{"model":"m"}',
    b'{"model":"m","max_tokens":true}',
    b'{"max_tokens":1}',
    b'{"model":"m","max_tokens":1} trailing',
    b'["model"]',
    b'\xff',
])
def test_a_body_whose_cost_cannot_be_bounded_is_unreadable(body: bytes) -> None:
    with pytest.raises(UnreadableRequest):
        call_shape(body)


def test_a_reservation_holds_the_most_the_call_can_cost() -> None:
    price = PRICES.price_for("claude-opus-5-5")
    assert price is not None
    body = b'{"model":"claude-opus-5-5","max_tokens":100,"messages":[]}'
    shape = call_shape(body)
    inputs = (len(body) + FRAMING_TOKENS) * 8000  # each token at the dearest: a 1-hour write
    held = reservation(price, shape)
    assert (held.amount, held.ceiling) == (inputs + 100 * 20000, inputs + 100 * 20000)
    opted = reservation(price, call_shape(body.replace(b"100", b"100000")),
                        reserve_output_tokens=4096)
    assert opted.amount == inputs + 3 * 8000 + 4096 * 20000
    assert opted.ceiling == inputs + 3 * 8000 + 100_000 * 20000
    # the bound holds against the billed usage at every kind of input price
    for usage in (Usage(len(body) + FRAMING_TOKENS, 100),
                  Usage(0, 100, cache_creation_input_tokens=len(body) + FRAMING_TOKENS,
                        cache_creation_1h_input_tokens=len(body) + FRAMING_TOKENS)):
        assert (PRICES.cost_nanos("claude-opus-5-5", usage) or 0) <= held.amount


def test_dated_model_ids_are_the_tables_model() -> None:
    assert PRICES.canonical("claude-opus-5-5-20261101") == "claude-opus-5-5"
    assert PRICES.canonical("claude-opus-5-5@20261101") == "claude-opus-5-5"
    assert PRICES.canonical("claude-opus-5-5") == "claude-opus-5-5"
    assert PRICES.canonical("claude-other-20261101") == "claude-other-20261101"


