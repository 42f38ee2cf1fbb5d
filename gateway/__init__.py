"""agent-gateway: policy, compaction audit and tracing for the Claude Code agent loop."""

from gateway.attachments import Attachments, MessageTap
from gateway.errors import GatewayError, PolicyError
from gateway.types import Decision, ToolCall

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `query` pulls in claude_agent_sdk (about a second); hook commands must not pay for it.
    if name == "query":
        from gateway.runner import query

        return query
    raise AttributeError(f"module 'gateway' has no attribute {name!r}")


__all__ = [
    "Attachments",
    "Decision",
    "GatewayError",
    "MessageTap",
    "PolicyError",
    "ToolCall",
    "query",
]
