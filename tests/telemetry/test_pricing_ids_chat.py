"""Prices (checked against the real binary), ids, and the proxy's SSE -> chat span path."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gateway.errors import ConfigError
from gateway.telemetry import attributes as A
from gateway.telemetry.chat import ChatRequestMeta, chat_span_from_sse
from gateway.telemetry.ids import DeterministicIds, RandomIds, parse_traceparent, traceparent_for
from gateway.telemetry.model import SpanRef
from gateway.telemetry.pricing import Usage, load_price_table
from gateway.telemetry.spans import TraceBuilder
from tests.telemetry.recordings import T0, root, run

PRICES = load_price_table()


def test_observed_cost_of_the_default_model() -> None:
    assert PRICES.cost(
        "claude-opus-5-5", Usage(input_tokens=2400, output_tokens=84)
    ) == pytest.approx(0.01128)


def test_cache_prices_match_the_subagent_recording_total() -> None:
    usage = Usage(
        input_tokens=6170,
        output_tokens=285,
        cache_read_input_tokens=1500,
        cache_creation_input_tokens=250,
    )
    assert PRICES.cost("claude-opus-5-5", usage) == pytest.approx(0.03193)


def test_one_hour_cache_writes_cost_more() -> None:
    split = Usage(cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=1_000_000)
    assert PRICES.cost("claude-opus-5-5", split) == pytest.approx(8.0)
    assert PRICES.cost(
        "claude-opus-5-5", Usage(cache_creation_input_tokens=1_000_000)
    ) == pytest.approx(5.0)


def test_unknown_model_has_no_cost_and_is_flagged() -> None:
    assert PRICES.cost("claude-unknown-9", Usage(input_tokens=10)) is None
    meta = ChatRequestMeta(start_ns=1, end_ns=2, request_model="claude-unknown-9")
    events = [
        {
            "type": "message_start",
            "message": {"id": "m", "model": "claude-unknown-9", "usage": {"input_tokens": 5}},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
    ]
    span = chat_span_from_sse(events, meta, parent=SpanRef(1, 2), span_id=3, prices=PRICES)
    assert A.GEN_AI_USAGE_COST not in span.attributes
    assert span.attributes[A.COST_UNPRICED_MODEL] == "claude-unknown-9"


def test_bad_price_file_names_model_and_key() -> None:
    with pytest.raises(ConfigError, match=r"'m'.*'cache_read'"):
        load_price_table(
            "models:\n  m: {input: 1, output: 1, cache_write_5m: 1, cache_write_1h: 1}\n"
        )


def test_deterministic_ids_agree_across_replicas() -> None:
    a, b = DeterministicIds("sess-1"), DeterministicIds("sess-1")
    assert a.trace_id == b.trace_id
    assert a.span_id("chat", "msg_1") == b.span_id("chat", "msg_1")
    assert a.span_id("chat", "msg_1") != a.span_id("execute_tool", "msg_1")
    assert DeterministicIds("sess-2").trace_id != a.trace_id
    first = run("partial-messages")
    second = run("partial-messages")
    assert [(s.trace_id, s.span_id, s.parent_span_id) for s in first] == [
        (s.trace_id, s.span_id, s.parent_span_id) for s in second
    ]


def test_random_ids_are_memoized_and_injectable() -> None:
    ids = RandomIds(rng=random.Random(7))
    assert ids.span_id("chat", "x") == ids.span_id("chat", "x")
    assert RandomIds(rng=random.Random(7)).trace_id == RandomIds(rng=random.Random(7)).trace_id


def test_traceparent_round_trip_and_wrapper_parenting() -> None:
    header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    parent = parse_traceparent(header, "vendor=x")
    assert parent is not None and parent.is_remote
    assert parse_traceparent("garbage") is None
    assert parse_traceparent("00-" + "0" * 32 + "-b7ad6b7169203331-01") is None
    builder = TraceBuilder.for_wrapper(start_ns=T0, traceparent=header, tracestate="vendor=x")
    env = traceparent_for(builder.root)
    assert env["TRACEPARENT"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
    assert env["TRACESTATE"] == "vendor=x"
    spans = run("tool-call", builder=builder)
    top = root(spans)
    assert top.parent_span_id == 0xB7AD6B7169203331 and top.parent_is_remote
    assert f"{top.span_id:016x}" in env["TRACEPARENT"]
    assert {s.trace_id for s in spans} == {0x0AF7651916CD43DD8448EB211C80319C}
    fresh = TraceBuilder.for_wrapper(start_ns=T0, traceparent=None)
    assert fresh.root.trace_id != 0x0AF7651916CD43DD8448EB211C80319C


def test_proxy_sse_chat_span_matches_the_stream_path() -> None:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_x",
                "model": "claude-opus-5-5",
                "usage": {
                    "input_tokens": 1234,
                    "output_tokens": 1,
                    "cache_read_input_tokens": 300,
                    "cache_creation_input_tokens": 50,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 20,
                        "ephemeral_1h_input_tokens": 30,
                    },
                },
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"output_tokens": 57},
        },
        {"type": "message_stop"},
    ]
    meta = ChatRequestMeta(
        start_ns=100,
        end_ns=900,
        request_model="claude-opus-5-5",
        retry_count=2,
        ttft_ns=5_000_000,
        conversation_id="s",
    )
    parent = SpanRef(trace_id=11, span_id=22)
    span = chat_span_from_sse(events, meta, parent=parent, span_id=33, prices=PRICES)
    a = span.attributes
    assert (span.trace_id, span.span_id, span.parent_span_id) == (11, 33, 22)
    assert span.name == "chat claude-opus-5-5" and span.kind == "client"
    assert a[A.GEN_AI_USAGE_INPUT_TOKENS] == 1584
    assert a[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 57
    assert a[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("max_tokens",)
    assert a[A.CHAT_CACHE_CREATION_1H_INPUT_TOKENS] == 30
    expected = (1234 * 4 + 57 * 20 + 300 * 0.2 + 20 * 5 + 30 * 8) / 1e6
    assert a[A.GEN_AI_USAGE_COST] == pytest.approx(expected)
    assert a[A.HTTP_RESPONSE_STATUS_CODE] == 200 and a[A.CHAT_RETRY_COUNT] == 2
    assert a[A.CHAT_TTFT_MS] == 5.0
    assert span.status.code == "unset"


def test_proxy_error_response_is_an_error_span() -> None:
    events = [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    meta = ChatRequestMeta(start_ns=1, end_ns=2, request_model="claude-opus-5-5", http_status=529)
    span = chat_span_from_sse(events, meta, parent=SpanRef(1, 2), span_id=3, prices=PRICES)
    assert span.status.code == "error"
    assert span.attributes[A.ERROR_TYPE] == "overloaded_error"
