"""The lines of a JSONL source, streamed: a file of any size is read one line at a time, and
a line over the cap is read past, never held."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longer than any line Claude Code or the gateway writes: a transcript line holds one message
(tool results are cut by Claude Code long before this), an audit record at most 16 KiB of
input. A longer line is reported and skipped."""
_CHUNK = 1024 * 1024


def capped_lines(stream: BinaryIO, cap: int = MAX_LINE_BYTES
                 ) -> Iterator[tuple[int, bytes | None]]:
    """(1-based line number, the line) for each line that is not blank; None in place of a
    line longer than `cap` bytes."""
    number = 0
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        number += 1
        if len(line) > cap and not line.endswith(b"\n"):
            while True:  # read past the rest of it, a chunk at a time
                rest = stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, None
        elif line.strip():
            yield number, line
