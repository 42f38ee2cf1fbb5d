"""What `serve` says at start-up matches what it does, and `settings` writes what fits it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.server.processes import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "policies" / "org.yaml")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_GATEWAY_", "OTEL_"))}
    return {**env, "AGENT_GATEWAY_HOME": str(tmp_path / "gw"), "HOME": str(tmp_path), **extra}


def _status(url: str, token: str = "") -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}
                                     if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("metrics_token", ["", "scrape-secret"])
def test_the_metrics_line_says_what_metrics_needs(tmp_path: Path, metrics_token: str) -> None:
    env = _env(tmp_path, AGENT_GATEWAY_TOKEN="t0ken", OTEL_METRICS_EXPORTER="prometheus",
               OTEL_TRACES_EXPORTER="none")
    if metrics_token:
        env["AGENT_GATEWAY_METRICS_TOKEN"] = metrics_token
    log = tmp_path / "serve.log"
    with ServeProcess([POLICY], "http://127.0.0.1:9", env, log=log) as serve:
        status = _status(serve.url + "/metrics", metrics_token)
    said = log.read_text()
    if metrics_token:
        assert status == 200
        assert "Prometheus metrics at GET /metrics (Bearer AGENT_GATEWAY_METRICS_TOKEN)" in said
    else:
        assert status == 401
        assert ("Prometheus metrics at GET /metrics need AGENT_GATEWAY_METRICS_TOKEN (with "
                "authentication on and none set, /metrics answers 401)") in said


@pytest.mark.parametrize("auth", ["off", "on"])
def test_settings_fit_the_gateways_authentication(tmp_path: Path, auth: str) -> None:
    extra = {"AGENT_GATEWAY_TOKEN": "t0ken"} if auth == "on" else {}
    with ServeProcess([POLICY], "http://127.0.0.1:9", _env(tmp_path, **extra)) as serve:
        with urllib.request.urlopen(serve.url + "/healthz", timeout=10) as answer:
            assert json.loads(answer.read()) == {"status": "ok", "auth": auth}
        printed = subprocess.run(
            [sys.executable, "-m", "gateway", "settings", "--url", serve.url],
            capture_output=True, text=True, timeout=60, check=False, env=_env(tmp_path))
    assert printed.returncode == 0, printed.stderr
    settings = json.loads(printed.stdout)
    handler = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    if auth == "off":
        assert "apiKeyHelper" not in settings and "headers" not in handler
        assert "runs with authentication off: the settings send no token" in printed.stderr
    else:
        assert settings["apiKeyHelper"] and handler["headers"]
        assert "export AGENT_GATEWAY_TOKEN=" in printed.stderr


def test_a_hook_call_without_a_token_is_refused_and_leaves_no_record(tmp_path: Path) -> None:
    """docs/service.md: a 401 names no tenant whose log it could go in."""
    body = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash",
                       "tool_input": {"command": "rm -rf /"}, "cwd": str(tmp_path)}).encode()
    env = _env(tmp_path, AGENT_GATEWAY_TOKEN="t0ken")
    with ServeProcess([POLICY], "http://127.0.0.1:9", env) as serve:
        request = urllib.request.Request(serve.url + "/hooks/PreToolUse", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        answer = json.loads(refused.value.read())
    assert refused.value.code == 401
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    log = tmp_path / "gw" / "audit.jsonl"
    assert not log.exists() or log.read_text() == ""
