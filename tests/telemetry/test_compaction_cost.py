"""The compaction request's tokens and cost land on the compaction's own chat span (Claude Code
streams nothing of that request), so the trace's chats add up to what Claude Code charged."""

from __future__ import annotations

import pytest

from gateway.telemetry import attributes as A
from gateway.telemetry.compaction import unaccounted_usage
from gateway.telemetry.pricing import Usage, load_price_table
from tests.telemetry.recordings import children, named, root, run

PRICES = load_price_table()


def test_a_compaction_only_run_is_fully_accounted_for() -> None:
    spans = run("manual-compact")
    (compaction,) = named(spans, "compaction")
    # the resumed session's result: 0.02256 for the whole session, 0.01128 in this process,
    # all of it the summary request (2400 input, 84 output tokens of claude-opus-5-5)
    assert compaction.attributes[A.COMPACTION_COST_USD] == pytest.approx(0.01128)
    top = root(spans).attributes
    assert top[A.RESULT_TOTAL_COST_USD] == pytest.approx(0.02256)
    assert top[A.COST_RUN_USD] == pytest.approx(0.01128)
    assert top[A.COST_COMPACTION_USD] == pytest.approx(0.01128)
    # the summary request is a chat like any other, inside its compaction: tokens and cost
    (chat,) = children(spans, compaction)
    assert chat.name == "chat claude-opus-5-5" and chat.kind == "client"
    assert chat.attributes[A.GEN_AI_USAGE_INPUT_TOKENS] == 2400
    assert chat.attributes[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 84
    assert chat.attributes[A.GEN_AI_USAGE_COST] == pytest.approx(0.01128)
    assert chat.attributes[A.CHAT_USAGE_SOURCE] == "result"
    assert top[A.COST_CHAT_SUM_USD] == pytest.approx(0.01128)
    assert top[A.COST_DIFFERENCE_USD] == 0


def test_runs_without_compaction_still_compare_their_chats() -> None:
    top = root(run("partial-messages")).attributes
    assert A.COST_COMPACTION_USD not in top
    assert top[A.COST_RUN_USD] == pytest.approx(top[A.COST_CHAT_SUM_USD])
    assert top[A.COST_DIFFERENCE_USD] == 0


def test_unaccounted_usage_is_what_the_chats_do_not_explain() -> None:
    since = {"claude-opus-5-5": {"inputTokens": 5000, "outputTokens": 100,
                                 "cacheReadInputTokens": 1000, "cacheCreationInputTokens": 0}}
    chat = Usage(input_tokens=2000, output_tokens=40, cache_read_input_tokens=1000)
    left = unaccounted_usage(since, [("claude-opus-5-5", chat)])
    assert left is not None
    assert PRICES.cost("claude-opus-5-5", left["claude-opus-5-5"]) == pytest.approx(
        (3000 * 4 + 60 * 20) / 1e6
    )
    # the stream showing more than the result counts: nothing to trust
    assert unaccounted_usage(since, [("claude-opus-5-5", Usage(input_tokens=9000))]) is None
    # a model without a price: unknown, never a guess
    mystery = unaccounted_usage({"mystery": {"inputTokens": 10}}, [])
    assert mystery is not None and PRICES.cost("mystery", mystery["mystery"]) is None
    assert unaccounted_usage({}, []) == {}
