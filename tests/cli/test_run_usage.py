"""`agent-gateway run`: each bad usage is one line on stderr and exit 2, before the agent starts."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli import run as run_cli
from gateway.cli.main import build_parser, main
from gateway.scripted import ScriptedServer


def _usage(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(["run", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--autocompact", "5000", "hi"], "--autocompact: '5000': must be 'auto'"),
        (["--autocompact", "99k", "hi"], "at least 100k tokens"),
        (["--autocompact", "soon", "hi"], "at least 100k tokens"),
        (["--max-turns", "0", "hi"], "--max-turns: 0 is not a whole number of 1 or more"),
        (["--max-turns", "two", "hi"], "'two' is not a whole number"),
        (["--max-budget-usd", "-1", "hi"], "-1 is not a number above 0"),
        (["--max-budget-usd", "nan", "hi"], "nan is not a number above 0"),
        (["--fork-session", "hi"], "--fork-session needs --resume SESSION"),
        (["--cwd", "/no/such/dir", "hi"], "--cwd /no/such/dir: no such directory"),
        (["--settings", "/no/such.json", "hi"], "--settings /no/such.json: no such file"),
        (["--settings", "{bad", "hi"], "--settings: not valid JSON"),
        (["--settings", "{}", "  "], "the prompt is empty"),
        (["--output-format", "yaml", "hi"], "invalid choice: 'yaml'"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert expected in _usage(capsys, *argv)


def test_bypass_permissions_as_root(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_cli, "_is_root", lambda: True)
    err = _usage(capsys, "--permission-mode", "bypassPermissions", "hi")
    assert "bypassPermissions is refused by Claude Code when running as root" in err
    monkeypatch.setattr(run_cli, "_is_root", lambda: False)
    args = run_cli_parser().parse_args(["run", "--permission-mode", "bypassPermissions", "hi"])
    assert run_cli.usage_error(args) is None


def run_cli_parser() -> argparse.ArgumentParser:
    return build_parser("run")


@pytest.mark.parametrize("value", ["auto", "100000", "200", "1000", "500k", "1.5m", "150K"])
def test_autocompact_accepts_what_claude_code_accepts(value: str) -> None:
    assert run_cli.autocompact_window(value) == value


def test_nothing_reaches_the_api(tmp_path: Path) -> None:
    """A real process: the one line, exit 2, and no model request was made."""
    with ScriptedServer({"responses": [{"text": "hi", "times": 0}]}) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "gateway", "run", "--autocompact", "5000", "hello"],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                 "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "x"},
        )
        assert server.requests == []
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("agent-gateway run: error:")
