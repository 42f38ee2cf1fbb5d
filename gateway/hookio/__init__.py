"""Claude Code hook wire format: typed JSON in, plain values out, and back."""

from gateway.hookio.parse import parse_pre_tool_use
from gateway.hookio.render import render_pre_tool_use
from gateway.hookio.wire import (
    PreToolUseHookSpecificOutput,
    PreToolUseInput,
    PreToolUseOutput,
)

__all__ = [
    "PreToolUseHookSpecificOutput",
    "PreToolUseInput",
    "PreToolUseOutput",
    "parse_pre_tool_use",
    "render_pre_tool_use",
]
