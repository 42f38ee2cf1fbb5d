"""The one place that reads the environment."""

from __future__ import annotations

import functools
import os
from pathlib import Path


def gateway_home() -> Path:
    """State directory: the local archive store, the audit log, the local span file."""
    return _home(os.environ.get("AGENT_GATEWAY_HOME") or "", os.environ.get("HOME") or "")


@functools.lru_cache(maxsize=16)
def _home(raw: str, user_home: str) -> Path:
    # Cached per value: the service asks once per decision, and building paths is not free.
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


SPAN_FILE_ENV = "AGENT_GATEWAY_SPAN_FILE"
"""`always`: keep the local span file beside a configured exporter (for `trace show`)."""
OPENINFERENCE_ENV = "AGENT_GATEWAY_OPENINFERENCE"
"""`0`: no OpenInference attributes beside the GenAI ones (on by default)."""


def trace_env() -> dict[str, str]:
    """The OTEL_* variables plus the gateway's two switches on where and how spans go."""
    env = otel_env()
    for name in (SPAN_FILE_ENV, OPENINFERENCE_ENV):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def policy_paths_from_env() -> list[str]:
    """AGENT_GATEWAY_POLICY: policy files for `gateway.query`, org first, os.pathsep-separated."""
    raw = os.environ.get("AGENT_GATEWAY_POLICY", "")
    return [part for part in raw.split(os.pathsep) if part]


AUDIT_KEY_FILE_ENV = "AGENT_GATEWAY_AUDIT_KEY_FILE"


def audit_key_file() -> Path | None:
    """AGENT_GATEWAY_AUDIT_KEY_FILE: the MAC keys of the audit log and archive chains, or None."""
    raw = os.environ.get(AUDIT_KEY_FILE_ENV, "").strip()
    return _expanded(raw) if raw else None


@functools.lru_cache(maxsize=16)
def _expanded(raw: str) -> Path:
    return Path(raw).expanduser()


def hook_log_export_requested() -> bool:
    """The command hook exports log records only when OTEL_LOGS_EXPORTER names an exporter:
    loading the OpenTelemetry SDK costs a hook process about 200 ms."""
    raw = os.environ.get("OTEL_LOGS_EXPORTER", "").strip().lower()
    return bool(raw) and raw != "none"


def tokens_files() -> list[str]:
    """AGENT_GATEWAY_TOKENS_FILE: bearer tokens of `serve`'s callers (secrets)."""
    raw = os.environ.get("AGENT_GATEWAY_TOKENS_FILE", "")
    return [raw] if raw else []


def cache_secret_path() -> Path:
    """The per-home key that authenticates compiled-policy cache entries."""
    return gateway_home() / "cache.key"
