"""agent-gateway: policy, compaction audit and tracing for the Claude Code agent loop."""

__version__ = "0.1.0"
