"""Hook input JSON -> plain values (ToolCall, CompactRequest), or HookInputError naming what
is wrong. Each input is decoded and checked here once; nothing past these functions reads
the raw dicts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from gateway.errors import HookInputError
from gateway.types import CompactRequest, JSONObject, ToolCall

RawInput = bytes | str | Mapping[str, object]
"""A hook input as it arrives: bytes (command hook stdin, an HTTP body) or decoded (an SDK
callback's dict)."""

_OPTIONAL_STRINGS = ("tool_use_id", "session_id", "cwd", "prompt_id", "agent_id", "agent_type",
                     "permission_mode", "transcript_path")
_COMPACT_STRINGS = ("session_id", "transcript_path", "trigger", "prompt_id", "cwd")


def decode_object(raw: RawInput) -> Mapping[str, object]:
    """The hook input as a JSON object."""
    if isinstance(raw, bytes | str):
        try:
            data: object = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise HookInputError(f"hook input is not JSON: {exc}") from None
    else:
        data = raw
    if not isinstance(data, Mapping):
        raise HookInputError("hook input must be a JSON object")
    return data


def parse_pre_tool_use(raw: RawInput) -> ToolCall:
    return tool_call_from_input(decode_object(raw))


def tool_call_from_input(data: object) -> ToolCall:
    """The same checks on an already-decoded hook input (SDK callbacks, HTTP bodies)."""
    if not isinstance(data, Mapping):
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
    fields: dict[str, Any] = {}  # str values, each one of ToolCall's string fields
    for key in _OPTIONAL_STRINGS:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise HookInputError(f"{key} must be a string")
        fields[key] = value
    return ToolCall(tool_name=tool_name, tool_input=cast(JSONObject, tool_input), **fields)


def parse_pre_compact(raw: RawInput) -> CompactRequest:
    """A PreCompact hook input (command stdin, HTTP body, SDK callback) as a CompactRequest."""
    data = decode_object(raw)
    event = data.get("hook_event_name", "PreCompact")
    if event != "PreCompact":
        raise HookInputError(f"hook_event_name is {event!r}, expected 'PreCompact'")
    fields: dict[str, str] = {}
    for key in _COMPACT_STRINGS:
        value = data.get(key, "")
        if not isinstance(value, str):
            raise HookInputError(f"hook input {key} must be a string, got {value!r}")
        fields[key] = value
    instructions = data.get("custom_instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise HookInputError("hook input custom_instructions must be a string or null")
    if not fields["session_id"] or not fields["transcript_path"]:
        raise HookInputError("hook input needs session_id and transcript_path")
    raw_input = cast(JSONObject, dict(data))  # decoded JSON, or the SDK's copy of it
    return CompactRequest(custom_instructions=instructions, raw=raw_input, **fields)
