"""Hook input JSON -> ToolCall, or HookInputError naming what is wrong."""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import HookInputError
from gateway.types import ToolCall

_OPTIONAL_STRINGS = ("tool_use_id", "session_id", "cwd", "prompt_id", "agent_id", "agent_type",
                     "permission_mode", "transcript_path")


def parse_pre_tool_use(raw: bytes | str) -> ToolCall:
    try:
        data: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"hook input is not JSON: {exc}") from None
    return tool_call_from_input(data)


def tool_call_from_input(data: Any) -> ToolCall:
    """The same checks on an already-decoded hook input (SDK callbacks, HTTP bodies)."""
    if not isinstance(data, dict):
        raise HookInputError("hook input must be a JSON object")
    event = data.get("hook_event_name", "PreToolUse")
    if event != "PreToolUse":
        raise HookInputError(f"expected a PreToolUse hook input, got hook_event_name {event!r}")
    tool_name = data.get("tool_name")
    if not isinstance(tool_name, str) or not tool_name:
        raise HookInputError("hook input has no tool_name string")
    tool_input = data.get("tool_input", {})
    if not isinstance(tool_input, dict):
        raise HookInputError("tool_input must be a JSON object")
    fields: dict[str, str] = {}
    for key in _OPTIONAL_STRINGS:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise HookInputError(f"{key} must be a string")
        fields[key] = value
    return ToolCall(tool_name=tool_name, tool_input=tool_input, **fields)
