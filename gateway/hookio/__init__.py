"""Claude Code hook wire format: JSON in, plain values out, and typed JSON back."""

from gateway.hookio.parse import parse_pre_tool_use
from gateway.hookio.render import render_block, render_deny, render_pre_tool_use
from gateway.hookio.wire import (
    PreToolUseHookSpecificOutput,
    PreToolUseOutput,
)

__all__ = [
    "PreToolUseHookSpecificOutput",
    "PreToolUseOutput",
    "parse_pre_tool_use",
    "render_block",
    "render_deny",
    "render_pre_tool_use",
]
