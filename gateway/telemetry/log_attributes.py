"""Every attribute name on the gateway's OpenTelemetry log records, once.

One log record per audit record (a decision) and per archive written: the body is the record
itself as canonical JSON (the audit record or the manifest, with its hash and MAC), so a copy
received elsewhere can be hashed again; these attributes make it searchable without parsing.
README.md's "Log record attributes" table lists all of them; a test keeps the two in step.
"""

from __future__ import annotations

from typing import Final

from gateway.telemetry import attributes as A

# Event names (the log record's event_name).
EVENT_DECISION: Final = "agent_gateway.audit.decision"
EVENT_ARCHIVE: Final = "agent_gateway.audit.archive"

AUDIT_CHAIN: Final = "agent_gateway.audit.chain"
AUDIT_POSITION: Final = "agent_gateway.audit.position"
AUDIT_HASH: Final = "agent_gateway.audit.hash"

POLICY_DECISION: Final = A.POLICY_DECISION
POLICY_RULE_ID: Final = A.POLICY_RULE_ID
GEN_AI_TOOL_NAME: Final = A.GEN_AI_TOOL_NAME
GEN_AI_CONVERSATION_ID: Final = A.GEN_AI_CONVERSATION_ID

ARCHIVE_STORE: Final = "agent_gateway.archive.store"
COMPACTION_ARCHIVE_ID: Final = A.COMPACTION_ARCHIVE_ID
COMPACTION_TRIGGER: Final = A.COMPACTION_TRIGGER

EVENT_NAMES = (EVENT_DECISION, EVENT_ARCHIVE)
