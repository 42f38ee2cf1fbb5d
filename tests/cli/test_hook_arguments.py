"""`agent-gateway hook EVENT --policy PATH...`, the form settings files write, is read without
argparse; every other form still goes through the parser, with its errors and --help, and a
hook that cannot read its arguments blocks (exit 2), never exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli.hook import plain_invocation

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n"


@pytest.mark.parametrize(("argv", "expected"), [
    (["pre-tool-use"], ("pre-tool-use", [])),
    (["pre-tool-use", "--policy", "a.yaml"], ("pre-tool-use", ["a.yaml"])),
    (["pre-compact", "--policy", "a.yaml", "--policy", "b c.yaml"],
     ("pre-compact", ["a.yaml", "b c.yaml"])),
])
def test_the_settings_form_is_read_directly(argv: list[str],
                                            expected: tuple[str, list[str]]) -> None:
    assert plain_invocation(argv) == (*expected, "")


@pytest.mark.parametrize("argv", [
    [], ["post-tool-batch"], ["pre-tool-use", "--policy"], ["pre-tool-use", "--policy=a.yaml"],
    ["pre-tool-use", "--policy", "a.yaml", "--remote", "http://127.0.0.1:1"],
    ["pre-tool-use", "--help"], ["pre-tool-use", "--policy", "--help"],
    ["pre-tool-use", "--policy", ""], ["pre-tool-use", "--policy", "a", "--timeout", "1"],
    ["--policy", "a.yaml", "pre-tool-use"],
])
def test_every_other_form_is_left_to_the_parser(argv: list[str]) -> None:
    assert plain_invocation(argv) is None


def _cli(tmp_path: Path, *args: str, command: str = "rm -rf x"
         ) -> subprocess.CompletedProcess[str]:
    stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": command}, "session_id": "s1",
                        "tool_use_id": "t1"})
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "gateway", "hook", *args], input=stdin,
                          text=True, capture_output=True, env=env, timeout=60, check=False)


def test_both_readings_decide_alike(tmp_path: Path) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    direct = _cli(tmp_path, "pre-tool-use", "--policy", str(policy))
    parsed = _cli(tmp_path, "pre-tool-use", f"--policy={policy}")
    for done in (direct, parsed):
        assert done.returncode == 0, done.stderr
        decision = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"]
        assert decision == "deny"
    records = (tmp_path / "home" / "audit.jsonl").read_text().splitlines()
    assert len(records) == 2


def test_arguments_it_cannot_read_block(tmp_path: Path) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    done = _cli(tmp_path, "pre-tool-use", "--policy", str(policy), "--bogus", "x")
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "--bogus" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("argv", "expected"), [
    (["pre-tool-use", "--policy", "a.yaml", "--sandbox", "0f1a7284a4cbe0c6"],
     ("pre-tool-use", ["a.yaml"], "0f1a7284a4cbe0c6")),
    (["pre-tool-use", "--sandbox", "abc", "--policy", "a.yaml"],
     ("pre-tool-use", ["a.yaml"], "abc")),
])
def test_the_sandbox_fingerprint_is_read_directly(argv: list[str],
                                                  expected: tuple[str, list[str], str]) -> None:
    assert plain_invocation(argv) == expected


@pytest.mark.parametrize("argv", [
    ["pre-tool-use", "--sandbox", "a", "--sandbox", "b"],
    ["pre-tool-use", "--sandbox", "--policy"],
])
def test_odd_sandbox_arguments_go_to_the_parser(argv: list[str]) -> None:
    assert plain_invocation(argv) is None


def test_a_sandboxed_session_leaves_computed_paths_to_the_sandbox(tmp_path: Path) -> None:
    """The hook argument settings files write tells the hook which sandbox the session runs
    under; a fingerprint that is not the policy's changes nothing."""
    from gateway.policy import load_policy

    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\nsandbox: required\npermissions:\n  deny: ['Read(**/.env)']\n")
    fingerprint = load_policy([str(policy)]).sandbox_fingerprint
    command = "cat $(echo .e)nv"
    decided = {}
    for claimed in ("", "0" * 16, fingerprint):
        extra = ["--sandbox", claimed] if claimed else []
        for form in ([*extra, "--policy", str(policy)], [*extra, f"--policy={policy}"]):
            done = _cli(tmp_path, "pre-tool-use", *form, command=command)
            assert done.returncode == 0, done.stderr
            output = json.loads(done.stdout)
            decision = output.get("hookSpecificOutput", {}).get("permissionDecision", "{}")
            decided.setdefault(claimed, set()).add(decision)
    assert decided == {"": {"deny"}, "0" * 16: {"deny"}, fingerprint: {"{}"}}
