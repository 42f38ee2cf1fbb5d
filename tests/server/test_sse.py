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


def test_buffer_never_holds_more_than_the_line_in_progress() -> None:
    # Decoding is linear: the bytes of ended lines are dropped at once, so the buffer never
    # re-scans (or re-slices) what came before, however the stream is cut.
    event = b'event: content_block_delta\ndata: {"type": "content_block_delta", "i": %d}\n\n'
    stream = b"".join(event % i for i in range(20_000))  # about 1.5 MB
    longest = max(len(line) for line in stream.split(b"\n"))
    decoder = SseDecoder()
    seen = 0
    for i in range(0, len(stream), 7):
        seen += len(decoder.feed(stream[i : i + 7]))
        assert decoder.buffered <= longest
    assert seen == 20_000 and decoder.buffered == 0


def test_oversized_event_is_skipped_and_decoding_goes_on() -> None:
    decoder = SseDecoder(max_event=1000)
    big = b'data: {"type": "huge", "x": "' + b"y" * 5000 + b'"}\n\n'
    events = []
    for i in range(0, len(big), 300):
        events += decoder.feed(big[i : i + 300])
        assert decoder.buffered <= 1000
    events += decoder.feed(b'data: {"type": "after"}\n\n')
    assert events == [{"type": "after"}]


def test_a_line_that_never_ends_is_not_kept() -> None:
    decoder = SseDecoder(max_event=1000)
    for _ in range(100):
        decoder.feed(b"data: " + b"z" * 500)
        assert decoder.buffered <= 1000
    assert decoder.feed(b'\n\ndata: {"type": "after"}\n\n') == [{"type": "after"}]
