"""Content capture: off by default; when on, values are rendered as text and truncated."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class ContentPolicy:
    capture: bool = False
    limit: int = DEFAULT_LIMIT

    def render(self, value: Any) -> str | None:
        """Text for a content attribute, or None when capture is off."""
        if not self.capture:
            return None
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(text) <= self.limit:
            return text
        return text[: self.limit] + f"...[truncated {len(text) - self.limit} chars]"


def capture_enabled(value: str | None) -> bool:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT semantics: `true` turns it on."""
    return (value or "").strip().lower() == "true"
