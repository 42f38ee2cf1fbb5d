"""Hook JSON as Claude Code sends and reads it (see shared/reference hook-inputs.jsonl)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class PreToolUseInput(TypedDict):
    hook_event_name: Literal["PreToolUse"]
    tool_name: str
    tool_input: dict[str, Any]
    session_id: NotRequired[str]
    transcript_path: NotRequired[str]
    cwd: NotRequired[str]
    prompt_id: NotRequired[str]
    permission_mode: NotRequired[str]
    tool_use_id: NotRequired[str]
    agent_id: NotRequired[str]
    agent_type: NotRequired[str]
    effort: NotRequired[dict[str, Any]]


class PreToolUseHookSpecificOutput(TypedDict):
    hookEventName: Literal["PreToolUse"]
    permissionDecision: Literal["allow", "deny", "ask"]
    permissionDecisionReason: str


class PreToolUseOutput(TypedDict, total=False):
    hookSpecificOutput: PreToolUseHookSpecificOutput
