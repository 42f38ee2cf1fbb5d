"""`trace show` names the rule that denied a tool call once per line."""

from __future__ import annotations

from gateway.telemetry import attributes as A
from gateway.telemetry.model import SpanSpec, SpanStatus
from gateway.telemetry.show import span_label

RULE = "org.yaml:permissions.deny[1]"


def test_a_denied_tool_call_names_its_rule_once() -> None:
    span = SpanSpec(
        name="execute_tool Bash", trace_id=1, span_id=2, parent_span_id=None,
        start_ns=0, end_ns=5_000_000,
        attributes={A.POLICY_DECISION: "deny", A.POLICY_RULE_ID: RULE,
                    A.POLICY_REASON: "policy org.yaml denies Bash(rm -rf:*)"},
        status=SpanStatus("error", f"denied [{RULE}]: policy org.yaml denies Bash(rm -rf:*)"),
    )
    line = span_label(span).plain
    assert line.count(RULE) == 1, line
    assert "policy deny [org.yaml:permissions.deny[1]]" in line
    assert "ERROR denied: policy org.yaml denies Bash(rm -rf:*)" in line
