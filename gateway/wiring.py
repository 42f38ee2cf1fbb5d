"""Turns a run request into what the gateway attaches: policy, archive, tracing."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from claude_agent_sdk import ClaudeAgentOptions

from gateway.attachments import Attachments

if TYPE_CHECKING:
    from gateway.run_command import RunRequest


def attach_gateway(
    request: RunRequest, attachments: Attachments, err: TextIO
) -> ClaudeAgentOptions:
    """Add the gateway's hooks and taps to `attachments`; return the options to run with."""
    return request.options
