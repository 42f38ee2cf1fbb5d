"""The environment of the Claude Code a run starts, which every command the agent runs
inherits (`printenv` shows it). Pure: the caller passes the environment it starts from.

- A remote run (`POST /v1/runs`, inside `serve`) gets an allow-list (`remote_agent_env`):
  what Claude Code needs to run (PATH, HOME, locale, terminal, temp dir, user and shell, CA
  bundles, proxies), how it is configured to reach the model (ANTHROPIC_*, CLAUDE_CODE_*,
  CLAUDE_CONFIG_DIR and Claude Code's own tuning variables), and nothing else: never the
  service's tokens, their `token_env` variables, the metrics token, the Redis URL, the audit
  key file, cloud credentials (AWS_* of an S3 archive store). A variable whose value holds one
  of the service's secrets is withheld whatever its name.
- `agent-gateway run` started from a user's shell passes the user's environment on
  (`local_agent_env`): it is their agent, with their credentials, as bare Claude Code would
  be. The gateway's own secrets are taken out: nothing the agent's tools inherit lets them
  authenticate to a gateway, read its tokens or sign its audit log.

OTEL_*: the run's trace is built by the gateway from Claude Code's messages; Claude Code needs
the variables only for its own telemetry (CLAUDE_CODE_ENABLE_TELEMETRY). Their credentials
(`*_HEADERS`, `*_CLIENT_KEY`: what a collector, the audit log's off-host copy among them,
accepts writes with) reach Claude Code only when its own telemetry is on, and never in a
remote run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from gateway.env import GATEWAY_SECRETS  # a run's own hook token is added back by the run

__all__ = ["GATEWAY_SECRETS", "local_agent_env", "remote_agent_env", "without_secrets"]

NOT_INHERITED = frozenset({"CLAUDECODE"})
"""Would tell Claude Code that it runs inside another Claude Code session."""

REMOTE_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
    "NO_PROXY", "no_proxy",
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "CLAUDE_CONFIG_DIR", "API_TIMEOUT_MS", "MAX_THINKING_TOKENS", "MAX_MCP_OUTPUT_TOKENS",
    "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS",
    "BASH_MAX_OUTPUT_LENGTH", "USE_BUILTIN_RIPGREP",
})
REMOTE_PREFIXES = ("LC_", "ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_")
"""Locale, the model's address and credential, Claude Code's settings and switches."""

TELEMETRY_SWITCH = "CLAUDE_CODE_ENABLE_TELEMETRY"
OTEL_CREDENTIALS = ("_HEADERS", "_CLIENT_KEY")
MIN_SECRET = 8
"""Shorter 'secrets' are not searched for in values (an empty or toy password would match
everything)."""


def local_agent_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The user's environment for the Claude Code of `agent-gateway run`, less the gateway's
    secrets (and OTEL credentials unless Claude Code's own telemetry is on)."""
    telemetry = _on(environ.get(TELEMETRY_SWITCH))
    return {k: v for k, v in environ.items()
            if k not in GATEWAY_SECRETS and k not in NOT_INHERITED
            and (telemetry or not _otel_credential(k))}


def remote_agent_env(environ: Mapping[str, str], secrets: Collection[str] = ()
                     ) -> dict[str, str]:
    """The allow-listed environment of a remote run's Claude Code, from `serve`'s own;
    `secrets`: values (tokens, passwords) no variable may carry."""
    telemetry = _on(environ.get(TELEMETRY_SWITCH))
    hidden = [s for s in secrets if len(s) >= MIN_SECRET]
    return {
        k: v for k, v in environ.items()
        if _remote_allowed(k, telemetry) and not any(s in v for s in hidden)
    }


CLOUD_CREDENTIALS = frozenset({"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"})


def without_secrets(environ: Mapping[str, str], secrets: Collection[str] = ()
                    ) -> dict[str, str]:
    """`environ` less the gateway's secrets, cloud and OTEL credentials and any variable
    holding one of `secrets`: for the helper processes serve starts that need its
    environment otherwise (the decision workers' forkserver)."""
    hidden = [s for s in secrets if len(s) >= MIN_SECRET]
    return {k: v for k, v in environ.items()
            if k not in GATEWAY_SECRETS and k not in CLOUD_CREDENTIALS
            and not _otel_credential(k) and not any(s in v for s in hidden)}


def _remote_allowed(name: str, telemetry: bool) -> bool:
    if name in GATEWAY_SECRETS:
        return False
    if name in REMOTE_NAMES or name.startswith(REMOTE_PREFIXES):
        return True
    return telemetry and name.startswith("OTEL_") and not _otel_credential(name)


def _otel_credential(name: str) -> bool:
    return name.startswith("OTEL_") and name.endswith(OTEL_CREDENTIALS)


def _on(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")
