"""The top-level fields of a JSON object that streams past in chunks, in bounded memory.

A non-streaming Messages API response of any size is priced from its top-level `model` and
`usage` (the API writes usage after the content); the content, which is what makes a body
large, is skipped. Each top-level value is kept raw while it is at most `cap` bytes and
dropped past that, so what one response holds is O(cap), whatever its size. Strings are
skipped whole (brackets and quotes inside them are escaped or inert), so nothing nested can
pass for a top-level field.
"""

from __future__ import annotations

import json
import re
from typing import Any

_OUTSIDE = re.compile(rb'["{}\[\],:]')
_INSIDE = re.compile(rb'["\\]')
CAP = 64 * 1024


class TopLevelFields:
    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self.depth = 0
        self._in_string = False
        self._escaped = False
        self._key_string = False
        self._key = bytearray()
        self._value: bytearray | None = None
        """The current top-level value's bytes (None: not in one, or over the cap)."""
        self._in_value = False
        self.fields: dict[str, bytes | None] = {}
        """Top-level key -> its raw value (None when it was over the cap)."""
        self.ended = False
        self.broken = False
        """Not a JSON object as far as the structure goes (the fields are not to be trusted)."""

    def feed(self, chunk: bytes) -> None:
        if self.broken or self.ended:
            return
        pos, n = 0, len(chunk)
        value_from = 0  # where the current value's bytes start in this chunk
        while pos < n:
            if self._in_string:
                pos = self._through_string(chunk, pos)
                continue
            found = _OUTSIDE.search(chunk, pos)
            if found is None:
                break
            at = found.start()
            pos = at + 1
            value_from = self._structure(chunk, at, value_from)
            if self.broken or self.ended:
                return
        if self._in_value:
            self._add(chunk[value_from:])

    def _through_string(self, chunk: bytes, pos: int) -> int:
        """Where scanning goes on after the string's bytes in this chunk (a key's are kept)."""
        n = len(chunk)
        if self._escaped:
            self._escaped = False
            if self._key_string:
                self._key += chunk[pos:pos + 1]
            return pos + 1
        found = _INSIDE.search(chunk, pos)
        if found is None:
            if self._key_string:
                self._key += chunk[pos:]
            return n
        at = found.start()
        if chunk[at] == 0x5C:  # a backslash: the next byte is escaped
            if self._key_string:
                self._key += chunk[pos:at + 2]
            if at + 1 < n:
                return at + 2
            self._escaped = True
            return n
        if self._key_string:
            self._key += chunk[pos:at]
        self._in_string = False
        return at + 1

    def _structure(self, chunk: bytes, at: int, value_from: int) -> int:
        """One structural byte outside strings; returns where the current value starts."""
        char = chunk[at]
        if char == 0x22:  # "
            self._in_string = True
            self._key_string = self.depth == 1 and not self._in_value
            if self._key_string:
                self._key.clear()
        elif char in (0x7B, 0x5B):  # { [
            if self.depth == 0 and char != 0x7B:
                self.broken = True
            else:
                self.depth += 1
        elif char in (0x7D, 0x5D):  # } ]
            self.depth -= 1
            if self.depth < 0:
                self.broken = True
            elif self.depth == 0:
                self._end_value(chunk[value_from:at])
                self.ended = True
        elif self.depth == 1 and char == 0x3A:  # : after a top-level key
            self._in_value = True
            self._value = bytearray()
            return at + 1
        elif self.depth == 1 and char == 0x2C:  # , between top-level fields
            self._end_value(chunk[value_from:at])
        return value_from

    def _add(self, data: bytes) -> None:
        if self._value is not None:
            if len(self._value) + len(data) > self.cap:
                self._value = None
            else:
                self._value += data

    def _end_value(self, tail: bytes) -> None:
        if not self._in_value:
            return
        self._add(tail)
        try:
            key = json.loads(b'"' + bytes(self._key) + b'"')
        except ValueError:
            key = ""
        self.fields[str(key)] = None if self._value is None else bytes(self._value)
        self._in_value = False
        self._value = None

    def value(self, key: str) -> Any:
        """The field parsed, or None when absent, over the cap or not JSON."""
        raw = self.fields.get(key)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def message(self) -> dict[str, Any] | None:
        """The response as far as pricing and the chat span need it: every small top-level
        field, the content left out. None unless the body was one whole JSON object."""
        if self.broken or not self.ended:
            return None
        return {key: self.value(key) for key, raw in self.fields.items()
                if raw is not None and key != "content"}
