"""Every subcommand, a malformed value for each of its options: exit 2 and one line on stderr,
no traceback, and nothing bound, started or written (the home, the working directory and the
gateway's home stay as they were; no socket is bound)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli.main import main

POLICY = str(Path(__file__).resolve().parents[2] / "policies" / "org.yaml")

CASES: list[tuple[str, ...]] = [
    # serve
    ("serve", "--policy", POLICY, "--port", "70000"),
    ("serve", "--policy", POLICY, "--port", "eighty"),
    ("serve", "--policy", POLICY, "--port", "0"),
    ("serve", "--policy", POLICY, "--host", "no such host.invalid"),
    ("serve", "--policy", POLICY, "--upstream", "ftp//x"),
    ("serve", "--policy", POLICY, "--upstream", "localhost:8787"),
    ("serve", "--policy", POLICY, "--upstream", "http://x:99999"),
    ("serve", "--policy", POLICY, "--redis-url", "http://127.0.0.1:6379"),
    ("serve", "--policy", POLICY, "--redis-url", "redis://"),
    ("serve", "--policy", POLICY, "--redis-timeout", "0"),
    ("serve", "--policy", POLICY, "--budget-failure", "maybe"),
    ("serve", "--policy", POLICY, "--reserve-output-tokens", "0"),
    ("serve", "--policy", POLICY, "--trace-idle-timeout", "-1"),
    ("serve", "--policy", POLICY, "--idle-timeout", "soon"),
    ("serve", "--policy", POLICY, "--decision-budget", "nan"),
    ("serve", "--policy", POLICY, "--drain-seconds", "inf"),
    ("serve", "--policy", POLICY, "--runs-root", "/no/such/dir"),
    ("serve", "--policy", "/no/such/policy.yaml"),
    ("serve", "--polciy", POLICY),
    # settings
    ("settings", "--url", "localhost:8787"),
    ("settings", "--url", "ftp://gw"),
    ("settings", "--url", "http://"),
    ("settings", "--url", "http://gw", "--policy", "/no/such/policy.yaml"),
    ("settings", "--url", "http://gw", "--token", "--no-token"),
    ("settings", "--url", "http://gw", "--managd"),
    # run
    ("run", "--max-turns", "0", "hi"),
    ("run", "--max-budget-usd", "free", "hi"),
    ("run", "--permission-mode", "yolo", "hi"),
    ("run", "--effort", "extreme", "hi"),
    ("run", "--autocompact", "5", "hi"),
    ("run", "--output-format", "yaml", "hi"),
    ("run", "--cwd", "/no/such/dir", "hi"),
    ("run", "--settings", "/no/such.json", "hi"),
    ("run", "--policy", "/no/such/policy.yaml", "hi"),
    ("run", "--polciy", "f", "Tidy up"),
    # hook
    ("hook", "pre-tool-use", "--remote", "localhost:8787"),
    ("hook", "pre-tool-use", "--remote", "http://gw", "--timeout", "0"),
    ("hook", "post-tool-batch"),
    # scripted-api
    ("scripted-api", "--scenario", "/no/such.yaml"),
    ("scripted-api", "--scenario", POLICY, "--port", "70000"),
    # spend
    ("spend", "--redis-url", "http://127.0.0.1:6379"),
    ("spend", "--tokens-file", "/no/such.yaml"),
    # policy
    ("policy", "check", "/no/such/policy.yaml"),
    ("policy", "test", "/no/such/policy.yaml"),
    ("policy", "explain", "--policy", POLICY, "--tool", "Bash", "--cwd", "/no/such/dir"),
    ("policy", "explain", "--policy", POLICY, "--input", "/no/such.json"),
    ("policy", "replay", "--policy", POLICY, "--cwd", "/no/such/dir", "-"),
    ("policy", "replay", "--policy", POLICY, "/no/such/transcripts"),
    ("policy", "explian"),
    # audit
    ("audit", "list", "--decision", "maybe"),
    ("audit", "list", "--since", "yesterday-ish"),
    ("audit", "list", "--log", "/no/such/audit.jsonl"),
    ("audit", "show", "first"),
    ("audit", "show", "0"),
    ("audit", "verify", "--log", "/no/such/audit.jsonl"),
    ("audit", "list", "--sesion", "x"),
    # archive
    ("archive", "list", "--policy", "/no/such/policy.yaml"),
    ("archive", "export", "abc"),
    ("archive", "verify", "--polcy", POLICY),
    # trace, demo
    ("trace", "show", "--json"),
    ("trace", "shwo"),
    ("demo", "--kep"),
]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c).replace(POLICY, "org.yaml")
                                              for c in CASES])
def test_a_malformed_value_is_one_line_exit_2_and_nothing_happens(
    argv: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("home", "work", "gateway-home"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "gateway-home"))
    for name in ("AGENT_GATEWAY_TOKEN", "AGENT_GATEWAY_TOKENS_FILE", "AGENT_GATEWAY_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115 (closed by pytest)
    bound: list[object] = []
    real_bind = socket.socket.bind

    def bind(self: socket.socket, address: object) -> None:
        bound.append(address)
        real_bind(self, address)

    monkeypatch.setattr(socket.socket, "bind", bind)
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    assert bound == []
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(("argv", "expected"), [
    (("run", "--polciy", "f", "Tidy up"),
     "agent-gateway run: error: unrecognized option --polciy (did you mean --policy?) "
     "(see agent-gateway run --help)"),
    (("serve", "--uptream", "http://x"),
     "agent-gateway serve: error: unrecognized option --uptream (did you mean --upstream?) "
     "(see agent-gateway serve --help)"),
    (("audit", "list", "--sesion", "x"),
     "agent-gateway audit list: error: unrecognized option --sesion (did you mean --session?) "
     "(see agent-gateway audit list --help)"),
])
def test_a_misspelt_option_is_named_with_the_nearest_one(
    argv: tuple[str, ...], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    assert capsys.readouterr().err == expected + "\n"


def test_a_port_in_use_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    """A real process: no `listening` line, nothing under the gateway's home."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", "--policy", POLICY, "--port", str(port)],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
            env={**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "gw"),
                 "HOME": str(tmp_path)},
        )
    assert proc.returncode == 2
    assert proc.stderr == (f"agent-gateway serve: error: cannot listen on 127.0.0.1:{port}: "
                           "address already in use\n")
    assert not (tmp_path / "gw").exists()
