"""policy check / explain / test as the CLI calls them, and the shipped example policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.policy.commands import policy_check, policy_explain, policy_test

from .conftest import WritePolicy

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [str(ROOT / "policies" / n) for n in ("org.yaml", "team.yaml", "project.yaml")]


def test_shipped_policies_check_and_pass_their_tests(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert policy_check(SHIPPED) == 0
    assert policy_test(SHIPPED) == 0
    out = capsys.readouterr().out
    assert "0 failed" in out


def test_check_reports_file_line(write_policy: WritePolicy,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy("version: 1\nwhat: 1\n")
    assert policy_check([path]) == 1
    assert capsys.readouterr().err.strip() == f"{path}:2: unknown key 'what'"


def test_failing_case_names_its_line(write_policy: WritePolicy,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy("version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n")
    write_policy("cases:\n  - {name: ok, tool: Bash, input: {command: rm x}, expect: deny}\n"
                 "  - {name: wrong, tool: Bash, input: {command: ls}, expect: deny}\n",
                 "org.tests.yaml")
    assert policy_test([path]) == 1
    captured = capsys.readouterr()
    assert "org.tests.yaml:3: wrong: expected deny, got abstain" in captured.err
    assert "1 passed, 1 failed" in captured.out


def test_explain(write_policy: WritePolicy, tmp_path: Path,
                 capsys: pytest.CaptureFixture[str]) -> None:
    path = write_policy("version: 1\nrules:\n  - {id: no-rm, reason: No deleting., "
                        "rule: 'Bash(rm -rf:*)'}\n")
    hook = tmp_path / "input.json"
    hook.write_text(json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                "tool_input": {"command": "ls && sudo sh -c 'rm -fr /'"}}))
    assert policy_explain([path], str(hook)) == 0
    out = capsys.readouterr().out
    assert "decision: deny" in out
    assert "rule: no-rm" in out
    assert "matched: rm -fr /" in out
    assert "rm -fr /  (inside sudo > sh)" in out
    assert policy_explain([path], str(tmp_path / "missing.json")) == 2


def test_explain_decides_in_the_callers_environment(
        write_policy: WritePolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """As the hook would: `~` in a rule is the HOME of the shell that asks."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    path = write_policy("version: 1\npermissions:\n  deny: ['Read(~/.ssh/**)']\n")
    hook = tmp_path / "input.json"
    hook.write_text(json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read",
                                "tool_input": {"file_path": str(home / ".ssh" / "id_rsa")}}))
    assert policy_explain([path], str(hook)) == 0
    assert "decision: deny" in capsys.readouterr().out


def test_explain_names_each_use_of_a_file_once(write_policy: WritePolicy) -> None:
    import io

    path = write_policy("version: 1\npermissions:\n  deny: ['Edit(/src/**)']\n")
    out = io.StringIO()
    call = {"tool_name": "Bash", "tool_input": {"command": "rsync -a src/ build/"},
            "cwd": "/srv/project"}
    assert policy_explain([path], hook_input=call, out=out, err=io.StringIO()) == 0
    uses = [line for line in out.getvalue().splitlines() if line.startswith("  ")
            and ("reads" in line or "writes" in line)]
    assert uses and len(uses) == len(set(uses)), uses
