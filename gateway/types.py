"""Plain values shared across the gateway: stdlib only, no behaviour beyond construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
"""A value that genuinely is arbitrary JSON: a tool's input, MCP arguments, a hook input kept
whole for the archive. Wire shapes the gateway knows are TypedDicts beside their parsers."""
JSONObject: TypeAlias = "dict[str, JSON]"

DecisionKind = Literal["allow", "deny", "ask", "abstain"]
EnforcedBy = Literal["hook", "sandbox", "claude-code"]
"""Which layer enforces a decision: the hook's answer, or Claude Code's OS sandbox for what
the hook left to it (a path computed at run time, what an unknown program opens)."""
"""`abstain` means no rule applied: Claude Code's own permission flow decides."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as a PreToolUse hook sees it, from any vantage point."""

    tool_name: str
    tool_input: Mapping[str, JSON]
    tool_use_id: str = ""
    session_id: str = ""
    cwd: str = ""
    prompt_id: str = ""
    agent_id: str = ""
    agent_type: str = ""
    permission_mode: str = ""
    transcript_path: str = ""
    environ: Mapping[str, str] = field(default_factory=dict)
    """The environment the call runs in (Claude Code passes its own to the hook), handed in
    by the shell (gateway.env), not part of the hook input: what `~` (its HOME; else the
    password database's entry) and the variables a Bash command inherits stand for. The
    evaluator reads no environment of its own."""


FLOOR_RULE = "claude-code:permissions.deny"
"""The rule id of a refusal by Claude Code's own permission rules (the floor the gateway
mirrors into its settings), which no hook saw."""
FAIL_CLOSED_RULE = "gateway.fail-closed"
"""The rule id of every deny the gateway gives because it could not decide."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of evaluating a policy against one tool call.

    `kind` is what Claude Code is told. In monitor mode a matching deny is recorded as
    `would_deny=True` while `kind` stays what the call would otherwise get.
    """

    kind: DecisionKind
    rule_id: str = ""
    reason: str = ""
    would_deny: bool = False
    matched: str = ""
    """The simple command, path or host the rule matched, for explanations."""
    policy_hash: str = ""
    self_protection: bool = True
    """False when the org policy turned the built-in self-protection rules off."""
    enforced_by: EnforcedBy = "hook"
    """`sandbox` when a file rule could apply but only the kernel can tell, and the session's
    OS sandbox (compiled from this policy) holds it; `rule_id` and `reason` then name it
    unless another rule decided."""


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """A PreCompact hook input."""

    session_id: str
    transcript_path: str
    trigger: str
    custom_instructions: str | None = None
    prompt_id: str = ""
    cwd: str = ""
    raw: Mapping[str, JSON] = field(default_factory=dict)
    """The hook input as received, archived with the transcript."""
