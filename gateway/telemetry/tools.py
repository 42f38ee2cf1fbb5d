"""One tool call: its mutable state while open, and its span attributes and status: pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.model import AttributeValue, SpanStatus
from gateway.types import Decision

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
    turn_span_id: int | None = None
    parent_tool_use_id: str | None = None
    chat_message_id: str | None = None
    input: Any = None
    result: Any = None
    task_id: str = ""
    task_status: str = ""
    task_open: bool = False
    result_seen: bool = False
    incomplete: bool = False
    emitted: bool = False

    @property
    def denied(self) -> bool:
        by_policy = self.decision is not None and self.decision.kind == "deny"
        return by_policy or self.permission_decision == "reject"


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
    if tool.parent_tool_use_id:
        attrs[A.PARENT_TOOL_USE_ID] = tool.parent_tool_use_id
    if tool.task_id:
        attrs[A.TASK_ID] = tool.task_id
    if tool.task_status:
        attrs[A.TASK_STATUS] = tool.task_status
    if tool.incomplete:
        attrs[A.INCOMPLETE] = True
    status = tool_status(tool)
    if status.code == "error":
        attrs[A.ERROR_TYPE] = "permission_denied" if tool.denied else "tool_error"
    arguments = content.render(tool.input) if tool.input is not None else None
    if arguments is not None:
        attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] = arguments
    result = content.render(tool.result) if tool.result is not None else None
    if result is not None:
        attrs[A.GEN_AI_TOOL_CALL_RESULT] = result
    return attrs


def tool_status(tool: ToolCallState) -> SpanStatus:
    """ERROR when denied (by the policy or Claude Code's permissions) or when the tool failed."""
    if tool.decision is not None and tool.decision.kind == "deny":
        rule = f" [{tool.decision.rule_id}]" if tool.decision.rule_id else ""
        return SpanStatus("error", f"denied{rule}: {tool.decision.reason}".rstrip(": "))
    if tool.permission_decision == "reject":
        return SpanStatus("error", f"permission rejected by {tool.permission_source or 'claude'}")
    if tool.is_error:
        return SpanStatus("error", "tool error")
    return SpanStatus()
