"""Checks of the GenAI conventions' message JSON (the shapes their JSON schemas define:
gen-ai-input-messages.json, gen-ai-output-messages.json, gen-ai-system-instructions.json,
gen-ai-tool-definitions.json), written from those schemas for the tests.

Each check takes the attribute's value as exported (JSON text) and returns it parsed.
"""

from __future__ import annotations

import json
from typing import Any

ROLES = {"system", "user", "assistant", "tool"}
FINISH_REASONS = {"stop", "length", "content_filter", "tool_call", "error"}


def _parse(value: Any) -> Any:
    assert isinstance(value, str), f"a JSON text attribute, not {type(value).__name__}"
    return json.loads(value)


def check_part(part: Any) -> None:
    assert isinstance(part, dict) and isinstance(part.get("type"), str), part
    kind = part["type"]
    if kind in ("text", "reasoning"):
        assert isinstance(part.get("content"), str), part
    elif kind == "tool_call":
        assert isinstance(part.get("name"), str) and part["name"], part
        assert isinstance(part.get("id"), str | None), part
        assert "arguments" in part, part
    elif kind == "tool_call_response":
        assert "response" in part, part
        assert isinstance(part.get("id"), str | None), part


def check_message(message: Any, *, output: bool) -> None:
    assert isinstance(message, dict), message
    assert message.get("role") in ROLES, message
    assert isinstance(message.get("parts"), list), message
    for part in message["parts"]:
        check_part(part)
    if output:
        assert isinstance(message.get("finish_reason"), str), message


def input_messages(value: Any) -> list[dict[str, Any]]:
    messages = _parse(value)
    assert isinstance(messages, list) and messages, messages
    for message in messages:
        check_message(message, output=False)
    return messages


def output_messages(value: Any) -> list[dict[str, Any]]:
    messages = _parse(value)
    assert isinstance(messages, list) and messages, messages
    for message in messages:
        check_message(message, output=True)
        assert message["role"] == "assistant", message
    return messages


def system_instructions(value: Any) -> list[dict[str, Any]]:
    parts = _parse(value)
    assert isinstance(parts, list) and parts, parts
    for part in parts:
        check_part(part)
    return parts


def tool_definitions(value: Any) -> list[dict[str, Any]]:
    tools = _parse(value)
    assert isinstance(tools, list) and tools, tools
    for tool in tools:
        assert isinstance(tool, dict) and isinstance(tool.get("type"), str), tool
        assert isinstance(tool.get("name"), str) and tool["name"], tool
    return tools


def arguments(value: Any) -> dict[str, Any]:
    """gen_ai.tool.call.arguments: an object (as JSON text)."""
    parsed = _parse(value)
    assert isinstance(parsed, dict), parsed
    return parsed
