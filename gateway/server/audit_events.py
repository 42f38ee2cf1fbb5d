"""Audit records for hook requests that the policy does not decide.

Every hook request the service handles leaves one record: PreToolUse decisions are written by
the engine; everything else (observed events, the archive step, refusals) is written here,
saying what happened and that nothing was decided, so a gap in the log is never silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

NONE = "none"
"""The gateway decided nothing: the event is observed (spans, the archive step)."""
REFUSED = "refused"
"""The request was refused before anything ran (another tenant's session, a bad transcript)."""
BLOCK = "block"
"""PreCompact: compaction was blocked (archive required and not written)."""


def event_record(
    event: str,
    body: Mapping[str, Any],
    tenant: str,
    *,
    decision: str,
    reason: str,
    now: datetime | None = None,
    **extra: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "time": (now or datetime.now(UTC)).isoformat(timespec="microseconds"),
        "event": event,
        "session_id": _text(body.get("session_id")),
        "tenant": tenant,
        "decision": decision,
        "reason": reason,
    }
    for key, field in (("tool_use_id", "tool_use_id"), ("tool", "tool_name"),
                       ("agent_id", "agent_id")):
        value = _text(body.get(field))
        if value:
            record[key] = value
    record.update(extra)
    return record


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
