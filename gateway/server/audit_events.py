"""Audit records for hook requests that the policy does not decide.

Every hook request the service handles leaves one record: PreToolUse decisions are written by
the engine; everything else (observed events, the archive step, refusals) is written here,
saying what happened and that nothing was decided, so a gap in the log is never silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from gateway.audit.record import EventRecord

NONE = "none"
"""The gateway decided nothing: the event is observed (spans, the archive step)."""
REFUSED = "refused"
"""The request was refused before anything ran (another tenant's session, a bad transcript)."""
BLOCK = "block"
"""PreCompact: compaction was blocked (archive required and not written)."""
TENANT_RULE = "gateway.tenant"
BUDGET_RULE = "gateway.budget"
"""The rule ids of refusals: another tenant's session, a team's budget."""
REMOTE_RUN = "RemoteRun"
MODEL_REQUEST = "ModelRequest"
"""Audit event names for refusals outside the hooks: /v1/runs and the Messages API proxy."""


def event_record(
    event: str,
    body: Mapping[str, object],
    tenant: str,
    *,
    decision: str,
    reason: str,
    now: datetime | None = None,
    rule_id: str = "",
    archive_id: str | None = None,
    cwd: str | None = None,
) -> EventRecord:
    record: EventRecord = {
        "time": (now or datetime.now(UTC)).isoformat(timespec="microseconds"),
        "event": event,
        "session_id": _text(body.get("session_id")),
        "tenant": tenant,
        "decision": decision,
        "reason": reason,
    }
    if tool_use_id := _text(body.get("tool_use_id")):
        record["tool_use_id"] = tool_use_id
    if tool := _text(body.get("tool_name")):
        record["tool"] = tool
    if agent_id := _text(body.get("agent_id")):
        record["agent_id"] = agent_id
    if rule_id:
        record["rule_id"] = rule_id
    if archive_id is not None:
        record["archive_id"] = archive_id
    if cwd is not None:
        record["cwd"] = cwd
    return record


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
