"""Incremental Server-Sent Events decoding for the proxy's tap: pure, no I/O.

Linear in the stream: each byte is scanned once, and after a `feed` the buffer holds at most
the one line not yet ended. Memory is bounded too: an event (or a line) larger than
`max_event` bytes is skipped, not buffered (the client still gets every byte: the tap only
reads a copy).
"""

from __future__ import annotations

import json
from typing import Any

MAX_EVENT = 4 * 1024 * 1024
"""Bytes of one event's data the tap decodes; a larger event is skipped."""


class SseDecoder:
    """Feed bytes as they arrive; get back each complete event's JSON data."""

    def __init__(self, max_event: int = MAX_EVENT) -> None:
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._size = 0
        self._skipping = False
        """The event (or line) in progress went over `max_event`: dropped until it ends."""
        self._max = max_event

    @property
    def buffered(self) -> int:
        """Bytes held of the line not yet ended."""
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        buffer = self._buffer
        start = len(buffer)
        buffer += chunk
        begin = 0
        # Only the new bytes can hold a newline: the buffer held none before.
        newline = buffer.find(b"\n", start)
        while newline >= 0:
            self._line(bytes(buffer[begin:newline]).rstrip(b"\r"), events)
            begin = newline + 1
            newline = buffer.find(b"\n", begin)
        del buffer[:begin]
        if len(buffer) > self._max:  # a line that never ends: not kept
            buffer.clear()
            self._drop()
        return events

    def _line(self, line: bytes, events: list[dict[str, Any]]) -> None:
        if not line:
            event = self._dispatch()
            if event is not None:
                events.append(event)
        elif line.startswith(b"data:") and not self._skipping:
            data = line[5:].removeprefix(b" ")
            self._size += len(data) + 1
            if self._size > self._max:
                self._drop()
            else:
                self._data.append(data)

    def _drop(self) -> None:
        self._data, self._size, self._skipping = [], 0, True

    def _dispatch(self) -> dict[str, Any] | None:
        data, self._data, self._size = b"\n".join(self._data), [], 0
        self._skipping = False
        if not data:
            return None
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            return None  # a malformed event is the client's problem; the tap just skips it
        return value if isinstance(value, dict) else None
