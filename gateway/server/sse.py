"""Incremental Server-Sent Events decoding for the proxy's tap: pure, no I/O."""

from __future__ import annotations

import json
from typing import Any


class SseDecoder:
    """Feed bytes as they arrive; get back each complete event's JSON data."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer += chunk
        events: list[dict[str, Any]] = []
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                return events
            line = self._buffer[:newline].rstrip(b"\r")
            self._buffer = self._buffer[newline + 1 :]
            if not line:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
            elif line.startswith(b"data:"):
                self._data.append(line[5:].removeprefix(b" "))

    def _dispatch(self) -> dict[str, Any] | None:
        data, self._data = b"\n".join(self._data), []
        if not data:
            return None
        try:
            value = json.loads(data)
        except ValueError:
            return None  # a malformed event is the client's problem; the tap just skips it
        return value if isinstance(value, dict) else None
