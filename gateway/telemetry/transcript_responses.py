"""The model's responses as a Claude Code transcript (JSONL) records them: pure.

Where no proxy sees the Messages API (sessions wired with local command hooks), the transcript
is the record of each response: Claude Code writes one line per content block, each carrying
the response's id, model, usage and stop reason. Lines of one response are merged back into the
response the API sent, in the order they were written. Claude Code's own stand-ins (an API
error it reports as a message, the `<synthetic>` model) are not responses of the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

SYNTHETIC_MODEL = "<synthetic>"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class TranscriptResponse:
    """One response: when the transcript recorded its last block, and the message itself."""

    at_ns: int
    agent_id: str
    message: dict[str, Any] = field(default_factory=dict)

    @property
    def message_id(self) -> str:
        return str(self.message.get("id") or "")


def stamp_ns(raw: object) -> int | None:
    """An ISO 8601 transcript timestamp in ns since the epoch, or None."""
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return (when - EPOCH) // timedelta(microseconds=1) * 1000  # exact, unlike a float


def responses_in(lines: Iterable[bytes | str]) -> list[TranscriptResponse]:
    """The responses of a transcript, in the order their first line came."""
    found: dict[str, TranscriptResponse] = {}
    for line in lines:
        record = _record(line)
        if record is None or record.get("type") != "assistant" or record.get(
                "isApiErrorMessage"):
            continue
        message = record.get("message")
        at = stamp_ns(record.get("timestamp"))
        if not isinstance(message, dict) or at is None:
            continue
        message_id = message.get("id")
        if not isinstance(message_id, str) or not message_id or message.get(
                "model") == SYNTHETIC_MODEL:
            continue
        blocks = message.get("content")
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        agent = record.get("agentId") if record.get("isSidechain") else ""
        known = found.get(message_id)
        if known is None:
            found[message_id] = TranscriptResponse(
                at, agent if isinstance(agent, str) else "",
                {"type": "message", **message, "content": blocks})
            continue
        known.at_ns = max(known.at_ns, at)
        # Each line repeats the response's fields; only its content block is new.
        known.message = {"type": "message", **message,
                         "content": [*known.message["content"], *blocks]}
    return list(found.values())


def _record(line: bytes | str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None
