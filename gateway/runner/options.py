"""The options of a run the gateway starts (`agent-gateway run`, remote runs, the demo).

Named and typed as in claude_agent_sdk.ClaudeAgentOptions, so that the policy's limits
(runner/wiring.py apply_limits) and a team budget (runner/budget.py admit) apply to either; this
one is the subset a run uses, and importing it costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions


@dataclass(frozen=True)
class RunOptions:
    cwd: str | None = None
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    permission_mode: str | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    effort: str | None = None
    resume: str | None = None
    fork_session: bool = False
    settings: str | None = None
    """A settings file path (relative to `cwd`) or a JSON object."""
    include_partial_messages: bool = False
    """Whether the caller sees stream_event lines (the gateway always reads them)."""
    extra_args: dict[str, str | None] = field(default_factory=dict)
    """Further Claude Code flags by name (`autocompact`); None for a flag without value."""
    env: dict[str, str] = field(default_factory=dict)
    """Set in Claude Code's environment, over the base one."""
    base_env: dict[str, str] | None = None
    """What Claude Code's environment starts from: None, the gateway's own less its secrets
    (`agent-gateway run`, runner/agent_env.py local_agent_env); a remote run passes serve's
    allow-listed one (remote_agent_env)."""


AnyOptions = TypeVar("AnyOptions", "ClaudeAgentOptions", RunOptions)
"""Either options type, for what applies to both (limits, a budget's cap)."""
