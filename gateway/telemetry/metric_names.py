"""Every metric name, unit and metric attribute the gateway emits, once.

GenAI names follow the OpenTelemetry GenAI semantic conventions; the gateway's own live under
`agent_gateway.`. docs/metrics.md's table lists all of them; a test keeps the two in step.
Attribute values are bounded: team names come from the tokens file, rule ids from the
policy, models and tool names pass through `BoundedValues`; never a session id, a tool input
or user text.
"""

from __future__ import annotations

from typing import Final

from gateway.telemetry import attributes as A

# --- instruments: name, unit ----------------------------------------------------------------
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
COST: Final = "agent_gateway.cost"
POLICY_DECISIONS: Final = "agent_gateway.policy.decisions"
COMPACTIONS: Final = "agent_gateway.compactions"
HOOK_DURATION: Final = "agent_gateway.hook.duration"
BUDGET_REMAINING: Final = "agent_gateway.budget.remaining"
BUDGET_LIMIT: Final = "agent_gateway.budget.limit"
BUDGET_REFUSALS: Final = "agent_gateway.budget.refusals"
BUDGET_UNENFORCED: Final = "agent_gateway.budget.unenforced"
RELOAD_ERRORS: Final = "agent_gateway.policy.reload_errors"

UNITS: Final = {
    TOKEN_USAGE: "{token}",
    OPERATION_DURATION: "s",
    COST: "USD",
    POLICY_DECISIONS: "{decision}",
    COMPACTIONS: "{compaction}",
    HOOK_DURATION: "s",
    BUDGET_REMAINING: "USD",
    BUDGET_LIMIT: "USD",
    BUDGET_REFUSALS: "{request}",
    BUDGET_UNENFORCED: "{request}",
    RELOAD_ERRORS: "{policy}",
}

# --- attributes -------------------------------------------------------------------------------
OPERATION_NAME: Final = A.GEN_AI_OPERATION_NAME
PROVIDER_NAME: Final = A.GEN_AI_PROVIDER_NAME
REQUEST_MODEL: Final = A.GEN_AI_REQUEST_MODEL
TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = A.ERROR_TYPE
TEAM: Final = "agent_gateway.team"
DECISION: Final = A.POLICY_DECISION
RULE_ID: Final = A.POLICY_RULE_ID
TOOL_NAME: Final = A.GEN_AI_TOOL_NAME
MODE: Final = "agent_gateway.policy.mode"
TRIGGER: Final = A.COMPACTION_TRIGGER
ARCHIVE_OUTCOME: Final = "agent_gateway.compaction.archive_outcome"
HOOK_EVENT: Final = "agent_gateway.hook.event"
BUDGET_WINDOW: Final = "agent_gateway.budget.window"
BUDGET_REASON: Final = "agent_gateway.budget.reason"

# --- attribute values -------------------------------------------------------------------------
TOKEN_INPUT: Final = "input"
TOKEN_OUTPUT: Final = "output"
MODE_ENFORCE: Final = "enforce"
MODE_MONITOR: Final = "monitor"
ARCHIVED: Final = "archived"
ARCHIVE_FAILED: Final = "failed"
ARCHIVE_BLOCKED: Final = "blocked"
ARCHIVE_OFF: Final = "off"
OVER_BUDGET: Final = "over_budget"
STORE_UNAVAILABLE: Final = "store_unavailable"
UNPRICED_MODEL: Final = "unpriced_model"
OTHER: Final = "other"
"""What a value beyond an attribute's bound is recorded as."""

TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)
"""Both as the GenAI semantic conventions advise."""
HOOK_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
)
