"""Decision -> hook output JSON. `{}` leaves the call to Claude Code's own permission flow."""

from __future__ import annotations

from gateway.hookio.wire import PreToolUseOutput
from gateway.types import Decision


def render_pre_tool_use(decision: Decision) -> PreToolUseOutput:
    """A monitor-mode would-deny renders as whatever the enforced rules gave (never a block)."""
    if decision.kind == "abstain":
        return {}
    reason = decision.reason
    if decision.rule_id and decision.rule_id not in reason:
        reason = f"{reason} [rule {decision.rule_id}]" if reason else f"rule {decision.rule_id}"
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.kind,
            "permissionDecisionReason": reason,
        }
    }
