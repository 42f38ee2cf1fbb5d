"""A response folded with its content capped renders what the whole response renders."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.telemetry import attributes as A
from gateway.telemetry.chat import ChatAccumulator, chat_content
from gateway.telemetry.content import ContentPolicy


def _events(text_pieces: list[str], tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    raw = json.dumps(tool_input)
    return [
        {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                       "text": ""}},
        *({"type": "content_block_delta", "index": 0,
           "delta": {"type": "text_delta", "text": p}} for p in text_pieces),
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}},
        *({"type": "content_block_delta", "index": 1,
           "delta": {"type": "input_json_delta", "partial_json": raw[i : i + 7]}}
          for i in range(0, len(raw), 7)),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
    ]


def _fold(events: list[dict[str, Any]], cap: int | None) -> ChatAccumulator:
    acc = ChatAccumulator(content_cap=cap)
    for event in events:
        acc.apply(event)
    return acc


@pytest.mark.parametrize("text_len", [0, 5, 39, 40, 41, 3000])
def test_capped_fold_renders_like_the_whole(text_len: int) -> None:
    policy = ContentPolicy(capture=True, limit=40)
    text = "".join(chr(ord("a") + i % 26) for i in range(text_len))
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    events = _events(pieces, {"file_path": "/x", "content": "y" * 500})
    whole, capped = _fold(events, None), _fold(events, policy.limit)
    assert chat_content(capped, policy, None) == chat_content(whole, policy, None)
    assert all(t.kept <= policy.limit for t in capped.text_blocks)


def test_a_tool_input_over_its_cap_is_shown_cut_not_parsed() -> None:
    policy = ContentPolicy(capture=True, limit=10)
    events = _events(["hi"], {"content": "y" * 5000})
    acc = _fold(events, policy.limit)
    (tool,) = acc.tool_uses
    assert tool.raw_input.kept == 640 and tool.raw_input.total > 5000
    (message,) = json.loads(str(chat_content(acc, policy, None)[A.GEN_AI_OUTPUT_MESSAGES]))
    arguments = message["parts"][1]["arguments"]
    assert arguments.startswith('{"content"') and "...[truncated" in arguments


def test_nothing_is_kept_with_a_cap_of_zero() -> None:
    acc = _fold(_events(["abc"] * 1000, {"a": 1}), 0)
    assert acc.texts == [""] and acc.tool_uses[0].raw_input.kept == 0
    assert acc.stop_reason == "tool_use"
