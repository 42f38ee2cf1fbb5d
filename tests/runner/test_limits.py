"""Policy limits applied to `agent-gateway run`: callers may lower them, never raise them."""

from __future__ import annotations

import io

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from gateway.errors import ConfigError
from gateway.policy import Limits
from gateway.runner.wiring import apply_limits

LIMITS = Limits(
    max_turns=10,
    max_budget_usd=5.0,
    models=("claude-sonnet-5", "claude-opus-5-5"),
    effort=("low", "medium", "high"),
)


def test_unset_options_take_the_limits() -> None:
    err = io.StringIO()
    options = apply_limits(ClaudeAgentOptions(), LIMITS, err)
    assert (options.max_turns, options.max_budget_usd) == (10, 5.0)
    assert options.model == "claude-sonnet-5"
    assert options.effort == "high"
    assert err.getvalue() == ""


def test_lower_requests_are_kept() -> None:
    asked = ClaudeAgentOptions(
        max_turns=3, max_budget_usd=1.0, model="claude-opus-5-5", effort="low"
    )
    options = apply_limits(asked, LIMITS, io.StringIO())
    assert (options.max_turns, options.max_budget_usd, options.model, options.effort) == (
        3,
        1.0,
        "claude-opus-5-5",
        "low",
    )


def test_higher_requests_are_capped_with_a_note() -> None:
    err = io.StringIO()
    options = apply_limits(
        ClaudeAgentOptions(max_turns=50, max_budget_usd=20.0, effort="max"), LIMITS, err
    )
    assert (options.max_turns, options.max_budget_usd, options.effort) == (10, 5.0, "high")
    notes = err.getvalue().splitlines()
    assert len(notes) == 3
    assert "--max-turns 50 exceeds the policy limit 10" in notes[0]


def test_a_model_outside_the_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="'claude-haiku-5' is not allowed by policy"):
        apply_limits(ClaudeAgentOptions(model="claude-haiku-5"), LIMITS, io.StringIO())


def test_no_limits_change_nothing() -> None:
    asked = ClaudeAgentOptions(max_turns=99)
    assert apply_limits(asked, Limits(), io.StringIO()) is asked
