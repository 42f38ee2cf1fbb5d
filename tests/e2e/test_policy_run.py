"""Policy enforced on the real Claude Code through `agent-gateway run --policy`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = """\
version: 1
name: e2e
permissions:
  deny:
    - Bash(rm:*)
  allow:
    - Bash(echo:*)
rules:
  - id: no-delete-precious
    reason: Deleting files is reserved for humans; ask the operator.
    tool: Bash
    command: "shred:*"
"""


def bash(command: str, when: str) -> dict[str, Any]:
    return {
        "when": when,
        "text": "ok",
        "tool_use": [{"name": "Bash", "input": {"command": command}}],
    }


def write_policy(sandbox: Sandbox, text: str = POLICY) -> Path:
    path = sandbox.cwd.parent / "policy.yaml"
    path.write_text(text)
    return path


def test_denied_rm_never_runs_and_the_model_gets_the_reason(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    precious = sandbox.cwd / "precious.txt"
    precious.write_text("keep me\n")
    server = scripted(
        {
            "responses": [
                bash("cd . && /bin/rm -f precious.txt", "prompt"),
                bash("echo allowed > allowed.txt", "tool_result"),
                {"when": "tool_result", "text": "finished"},
            ]
        }
    )
    policy = write_policy(sandbox)
    out = gateway_run(sandbox, "clean up", "--policy", str(policy))

    assert out.returncode == 0, out.stderr
    assert precious.read_text() == "keep me\n"  # the denied rm never ran
    assert (sandbox.cwd / "allowed.txt").read_text() == "allowed\n"  # the allowed call ran
    denied, _allowed = out.tool_results()
    assert denied["is_error"] is True
    assert "e2e" in denied["content"] or "rm" in denied["content"]
    assert "permissions.deny[1]" in denied["content"]
    # What the model received in its next request is that same reason.
    fed_back = server.requests[1].body["messages"][-1]["content"][0]
    assert fed_back["is_error"] is True and "permissions.deny[1]" in json.dumps(fed_back)
    denials = out.result["permission_denials"]
    assert [d["tool_name"] for d in denials] == ["Bash"]
    assert denials[0]["tool_input"]["command"] == "cd . && /bin/rm -f precious.txt"
    # Every decision is in the audit log, chained.
    records = [
        json.loads(line) for line in (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()
    ]
    assert [r["decision"] for r in records] == ["deny", "allow"]
    assert records[1]["prev_hash"] == records[0]["hash"]


def test_rule_reason_reaches_the_model(sandbox: Sandbox, scripted: Scripted) -> None:
    target = sandbox.cwd / "data.bin"
    target.write_text("data")
    scripted(
        {
            "responses": [
                bash("sudo -n shred -u data.bin", "prompt"),
                {"when": "tool_result", "text": "stopped"},
            ]
        }
    )
    out = gateway_run(
        sandbox, "wipe", "--policy", str(write_policy(sandbox)), "--allowed-tools", "Bash"
    )

    assert out.returncode == 0, out.stderr
    assert target.exists()
    (denied,) = out.tool_results()
    assert "Deleting files is reserved for humans" in denied["content"]


def test_bad_policy_refuses_to_run(sandbox: Sandbox, scripted: Scripted) -> None:
    server = scripted({"responses": [{"text": "never"}]})
    bad = write_policy(sandbox, "version: 1\npermissions:\n  deny:\n    - Bash(rm:*\n")
    out = gateway_run(sandbox, "hi", "--policy", str(bad))

    assert out.returncode == 2
    assert f"{bad}:4:" in out.stderr
    assert out.stderr.strip().count("\n") == 0
    assert server.requests == []  # the agent never started


def test_policy_limits_cap_the_run(sandbox: Sandbox, scripted: Scripted) -> None:
    server = scripted({"responses": [bash("echo again >> turns.txt", "any") | {"times": 0}]})
    policy = write_policy(
        sandbox, "version: 1\nlimits:\n  max_turns: 1\n  models: [claude-opus-5-5]\n"
    )
    out = gateway_run(
        sandbox, "loop", "--policy", str(policy), "--max-turns", "5", "--allowed-tools", "Bash"
    )

    assert out.returncode == 1
    assert out.result["subtype"] == "error_max_turns"
    assert "--max-turns 5 exceeds the policy limit 1; using 1" in out.stderr
    assert len(server.requests) == 1

    refused = gateway_run(sandbox, "hi", "--policy", str(policy), "--model", "claude-haiku-5")
    assert refused.returncode == 2
    assert "not allowed by policy" in refused.stderr and len(server.requests) == 1
