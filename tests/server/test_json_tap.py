"""The top-level fields of a JSON object streamed in chunks: whatever the chunking, nothing
nested or inside a string passes for a top-level field, and memory stays within the cap."""

from __future__ import annotations

import json
import random

from gateway.server.json_tap import TopLevelFields

MESSAGE = {
    "id": "msg_1", "type": "message", "model": "claude-opus-5-5",
    "content": [
        {"type": "text", "text": 'x"}{,:[\\ "usage": {"output_tokens": 1}' * 20},
        {"type": "tool_use", "input": {"usage": {"input_tokens": 1}, "model": "fake"}},
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "output_tokens": 7},
    'k"\\ey': 1,
}


def fed(data: bytes, cuts: list[int], cap: int = 100) -> TopLevelFields:
    fields = TopLevelFields(cap=cap)
    previous = 0
    for cut in [*cuts, len(data)]:
        fields.feed(data[previous:cut])
        previous = cut
    return fields


def test_top_level_fields_whatever_the_chunks() -> None:
    data = json.dumps(MESSAGE).encode()
    rng = random.Random(7)
    expected = {k: v for k, v in MESSAGE.items() if k != "content"}
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(0, 40)))
        assert fed(data, cuts).message() == expected
    assert fed(data, list(range(1, len(data)))).message() == expected  # a byte at a time


def test_large_values_are_dropped_not_kept() -> None:
    fields = fed(json.dumps(MESSAGE).encode(), [])
    assert fields.fields["content"] is None and fields.value("content") is None


def test_not_an_object_or_not_ended_gives_nothing() -> None:
    assert fed(b'[{"usage": {}}]', []).message() is None
    assert fed(b'{"usage": {"input_tokens": 1}', []).message() is None
