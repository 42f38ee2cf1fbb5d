"""Hook event names exactly as Claude Code sends them (case-sensitive), as data.

The list is Claude Code 2.1.332's own (its settings schema enumerates these 34 names, and
each one is a `hook_event_name` the binary builds). The gateway's HTTP hooks answer only these:
any other name under /hooks/ is a 404, so a typo in hand-written settings (`pretooluse`) makes
the hook fail, which `onFailure: block` turns into a block, instead of an empty answer that
would let every tool run undecided.
"""

from __future__ import annotations

CLAUDE_CODE_VERSION = "2.1.332"

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
)

BLOCKING_EVENTS = ("PreToolUse", "PreCompact")
"""Events whose failure must stop the agent: a tool call, a compaction without archive."""
OBSERVING_EVENTS = (
    "PostToolUse",
    "PostToolUseFailure",
    "PostCompact",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "StopFailure",
    "UserPromptSubmit",
)
"""Events the trace is built from: tool ends, subagents, compactions, the prompt loop."""
GATEWAY_EVENTS = (*BLOCKING_EVENTS, *OBSERVING_EVENTS)
"""Every event a session's settings wire to the gateway."""


def command_name(event: str) -> str:
    """`PreToolUse` -> `pre-tool-use`: the event as `agent-gateway hook` is told it."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in event).lstrip("-")


COMMAND_EVENTS = {command_name(event): event for event in GATEWAY_EVENTS}
"""`agent-gateway hook`'s event names and the events they are."""

_KNOWN = frozenset(HOOK_EVENTS)
_BY_FOLDED = {name.casefold(): name for name in HOOK_EVENTS}


def is_hook_event(name: str) -> bool:
    return name in _KNOWN


def spelled_like(name: str) -> str | None:
    """The event a wrong-case or dashed spelling means (`pretooluse`, `pre-tool-use`), if any."""
    return _BY_FOLDED.get(name.replace("-", "").replace("_", "").casefold())
