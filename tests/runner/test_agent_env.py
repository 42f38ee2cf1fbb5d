"""The environment Claude Code (and so every command the agent runs) gets from a run."""

from __future__ import annotations

import pytest

from gateway.runner.agent_env import (
    GATEWAY_SECRETS,
    local_agent_env,
    remote_agent_env,
    without_secrets,
)
from gateway.runner.claude_cli import child_env
from gateway.runner.options import RunOptions

SERVE = {
    "PATH": "/usr/bin", "HOME": "/srv/gw", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    "TERM": "xterm", "TMPDIR": "/tmp", "USER": "gw", "SHELL": "/bin/bash",
    "HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost",
    "ANTHROPIC_API_KEY": "sk-ant-run", "ANTHROPIC_BASE_URL": "https://api.example",
    "CLAUDE_CODE_MAX_RETRIES": "2", "CLAUDE_CONFIG_DIR": "/srv/gw/.claude",
    "AGENT_GATEWAY_HOME": "/srv/gw/state",
    "AGENT_GATEWAY_TOKEN": "tok-default-123456", "AGENT_GATEWAY_TOKENS_FILE": "/etc/gw/tokens",
    "TEAM_B_TOKEN": "tok-team-b-123456", "AGENT_GATEWAY_METRICS_TOKEN": "scrape-123456",
    "AGENT_GATEWAY_REDIS_URL": "redis://:pw-123456@redis:6379/0",
    "AGENT_GATEWAY_AUDIT_KEY_FILE": "/etc/gw/audit.key",
    "AWS_ACCESS_KEY_ID": "AKIA0000", "AWS_SECRET_ACCESS_KEY": "aws-secret-123456",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector", "OTEL_TRACES_EXPORTER": "otlp",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "authorization=Bearer siem-123456",
    "CLAUDECODE": "1", "PYTHONPATH": "/srv/gw/lib",
}


def test_a_remote_run_gets_what_claude_code_needs_and_nothing_of_the_service() -> None:
    env = remote_agent_env(SERVE)
    assert env == {
        "PATH": "/usr/bin", "HOME": "/srv/gw", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "TERM": "xterm", "TMPDIR": "/tmp", "USER": "gw", "SHELL": "/bin/bash",
        "HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost",
        "ANTHROPIC_API_KEY": "sk-ant-run", "ANTHROPIC_BASE_URL": "https://api.example",
        "CLAUDE_CODE_MAX_RETRIES": "2", "CLAUDE_CONFIG_DIR": "/srv/gw/.claude",
    }


def test_a_variable_holding_a_service_secret_is_withheld_whatever_its_name() -> None:
    serve = {**SERVE, "ANTHROPIC_CUSTOM_HEADERS": "X-Agent-Gateway-Token: tok-team-b-123456",
             "CLAUDE_CODE_EXTRA": "redis://:pw-123456@redis"}
    env = remote_agent_env(serve, ["tok-team-b-123456", "pw-123456", ""])
    assert "ANTHROPIC_CUSTOM_HEADERS" not in env and "CLAUDE_CODE_EXTRA" not in env
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-run"


def test_otel_reaches_a_remote_run_only_for_claude_codes_own_telemetry_never_credentials(
) -> None:
    env = remote_agent_env({**SERVE, "CLAUDE_CODE_ENABLE_TELEMETRY": "1"})
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://collector"
    assert "OTEL_EXPORTER_OTLP_LOGS_HEADERS" not in env
    assert not any(k.startswith("OTEL_") for k in remote_agent_env(SERVE))


def test_a_local_run_keeps_the_users_environment_without_the_gateways_secrets() -> None:
    env = local_agent_env(SERVE)
    assert not GATEWAY_SECRETS & set(env)
    assert "CLAUDECODE" not in env and "OTEL_EXPORTER_OTLP_LOGS_HEADERS" not in env
    # The user's own: their agent, their credentials.
    assert env["AWS_SECRET_ACCESS_KEY"] == "aws-secret-123456"
    assert env["PYTHONPATH"] == "/srv/gw/lib" and env["OTEL_TRACES_EXPORTER"] == "otlp"
    assert env["AGENT_GATEWAY_HOME"] == "/srv/gw/state"
    telemetry = local_agent_env({**SERVE, "CLAUDE_CODE_ENABLE_TELEMETRY": "1"})
    assert telemetry["OTEL_EXPORTER_OTLP_LOGS_HEADERS"].endswith("siem-123456")


def test_claude_codes_environment_starts_from_the_runs_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENT_GATEWAY_TOKEN", "tok-default-123456")
    monkeypatch.setenv("MINE", "kept")
    local = child_env(RunOptions(env={"TRACEPARENT": "t"}), {"AGENT_GATEWAY_RUN_HOOK_TOKEN": "h"})
    assert "AGENT_GATEWAY_TOKEN" not in local and local["MINE"] == "kept"
    assert local["TRACEPARENT"] == "t" and local["AGENT_GATEWAY_RUN_HOOK_TOKEN"] == "h"
    remote = child_env(RunOptions(base_env={"PATH": "/usr/bin"}, cwd="/tmp"), {})
    assert remote == {"PATH": "/usr/bin", "PWD": "/tmp"}


def test_serves_helpers_keep_its_environment_less_its_secrets() -> None:
    env = without_secrets(SERVE, ["tok-team-b-123456"])
    assert not GATEWAY_SECRETS & set(env)
    assert "TEAM_B_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert "OTEL_EXPORTER_OTLP_LOGS_HEADERS" not in env
    assert env["PYTHONPATH"] == "/srv/gw/lib" and env["AGENT_GATEWAY_HOME"] == "/srv/gw/state"
