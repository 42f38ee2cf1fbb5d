"""What a replay source yields: calls to decide (with the decision the source recorded, if
any), calls that cannot be decided as recorded, and lines that are not what they should be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gateway.types import ToolCall

RAN: Final = "ran"
"""Recorded in a transcript: the call ran and no hook decision was recorded (no hook, or it
left the call to Claude Code's permission flow, which let it run)."""
CLAUDE_CODE_DENIED: Final = "denied-by-claude-code"
"""Recorded in a transcript: Claude Code's own permission flow refused the call (its rules, a
user who said no, a prompt it could not show)."""
HOOK_KINDS: Final = frozenset(("allow", "deny", "ask", "abstain"))


@dataclass(frozen=True, slots=True)
class Recorded:
    """The decision a source recorded for a call: a hook decision (allow, deny, ask,
    abstain), or, where a transcript shows only what Claude Code did, RAN or
    CLAUDE_CODE_DENIED."""

    decision: str
    rule_id: str = ""


@dataclass(frozen=True, slots=True)
class Replayable:
    call: ToolCall
    where: str
    """file:line of the call (a transcript: its tool_use)."""
    recorded: Recorded | None = None
    redacted: bool = False
    """The source kept the input with secrets redacted (an audit log): a rule that matches the
    secret itself cannot match it again."""


@dataclass(frozen=True, slots=True)
class NotDecidable:
    """A call the source recorded but not in a form it can be decided on."""

    where: str
    tool_use_id: str
    tool_name: str
    reason: str


@dataclass(frozen=True, slots=True)
class BadLine:
    where: str
    message: str


Item = Replayable | NotDecidable | BadLine
