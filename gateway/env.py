"""The one place that reads the environment: every variable the gateway reads is named here.

Processes the gateway starts get an environment passed on (decision workers whole, Claude
Code through runner/agent_env.py's filters); that is not a read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

HOME_ENV = "AGENT_GATEWAY_HOME"
POLICY_ENV = "AGENT_GATEWAY_POLICY"
TOKEN_ENV = "AGENT_GATEWAY_TOKEN"
"""One bearer token for `serve` (one caller); what sessions export for http hooks, `--remote`
command hooks and the proxy."""
TOKENS_FILE_ENV = "AGENT_GATEWAY_TOKENS_FILE"
AUDIT_KEY_FILE_ENV = "AGENT_GATEWAY_AUDIT_KEY_FILE"
PROJECTS_ENV = "AGENT_GATEWAY_CLAUDE_PROJECTS"
METRICS_TOKEN_ENV = "AGENT_GATEWAY_METRICS_TOKEN"
RUN_HOOK_TOKEN_ENV = "AGENT_GATEWAY_RUN_HOOK_TOKEN"
"""The bearer token of a run's loopback hook endpoint, set by the run in Claude Code's
environment (never read from the gateway's own)."""


def environment() -> Mapping[str, str]:
    """The process's environment, read-only: what a tool call the gateway decides runs in
    (Claude Code passes its own to the hook). Handed to the evaluator on the ToolCall, as
    the evaluator reads no environment of its own."""
    return os.environ


def gateway_home() -> Path:
    """State directory: the local archive store, the audit log, the local span file."""
    return _home(os.environ.get(HOME_ENV) or "", os.environ.get("HOME") or "")


@functools.lru_cache(maxsize=16)
def _home(raw: str, user_home: str) -> Path:
    # Cached per value (HOME is part of the key: Path.home() reads it): the service asks
    # once per decision, and building paths is not free.
    del user_home
    return Path(raw).expanduser() if raw else Path.home() / ".agent-gateway"


def set_gateway_home(path: Path) -> None:
    """Point this process (and what it starts) at another state directory (the demo)."""
    os.environ[HOME_ENV] = str(path)


def keep_local_span_file() -> None:
    """Write the local span file even beside an exporter, in this process and what it starts
    (the demo draws its trace from it)."""
    os.environ[SPAN_FILE_ENV] = "always"


def claude_projects_root() -> Path:
    """Where Claude Code keeps transcripts; archiving refuses files outside it."""
    raw = os.environ.get(PROJECTS_ENV)
    if raw:
        return Path(raw).expanduser()
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(config_dir).expanduser() if config_dir else Path.home() / ".claude"
    return base / "projects"


_PROXY_VARIABLES = frozenset(
    {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
     "NO_PROXY", "no_proxy"}
)

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"


def anthropic_base_url(overrides: dict[str, str] | None = None) -> str:
    """Where Claude Code sends model requests: ANTHROPIC_BASE_URL (the run's own env first)."""
    for source in (overrides or {}, os.environ):
        if source.get("ANTHROPIC_BASE_URL"):
            return source["ANTHROPIC_BASE_URL"]
    return DEFAULT_ANTHROPIC_BASE_URL


def otel_env() -> dict[str, str]:
    """The standard OTEL_* variables, the only telemetry configuration, and the proxy
    variables the exporters' HTTP clients honour (an exporter behind a proxy is not probed)."""
    return {k: v for k, v in os.environ.items() if k.startswith("OTEL_") or k in _PROXY_VARIABLES}


class TraceContext(NamedTuple):
    """W3C trace context handed down by a parent process (TRACEPARENT, TRACESTATE)."""

    traceparent: str | None
    tracestate: str | None


def trace_context() -> TraceContext:
    return TraceContext(os.environ.get("TRACEPARENT"), os.environ.get("TRACESTATE"))


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
    """AGENT_GATEWAY_POLICY: policy files, org first, os.pathsep-separated; read by
    `gateway.query`, `run` and `hook` when no --policy is given."""
    raw = os.environ.get(POLICY_ENV, "")
    return [part for part in raw.split(os.pathsep) if part]


def audit_key_file() -> Path | None:
    """AGENT_GATEWAY_AUDIT_KEY_FILE: the MAC keys of the audit log and archive chains, or None."""
    raw = os.environ.get(AUDIT_KEY_FILE_ENV, "").strip()
    return _expanded(raw) if raw else None


@functools.lru_cache(maxsize=16)
def _expanded(raw: str) -> Path:
    return Path(raw).expanduser()


HOOK_OTEL_PREFIX = "AGENT_GATEWAY_OTEL_"
"""Claude Code removes every OTEL_* variable from its hooks' environment (measured on
2.1.337), so command hooks read AGENT_GATEWAY_OTEL_X as OTEL_X (`settings --command-hook
--policy` writes them into the settings' env)."""


def adopt_hook_otel_env() -> None:
    """OTEL_X from AGENT_GATEWAY_OTEL_X in this process, where OTEL_X is not set."""
    for name, value in list(os.environ.items()):
        if name.startswith(HOOK_OTEL_PREFIX):
            os.environ.setdefault("OTEL_" + name[len(HOOK_OTEL_PREFIX):], value)


def hook_log_export_requested() -> bool:
    """The command hook exports log records only when OTEL_LOGS_EXPORTER names an exporter:
    loading the OpenTelemetry SDK costs a hook process about 200 ms."""
    raw = os.environ.get("OTEL_LOGS_EXPORTER", "").strip().lower()
    return bool(raw) and raw != "none"


def gateway_token() -> str | None:
    """AGENT_GATEWAY_TOKEN, or None when unset or empty."""
    return os.environ.get(TOKEN_ENV) or None


def tokens_file() -> str | None:
    """AGENT_GATEWAY_TOKENS_FILE: bearer tokens of `serve`'s callers (secrets), or None."""
    return os.environ.get(TOKENS_FILE_ENV) or None


def tokens_files() -> list[str]:
    raw = tokens_file()
    return [raw] if raw else []


def variable(name: str) -> str | None:
    """A variable a configuration file names (a tokens-file entry's `token_env`), or None
    when unset."""
    return os.environ.get(name)


def snapshot() -> dict[str, str]:
    """The whole environment, to hand to a process the gateway starts."""
    return dict(os.environ)


def cache_secret_path() -> Path:
    """The per-home key that authenticates compiled-policy cache entries."""
    return gateway_home() / "cache.key"


REDIS_URL_ENV = "AGENT_GATEWAY_REDIS_URL"


def redis_url() -> str | None:
    """AGENT_GATEWAY_REDIS_URL: the Redis the replicas share (session owners, team budgets)."""
    return os.environ.get(REDIS_URL_ENV, "").strip() or None


def metrics_token() -> str:
    """AGENT_GATEWAY_METRICS_TOKEN: what a scraper sends for GET /metrics (auth on)."""
    return os.environ.get(METRICS_TOKEN_ENV, "").strip()


GATEWAY_SECRETS = frozenset({
    TOKEN_ENV, TOKENS_FILE_ENV, AUDIT_KEY_FILE_ENV, METRICS_TOKEN_ENV, REDIS_URL_ENV,
    RUN_HOOK_TOKEN_ENV,
})
"""The gateway's own secrets: never in an agent's environment (runner/agent_env.py) nor in
a sandboxed command's (policy/withheld_env.py)."""
