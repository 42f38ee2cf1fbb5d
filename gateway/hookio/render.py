"""The hook answers that stop Claude Code, built here and nowhere else: a PreToolUse
decision (`{}` leaves the call to Claude Code's own permission flow) and a PreCompact block.
Every vantage point (command hook, `serve`, `run`'s endpoint and callbacks, the refusals of
an unauthenticated or unreadable request) answers through these."""

from __future__ import annotations

from typing import Literal

from gateway.hookio.wire import PreCompactOutput, PreToolUseOutput
from gateway.types import Decision


def render_pre_tool_use(decision: Decision) -> PreToolUseOutput:
    """A monitor-mode would-deny renders as whatever the enforced rules gave (never a block)."""
    if decision.kind == "abstain":
        return {}
    reason = decision.reason
    if decision.rule_id and decision.rule_id not in reason:
        reason = f"{reason} [rule {decision.rule_id}]" if reason else f"rule {decision.rule_id}"
    return _pre_tool_use(decision.kind, reason)


def render_deny(reason: str) -> PreToolUseOutput:
    """A deny with no decision behind it (the gateway could not decide, or render): kept
    this small so that it cannot fail where `render_pre_tool_use` did."""
    return _pre_tool_use("deny", reason)


def _pre_tool_use(kind: Literal["allow", "deny", "ask"], reason: str) -> PreToolUseOutput:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": kind,
            "permissionDecisionReason": reason,
        }
    }


def render_block(reason: str) -> PreCompactOutput:
    """PreCompact: Claude Code honours a top-level `decision: block`."""
    return {"decision": "block", "reason": reason}
