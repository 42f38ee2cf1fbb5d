"""The one place that reads the environment."""

from __future__ import annotations

import os
from pathlib import Path


def gateway_home() -> Path:
    """State directory: the local archive store, the audit log, the local span file."""
    raw = os.environ.get("AGENT_GATEWAY_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".agent-gateway"


def claude_projects_root() -> Path:
    """Where Claude Code keeps transcripts; archiving refuses files outside it."""
    raw = os.environ.get("AGENT_GATEWAY_CLAUDE_PROJECTS")
    if raw:
        return Path(raw).expanduser()
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(config_dir).expanduser() if config_dir else Path.home() / ".claude"
    return base / "projects"


def otel_env() -> dict[str, str]:
    """The standard OTEL_* variables: the only telemetry configuration."""
    return {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}


def policy_paths_from_env() -> list[str]:
    """AGENT_GATEWAY_POLICY: policy files for `gateway.query`, org first, os.pathsep-separated."""
    raw = os.environ.get("AGENT_GATEWAY_POLICY", "")
    return [part for part in raw.split(os.pathsep) if part]


def audit_key_file() -> str:
    """AGENT_GATEWAY_AUDIT_KEY_FILE: the secret for audit and archive MACs ('' when unset)."""
    return os.environ.get("AGENT_GATEWAY_AUDIT_KEY_FILE", "")


def tokens_files() -> list[str]:
    """AGENT_GATEWAY_TOKENS_FILE: bearer tokens of `serve`'s callers (secrets)."""
    raw = os.environ.get("AGENT_GATEWAY_TOKENS_FILE", "")
    return [raw] if raw else []


def cache_secret_path() -> Path:
    """The per-home key that authenticates compiled-policy cache entries."""
    return gateway_home() / "cache.key"
