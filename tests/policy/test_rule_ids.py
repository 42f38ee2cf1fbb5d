"""A permissions entry may carry a stable id: `{rule: "...", id: no-force-push}`. Decisions,
audit records, spans and metrics name the rule by it, so a rule inserted above does not shift
what the history, the dashboards and the tests call it (a bare string is named by position)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.errors import PolicyError
from gateway.policy import Policy, decide
from gateway.policy.floor import mirrored_floor

from .conftest import WritePolicy, bash

BEFORE = """\
version: 1
permissions:
  deny:
    - Read(**/.env)
    - {rule: "Bash(git push --force:*)", id: no-force-push}
"""
AFTER = BEFORE.replace("  deny:\n", "  deny:\n    - Bash(terraform apply:*)\n")


def test_an_id_survives_a_rule_inserted_above_it_where_a_position_does_not(
    policy_from: Callable[..., Policy]
) -> None:
    push = bash("git push --force origin main")
    before, after = policy_from(BEFORE), policy_from(AFTER)
    assert decide(before, push).rule_id == decide(after, push).rule_id == "no-force-push"
    assert decide(after, bash("terraform apply")).rule_id == "org.yaml:permissions.deny[1]"
    # the positional one moved: the same deny[1] named another rule before
    env = bash("cat .env")
    assert decide(before, env).rule_id == "org.yaml:permissions.deny[1]"
    assert decide(after, env).rule_id == "org.yaml:permissions.deny[2]"


def test_an_id_given_rule_is_still_mirrored_into_claude_codes_floor(
    policy_from: Callable[..., Policy]
) -> None:
    assert "Bash(git push --force:*)" in mirrored_floor(policy_from(BEFORE)).denies


@pytest.mark.parametrize(("text", "expected"), [
    ("version: 1\npermissions:\n  deny:\n    - {rule: 'Bash(rm:*)', id: a}\n"
     "rules:\n  - {id: a, tool: Bash, command: 'ls:*'}\n",
     ":6: rule id 'a' is already used at line 4"),
    ("version: 1\npermissions:\n  ask:\n    - {rule: 'Bash(rm:*)', idd: a}\n",
     ":4: unknown key 'idd' in permissions.ask[1]"),
    ("version: 1\npermissions:\n  deny:\n    - {rule: 'Bash(rm:*)', id: 'two words'}\n",
     ":4: permissions.deny[1].id: String should match pattern"),
])
def test_a_bad_or_repeated_id_is_an_error_at_its_line(
    write_policy: WritePolicy, text: str, expected: str
) -> None:
    from gateway.policy import load_policy

    path = write_policy(text)
    with pytest.raises(PolicyError) as refused:
        load_policy([path])
    assert str(refused.value).startswith(path + expected), str(refused.value)


def test_the_audit_record_names_the_rule_by_its_id(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    path = write_policy(BEFORE)
    call = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "tool_use_id": "t",
                       "tool_name": "Bash", "tool_input": {"command": "git push --force"},
                       "cwd": str(tmp_path)})
    home = tmp_path / "home"
    done = subprocess.run([sys.executable, "-m", "gateway", "hook", "pre-tool-use", "--policy",
                           path], input=call, capture_output=True, text=True,
                          env={**os.environ, "AGENT_GATEWAY_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "[rule no-force-push]" in done.stdout
    (record,) = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()
                 if '"decision"' in line]
    assert record["rule_id"] == "no-force-push" and record["decision"] == "deny"
