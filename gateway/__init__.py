"""agent-gateway: policy, compaction audit and tracing for the Claude Code agent loop."""

from gateway.errors import GatewayError, PolicyError
from gateway.types import Decision, ToolCall

__version__ = "0.1.0"

# Loaded on first use: hook processes must start fast, and `query` pulls in claude_agent_sdk
# (about a second).
_LAZY = {
    "Attachments": "gateway.runner.attachments",
    "MessageTap": "gateway.runner.attachments",
    "query": "gateway.runner.query",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gateway' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "Attachments",
    "Decision",
    "GatewayError",
    "MessageTap",
    "PolicyError",
    "ToolCall",
    "query",
]
