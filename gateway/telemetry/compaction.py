"""A context compaction (status: compacting -> compact_boundary or failure): pure.

Claude Code streams nothing of the request that writes the summary, so in `run` its tokens
are what the query's result reports beyond the chats the stream showed (`unaccounted_usage`):
the compaction's own chat span carries them, priced like any chat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.telemetry.pricing import Usage


@dataclass(slots=True)
class Compaction:
    span_id: int
    start_ns: int
    end_ns: int | None = None
    trigger: str | None = None
    pre_tokens: Any = None
    post_tokens: Any = None
    duration_ms: Any = None
    result: str | None = None
    error: str | None = None
    archive_id: str | None = None
    archive_error: str | None = None
    incomplete: bool = False
    cost_usd: float | None = None


_MODEL_USAGE_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cacheReadInputTokens", "cache_read_input_tokens"),
    ("cacheCreationInputTokens", "cache_creation_input_tokens"),
    ("cacheCreationEphemeral1hInputTokens", "cache_creation_1h_input_tokens"),
)


def unaccounted_usage(
    since_last: Mapping[str, Any], chats: Iterable[tuple[str, Usage]]
) -> dict[str, Usage] | None:
    """Per model, the tokens a result's `model_usage_since_last_result` counts beyond the given
    chats' (model, exact usage); None when the stream showed more than the result counts
    (then nothing here can be trusted). Models with nothing left are left out."""
    left: dict[str, dict[str, int]] = {}
    for model, usage in since_last.items():
        if not isinstance(usage, Mapping):
            return None
        left[model] = {field: _int(usage.get(wire)) for wire, field in _MODEL_USAGE_FIELDS}
    for model, usage in chats:
        counts = left.setdefault(model, {field: 0 for _, field in _MODEL_USAGE_FIELDS})
        for _, field in _MODEL_USAGE_FIELDS:
            counts[field] -= getattr(usage, field) or 0
    if any(value < 0 for counts in left.values() for value in counts.values()):
        return None
    return {model: Usage(**counts) for model, counts in left.items() if any(counts.values())}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
