"""Render a scripted response as Messages API events (streaming) or one JSON body: pure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gateway.scripted.scenario import ScriptedResponse


def content_blocks(response: ScriptedResponse, message_id: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if response.thinking:
        blocks.append({"type": "thinking", "thinking": response.thinking, "signature": "scripted"})
    if response.text:
        blocks.append({"type": "text", "text": response.text})
    for n, tool in enumerate(response.tool_use):
        tool_id = tool.id or f"toolu_{message_id.removeprefix('msg_')}_{n}"
        blocks.append({"type": "tool_use", "id": tool_id, "name": tool.name, "input": tool.input})
    return blocks


def usage_dict(response: ScriptedResponse) -> dict[str, Any]:
    u = response.usage
    one_hour = u.cache_creation_1h_input_tokens
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": u.cache_creation_input_tokens - one_hour,
            "ephemeral_1h_input_tokens": one_hour,
        },
    }


def message_body(response: ScriptedResponse, message_id: str, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(response, message_id),
        "stop_reason": response.effective_stop_reason,
        "stop_sequence": None,
        "usage": usage_dict(response),
    }


def error_body(response: ScriptedResponse) -> dict[str, Any]:
    default_types = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error"}
    err_type = response.error_type or default_types.get(response.status or 500, "api_error")
    return {"type": "error", "error": {"type": err_type, "message": response.error_message}}


def stream_events(
    response: ScriptedResponse, message_id: str, model: str
) -> Iterator[dict[str, Any]]:
    """The SSE event sequence, message_start's usage carrying the output placeholder of 1."""
    start_usage = {**usage_dict(response), "output_tokens": 1}
    yield {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        },
    }
    for index, block in enumerate(content_blocks(response, message_id)):
        yield from _block_events(index, block)
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": response.effective_stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": response.usage.output_tokens},
    }
    yield {"type": "message_stop"}


def _block_events(index: int, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block["type"]
    if kind == "text":
        yield {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        }
        delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    elif kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        yield {"type": "content_block_start", "index": index, "content_block": start}
        yield {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
        }
        yield {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": block["signature"]},
        }
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        yield {"type": "content_block_start", "index": index, "content_block": start}
        yield {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
        }
    yield {"type": "content_block_stop", "index": index}


def encode_sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
