"""`policy check` refuses (file:line) tool names Claude Code does not have; `policy explain`
takes a tool call as flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.policy.commands import policy_check
from gateway.policy.tool_names import known_tools, unknown_tool
from tests.fixtures import CLAUDE_CODE_RECORDINGS
from tests.server.processes import free_port

from .conftest import WritePolicy

ROOT = Path(__file__).resolve().parents[2]


def test_every_tool_of_the_recorded_claude_code_is_known() -> None:
    for line in (CLAUDE_CODE_RECORDINGS / "stream-json.tool-call.jsonl").read_text().splitlines():
        message = json.loads(line)
        if message.get("subtype") == "init":
            assert set(message["tools"]) <= known_tools()
            return
    raise AssertionError("no init message in the recording")


@pytest.mark.parametrize("name", ["Bash", "Read", "Glob", "MultiEdit", "Agent", "mcp__prod",
                                  "mcp__prod__drop_table", "mcp__prod__*", "*"])
def test_known_names_and_patterns_pass(name: str) -> None:
    assert unknown_tool(name) is None


def test_misspellings_are_errors_with_file_and_line(
    write_policy: WritePolicy, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule for a tool Claude Code does not have is dead in both: not a warning."""
    path = write_policy(
        "version: 1\n"
        "permissions:\n"
        "  deny:\n"
        "    - Bsh(rm:*)\n"
        "    - Raed(.env)\n"
        "    - mcp__prod__drop_table\n"
        "  allow: [Bash(ls:*)]\n"
        "rules:\n"
        "  - id: exfil\n"
        "    tool: WebFech\n"
        "    domain: pastebin.com\n"
        "  - {id: r, rule: 'Wirte(/etc/**)'}\n"
    )
    assert policy_check([path]) == 1
    captured = capsys.readouterr()
    declare = "this rule never matches (declare an SDK app's own tools under tools:)"
    assert captured.err.splitlines() == [
        f"{path}:4: error: Claude Code has no tool named 'Bsh' (did you mean Bash?): {declare}",
        f"{path}:5: error: Claude Code has no tool named 'Raed' (did you mean Read?): {declare}",
        f"{path}:10: error: Claude Code has no tool named 'WebFech' (did you mean WebFetch?): "
        f"{declare}",
        f"{path}:12: error: Claude Code has no tool named 'Wirte' (did you mean Write?): "
        f"{declare}",
    ]
    assert captured.out == ""


def test_a_declared_tool_may_be_named(
    write_policy: WritePolicy, capsys: pytest.CaptureFixture[str]
) -> None:
    """An SDK app's own tools, declared under `tools:` in any file of the bundle."""
    org = write_policy("version: 1\ntools: [Deploy]\npermissions: {deny: [Deploy]}\n")
    team = write_policy("version: 1\npermissions: {deny: ['Deploy(prod*)']}\n", "team.yaml")
    assert policy_check([org, team]) == 0, capsys.readouterr().err
    undeclared = write_policy("version: 1\npermissions: {deny: [Deploy]}\n", "other.yaml")
    assert policy_check([undeclared]) == 1
    assert "no tool named 'Deploy'" in capsys.readouterr().err


def test_the_shipped_policies_name_only_real_tools(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = [str(ROOT / "policies" / n) for n in ("org.yaml", "team.yaml", "project.yaml")]
    assert policy_check(shipped) == 0
    assert " error: " not in capsys.readouterr().err


def _explain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", "policy", "explain", *args],
                          capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)


def test_explain_a_command_given_as_flags() -> None:
    out = _explain("--policy", "policies/org.yaml", "--tool", "Bash",
                   "--command", "cd /tmp && rm -fr build")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("decision: deny\nrule: org.yaml:permissions.deny[1]\n")
    assert "  - rm -fr build" in out.stdout


def test_explain_a_path_given_as_flags(tmp_path: Path) -> None:
    out = _explain("--policy", "policies/org.yaml", "--tool", "Read", "--path", "app/.env",
                   "--cwd", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "decision: deny" in out.stdout and "Read(**/.env)" in out.stdout
    assert f"matched: {tmp_path}/app/.env" in out.stdout


@pytest.mark.parametrize("args", [
    ["--tool", "Bash", "--command", "ls", "--path", "x"],
    ["--input", "x.json", "--command", "ls"],
    ["--tool", "Bash", "--input", "x.json"],
])
def test_explain_usage_errors_are_one_line(args: list[str]) -> None:
    out = _explain("--policy", "policies/org.yaml", *args)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr


MISSPELLED = "version: 1\npermissions:\n  deny:\n    - Bash(rm:*)\n    - Bsh(curl:*)\n"


def test_no_policy_with_a_misspelled_tool_is_loaded_anywhere(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    """Loaded, `Bsh(curl:*)` would do nothing and `curl` would go through: the loader every
    vantage point uses refuses it (file:line), and the command hook then blocks."""
    from gateway.errors import PolicyError
    from gateway.policy import load_policy

    path = write_policy(MISSPELLED)
    with pytest.raises(PolicyError) as refused:
        load_policy([path])
    assert str(refused.value).startswith(f"{path}:5: Claude Code has no tool named 'Bsh'")
    declared = write_policy("version: 1\ntools: [Bsh]\n" + MISSPELLED.split("\n", 1)[1],
                            "declared.yaml")
    assert load_policy([declared]).rule_count >= 2
    call = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "tool_use_id": "t",
                       "tool_name": "Bash", "tool_input": {"command": "curl example.com"},
                       "cwd": str(tmp_path)})
    hook = subprocess.run([sys.executable, "-m", "gateway", "hook", "pre-tool-use", "--policy",
                           path], input=call, capture_output=True, text=True,
                          env={**os.environ,
                               "AGENT_GATEWAY_HOME": str(tmp_path / "home")})
    assert hook.returncode == 2, hook
    assert hook.stderr.count("\n") == 1 and f"{path}:5" in hook.stderr, hook.stderr


def test_serve_refuses_to_start_on_a_misspelled_tool(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    path = write_policy(MISSPELLED)
    served = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--port", str(free_port()), "--policy", path,
         "--upstream", "http://127.0.0.1:9"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home")})
    assert served.returncode == 2, served
    assert served.stderr.count("\n") == 1 and f"{path}:5" in served.stderr, served.stderr
