"""One tool call: its facts, and its span attributes and status: pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.model import AttributeValue, SpanEvent, SpanStatus
from gateway.types import FAIL_CLOSED_RULE, Decision

MCP_PREFIX = "mcp__"
DECISION_UNKNOWN = "unknown"
"""`agent_gateway.policy.decision` of a tool span whose decision this process did not see
(behind `serve`, the PreToolUse went to another replica)."""


@dataclass(slots=True)
class ToolCallState:
    tool_use_id: str
    name: str
    span_id: int
    start_ns: int
    end_ns: int | None = None
    decision: Decision | None = None
    is_error: bool | None = None
    permission_decision: str | None = None
    permission_source: str | None = None
    input: Any = None
    result: Any = None
    task_id: str = ""
    task_status: str = ""
    incomplete: bool = False
    agent_id: str = ""
    decided_ns: int | None = None
    """When the PreToolUse decision was made (the deny event's time)."""

    @property
    def denied_by_policy(self) -> bool:
        return self.decision is not None and self.decision.kind == "deny"

    @property
    def denied(self) -> bool:
        return self.denied_by_policy or self.permission_decision == "reject"


def tool_type(name: str) -> str:
    """GenAI `gen_ai.tool.type`: MCP tools are extensions, Claude Code's own are functions."""
    return "extension" if name.startswith(MCP_PREFIX) else "function"


def tool_attributes(
    tool: ToolCallState, *, split_cost: float | None, content: ContentPolicy
) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {
        A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
        A.GEN_AI_TOOL_NAME: tool.name,
        A.GEN_AI_TOOL_CALL_ID: tool.tool_use_id,
        A.GEN_AI_TOOL_TYPE: tool_type(tool.name),
    }
    if tool.is_error is not None:
        attrs[A.TOOL_IS_ERROR] = tool.is_error
    if tool.decision is not None:
        attrs[A.POLICY_DECISION] = tool.decision.kind
        attrs[A.POLICY_WOULD_DENY] = tool.decision.would_deny
        attrs[A.POLICY_ENFORCED_BY] = tool.decision.enforced_by
        if tool.decision.rule_id:
            attrs[A.POLICY_RULE_ID] = tool.decision.rule_id
        if tool.decision.reason:
            attrs[A.POLICY_REASON] = tool.decision.reason
    if tool.permission_decision:
        attrs[A.TOOL_PERMISSION_DECISION] = tool.permission_decision
    if tool.permission_source:
        attrs[A.TOOL_PERMISSION_SOURCE] = tool.permission_source
    if split_cost is not None:
        attrs[A.TOOL_SPLIT_COST_USD] = split_cost
    if tool.task_id:
        attrs[A.TASK_ID] = tool.task_id
    if tool.task_status:
        attrs[A.TASK_STATUS] = tool.task_status
    if tool.incomplete:
        attrs[A.INCOMPLETE] = True
    if tool.agent_id:
        attrs[A.AGENT_ID] = tool.agent_id
    if tool_status(tool).code == "error":
        attrs[A.ERROR_TYPE] = "tool_error"
    arguments = content.render(M.arguments_object(tool.input)) if tool.input is not None else None
    if arguments is not None:
        attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] = arguments
    # The conventions record a result only for a call that succeeded.
    if tool.result is not None and not tool.is_error and not tool.denied:
        result = content.render(M.tool_result_text(tool.result))
        if result is not None:
            attrs[A.GEN_AI_TOOL_CALL_RESULT] = result
    return attrs


def tool_status(tool: ToolCallState) -> SpanStatus:
    """ERROR only when something failed: the tool, or the gateway (a fail-closed deny: it
    could not decide). A deny by a rule or by Claude Code's permissions is the gateway or the
    user doing their job: status unset, and an event."""
    if tool.decision is not None and tool.decision.rule_id == FAIL_CLOSED_RULE:
        return SpanStatus("error", "the gateway could not decide")
    if tool.denied:
        return SpanStatus()
    if tool.is_error:
        return SpanStatus("error", "tool error")
    return SpanStatus()


def tool_events(tool: ToolCallState) -> tuple[SpanEvent, ...]:
    """The deny as an event: rule id and reason (the policy's), or Claude Code's source."""
    at = tool.decided_ns if tool.decided_ns is not None else tool.start_ns
    if tool.denied_by_policy and tool.decision is not None:
        attrs: dict[str, AttributeValue] = {A.POLICY_DECISION: tool.decision.kind}
        if tool.decision.rule_id:
            attrs[A.POLICY_RULE_ID] = tool.decision.rule_id
        if tool.decision.reason:
            attrs[A.POLICY_REASON] = tool.decision.reason
        return (SpanEvent(A.EVENT_POLICY_DENY, at, attrs),)
    if tool.permission_decision == "reject":
        source = {A.TOOL_PERMISSION_SOURCE: tool.permission_source or "claude"}
        return (SpanEvent(A.EVENT_PERMISSION_REJECT, at, source),)
    return ()
