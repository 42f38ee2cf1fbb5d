"""Content capture: off by default; when on, values are rendered as JSON and bounded.

A truncated value must stay valid JSON (a backend parses `gen_ai.input.messages` and drops
what does not parse), so strings are cut inside the structure, and a list of messages keeps
its most recent entries when the whole would exceed the total budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_LIMIT = 4096
"""Characters kept of each string (a message part, a tool argument, a result)."""
TOTAL_FACTOR = 8
"""A rendered list holds at most TOTAL_FACTOR * limit characters (or its last item alone)."""
STRUCTURAL = frozenset({"role", "type", "finish_reason", "id", "name", "mime_type"})
"""Keys of the conventions' message JSON whose values are never cut (they are short)."""


class Precut(str):
    """The first characters of a longer text and its whole length: what a producer kept of
    a text it would not hold whole (a streamed response). `cut` treats it as the whole."""

    total: int

    @classmethod
    def of(cls, head: str, total: int) -> Precut:
        text = cls(head)
        text.total = total
        return text


@dataclass(frozen=True, slots=True)
class ContentPolicy:
    capture: bool = False
    limit: int = DEFAULT_LIMIT

    def cut(self, text: str) -> str:
        total = text.total if isinstance(text, Precut) else len(text)
        if total <= self.limit:
            return str(text)
        head = text[: self.limit]
        return head + f"...[truncated {total - len(head)} chars]"

    def bounded(self, value: Any) -> Any:
        """`value` with every string cut to the limit (dict keys kept as they are)."""
        if isinstance(value, str):
            return self.cut(value)
        if isinstance(value, Mapping):
            return {
                str(k): v if k in STRUCTURAL and isinstance(v, str) else self.bounded(v)
                for k, v in value.items()
            }
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return [self.bounded(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.cut(str(value))

    def render(self, value: Any) -> str | None:
        """JSON text for a content attribute (a string stays the string itself), or None
        when capture is off."""
        if not self.capture:
            return None
        bounded = self.bounded(value)
        return bounded if isinstance(bounded, str) else json.dumps(bounded, ensure_ascii=False)

    def render_list(self, items: Sequence[Any]) -> str | None:
        """A JSON list (messages, parts): the most recent items that fit the total budget,
        and always the last one; None when capture is off."""
        if not self.capture:
            return None
        kept: list[str] = []
        size = 0
        for item in reversed(items):
            text = json.dumps(self.bounded(item), ensure_ascii=False)
            if kept and size + len(text) > self.limit * TOTAL_FACTOR:
                break
            kept.append(text)
            size += len(text)
        return "[" + ",".join(reversed(kept)) + "]"


def capture_enabled(value: str | None) -> bool:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT semantics: `true` turns it on."""
    return (value or "").strip().lower() == "true"
