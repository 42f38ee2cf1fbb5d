"""Anthropic messages -> the GenAI conventions' message JSON: pure.

The shapes are those of the conventions' JSON schemas (gen-ai-input-messages.json,
gen-ai-output-messages.json, gen-ai-system-instructions.json, gen-ai-tool-definitions.json):
a message is `{"role", "parts": [...]}` (output messages add `finish_reason`); a part is
`{"type": "text", "content"}`, `{"type": "tool_call", "id", "name", "arguments"}`,
`{"type": "tool_call_response", "id", "response"}` or `{"type": "reasoning", "content"}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

Part = dict[str, Any]
Message = dict[str, Any]

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: str | None, *, error: bool = False) -> str:
    """The schema's FinishReason for an Anthropic stop_reason (`stop`, `length`,
    `tool_call`, `content_filter`, `error`); any other value passes through as is."""
    if error:
        return "error"
    if not stop_reason:
        return ""
    return _FINISH_REASONS.get(stop_reason, stop_reason)


def text_part(text: str) -> Part:
    return {"type": "text", "content": text}


def tool_call_part(call_id: str, name: str, arguments: Any) -> Part:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_response_part(call_id: str, response: Any) -> Part:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def user_text(text: str) -> Message:
    return {"role": "user", "parts": [text_part(text)]}


def assistant_message(parts: Sequence[Part]) -> Message:
    """A response as part of the conversation sent back (input messages: no finish_reason)."""
    return {"role": "assistant", "parts": list(parts)}


def output_message(parts: Sequence[Part], finish: str) -> Message:
    return {"role": "assistant", "parts": list(parts), "finish_reason": finish}


def tool_results(results: Sequence[tuple[str, Any]]) -> Message:
    return {"role": "tool", "parts": [tool_response_part(i, r) for i, r in results]}


def arguments_object(raw: Any) -> Any:
    """Tool arguments as an object: a JSON text is parsed (best effort, as the conventions
    ask); anything that is not JSON stays as it came."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def block_part(block: Mapping[str, Any]) -> Part:
    """One Anthropic content block as a part."""
    kind = str(block.get("type") or "")
    if kind == "text":
        return text_part(str(block.get("text") or ""))
    if kind in ("tool_use", "server_tool_use"):
        return tool_call_part(
            str(block.get("id") or ""), str(block.get("name") or ""), block.get("input") or {}
        )
    if kind == "tool_result":  # as text, the shape `run` sees it in
        return tool_response_part(
            str(block.get("tool_use_id") or ""), tool_result_text(block.get("content"))
        )
    if kind in ("thinking", "redacted_thinking"):
        return {"type": "reasoning", "content": str(block.get("thinking") or "")}
    return {"type": kind or "unknown"}  # images, documents: the schema's generic part


def parts_of(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [text_part(content)]
    if isinstance(content, Sequence):
        return [block_part(b) for b in content if isinstance(b, Mapping)]
    return []


def request_messages(messages: Any) -> list[Message]:
    """A Messages API request's `messages`: a user message that holds only tool results is
    the conventions' `tool` role."""
    out: list[Message] = []
    for message in messages if isinstance(messages, Sequence) else ():
        if not isinstance(message, Mapping):
            continue
        parts = parts_of(message.get("content"))
        role = str(message.get("role") or "user")
        if parts and all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        out.append({"role": role, "parts": parts})
    return out


def system_instructions(system: Any) -> list[Part]:
    """A request's `system` (a string or text blocks) as the conventions' part list."""
    return [p for p in parts_of(system) if p["type"] == "text"]


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """A request's `tools`: required properties only (type and name), as the conventions
    recommend for this large attribute."""
    return [
        {"type": "function", "name": str(t.get("name"))}
        for t in (tools if isinstance(tools, Sequence) else ())
        if isinstance(t, Mapping) and t.get("name")
    ]


def response_text(response: Any) -> Any:
    """A PostToolUse `tool_response` as near as it gets to the text the model would read: a
    string as it is, Bash's stdout and stderr joined, anything else as it came."""
    if isinstance(response, Mapping) and isinstance(response.get("stdout"), str):
        out = [str(response[k]) for k in ("stdout", "stderr") if response.get(k)]
        return "\n".join(out) if out else "(Bash completed with no output)"
    return tool_result_text(response)


def tool_result_text(content: Any) -> Any:
    """A tool_result's content: text blocks joined to one string; anything else as is."""
    if isinstance(content, Sequence) and not isinstance(content, str):
        texts = [
            str(b.get("text") or "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
        ]
        if len(texts) == len(content):
            return "\n".join(texts)
    return content


def task_notification_text(notification: Mapping[str, Any]) -> str:
    """The user message a background task's end becomes, rebuilt from the stream's
    `task_notification` (Claude Code 2.1.332 wraps the same fields in a system reminder)."""
    fields = (
        ("task-id", "task_id"), ("tool-use-id", "tool_use_id"), ("output-file", "output_file"),
        ("status", "status"), ("result", "summary"),
    )
    lines = [f"<{tag}>{notification[key]}</{tag}>" for tag, key in fields if notification.get(key)]
    return "\n".join(["<task-notification>", *lines, "</task-notification>"])
