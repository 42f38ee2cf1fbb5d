from __future__ import annotations

import pytest

from gateway.server.sse import SseDecoder

STREAM = (
    b'event: message_start\r\ndata: {"type": "message_start"}\r\n\r\n'
    b": a comment\n"
    b'event: ping\ndata: {"type": "ping"}\n\n'
    b"data: not json\n\n"
    b'data: {"type":\ndata: "message_stop"}\n\n'
)


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_events_survive_any_chunking(size: int) -> None:
    decoder = SseDecoder()
    events = []
    for i in range(0, len(STREAM), size):
        events.extend(decoder.feed(STREAM[i : i + size]))
    assert [e["type"] for e in events] == ["message_start", "ping", "message_stop"]


def test_incomplete_event_is_held_back() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b'data: {"type": "x"}\n') == []
    assert decoder.feed(b"\n") == [{"type": "x"}]
