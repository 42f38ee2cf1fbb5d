"""Hook JSON as Claude Code sends and reads it, per event (see shared/reference
hook-inputs.jsonl and Claude Code's hooks reference). The parse functions beside this turn
inputs into plain values (gateway.types); nothing past them reads these dicts.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from gateway.types import JSON, JSONObject


class _CommonInput(TypedDict):
    """Fields every hook input carries (some only in some versions: not required here)."""

    hook_event_name: str
    session_id: NotRequired[str]
    transcript_path: NotRequired[str]
    cwd: NotRequired[str]
    prompt_id: NotRequired[str]
    permission_mode: NotRequired[str]
    agent_id: NotRequired[str]
    agent_type: NotRequired[str]


class PreToolUseInput(_CommonInput):
    tool_name: str
    tool_input: JSONObject
    tool_use_id: NotRequired[str]
    effort: NotRequired[JSONObject]


class PostToolUseInput(_CommonInput):
    """PostToolUse and PostToolUseFailure."""

    tool_name: str
    tool_input: JSONObject
    tool_use_id: NotRequired[str]
    tool_response: NotRequired[JSON]
    error: NotRequired[str]
    duration_ms: NotRequired[float]


class PreCompactInput(_CommonInput):
    trigger: Literal["manual", "auto"]
    custom_instructions: str | None


class SessionEndInput(_CommonInput):
    reason: NotRequired[str]


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
