"""The hook output JSON Claude Code reads, per event (Claude Code's hooks reference);
render.py builds it. Inputs are not typed here: parse.py checks each field it reads and
turns it into plain values (gateway.types), and nothing past it reads the input dicts.
"""

from __future__ import annotations

from typing import Literal, TypedDict


class PreToolUseHookSpecificOutput(TypedDict):
    hookEventName: Literal["PreToolUse"]
    permissionDecision: Literal["allow", "deny", "ask"]
    permissionDecisionReason: str


class PreToolUseOutput(TypedDict, total=False):
    """`{}` leaves the call to Claude Code's own permission flow."""

    hookSpecificOutput: PreToolUseHookSpecificOutput


class PreCompactOutput(TypedDict, total=False):
    """Claude Code honours a top-level `decision: block` on PreCompact."""

    decision: Literal["block"]
    reason: str
    systemMessage: str
