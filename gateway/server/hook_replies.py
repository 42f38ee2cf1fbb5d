"""What `serve` answers a hook request with: the reply (status, body, work for after it is
sent), the refusals that still carry a deny or a block, and the audit record of a deny no
decision worker wrote."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

from gateway.audit.record import DecisionRecord, EventRecord, decision_record
from gateway.errors import GatewayError, one_line
from gateway.hookio.parse import parse_pre_tool_use
from gateway.hookio.render import render_block, render_deny
from gateway.hookio.wire import PreCompactOutput, PreToolUseHookSpecificOutput, PreToolUseOutput
from gateway.server import audit_events as ev
from gateway.tenancy.tokens import Caller
from gateway.types import Decision


class HookRefusal(TypedDict, total=False):
    """A hook request answered with an error status: why, and for the events that block,
    the blocking answer too (a client that reads the body anyway never sees an allow)."""

    error: str
    hookSpecificOutput: PreToolUseHookSpecificOutput
    decision: Literal["block"]
    reason: str


HookAnswer = PreToolUseOutput | PreCompactOutput | HookRefusal


@dataclass(frozen=True)
class HookReply:
    status: int
    body: HookAnswer
    after: Callable[[], None] | None = None
    """Work for after the answer is sent (spans, the off-host copy of the audit record):
    the caller runs it once the response is written."""


def deny_record(body: Mapping[str, Any], decision: Decision, caller: Caller
                 ) -> dict[str, object]:
    """The record of a deny no worker wrote (the decision path could not run)."""
    record: DecisionRecord | EventRecord
    try:
        record = decision_record(parse_pre_tool_use(dict(body)), decision)
    except GatewayError:
        record = ev.event_record(
            "PreToolUse", dict(body), caller.name, decision="deny", reason=decision.reason,
            rule_id=decision.rule_id,
        )
    return {**record, "tenant": caller.name}


def bad_request(event: str, status: int, message: str) -> HookReply:
    """A hook body the gateway will not read: 4xx, and for PreToolUse a deny as well."""
    reason = f"agent-gateway could not read the hook input: {message}"
    return cannot_decide(event, status, reason, error=message)


def cannot_decide(event: str, status: int, reason: str, *, error: str = "") -> HookReply:
    reason = " ".join(reason.split())
    # A client that reads the body anyway must see a deny or block, never a silent allow.
    answer: PreToolUseOutput | PreCompactOutput = {}
    if event == "PreToolUse":
        answer = render_deny(reason)
    elif event == "PreCompact":
        answer = render_block(reason)
    return HookReply(status, cast(HookRefusal, {**answer, "error": error or reason}))


def cannot_answer(event: str, exc: BaseException) -> HookReply:
    """A hook request whose handling failed: 500, and the blocking answer for the events
    that block (an http hook with `onFailure: block` blocks on the 500 alone)."""
    reason = f"agent-gateway could not answer: {one_line(exc, typed=True)}"
    return cannot_decide(event, 500, reason)
