"""A bad key file stops `serve` and `run` before they decide anything."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gateway.cli.serve import ServeArgs, serve_command
from gateway.errors import ConfigError
from gateway.runner.attachments import Attachments


def test_serve_refuses_a_bad_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\n")
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_GATEWAY_AUDIT_KEY_FILE", str(tmp_path / "absent.key"))
    code = serve_command(ServeArgs([str(policy)], "127.0.0.1", 0, "http://127.0.0.1:9"))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot read the key file" in err


def test_run_refuses_a_key_inside_the_gateway_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claude_agent_sdk import ClaudeAgentOptions

    from gateway.runner.wiring import attach_gateway

    home = tmp_path / "home"
    home.mkdir()
    key = home / "audit.key"
    key.write_text("k" * 40)
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(home))
    monkeypatch.setenv("AGENT_GATEWAY_AUDIT_KEY_FILE", str(key))
    with pytest.raises(ConfigError, match="inside AGENT_GATEWAY_HOME"):
        attach_gateway("hi", ClaudeAgentOptions(), [], Attachments(), io.StringIO())
