"""`policy replay` on what the real Claude Code left behind: a session run through
`agent-gateway run --policy`, its transcript under HOME/.claude/projects replayed under a
stricter policy, and the audit log of the same calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, gateway_cli, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = """\
version: 1
name: team
permissions:
  deny: [Bash(rm:*)]
  allow: [Bash(echo:*)]
"""
STRICTER = """\
version: 1
name: stricter
permissions:
  deny: [Bash(rm:*), Edit(**/notes.txt)]
  allow: [Bash(echo:*)]
"""


def tool_use(name: str, tool_input: dict[str, Any], when: str) -> dict[str, Any]:
    return {"when": when, "text": "ok", "tool_use": [{"name": name, "input": tool_input}]}


def test_a_stricter_policy_replayed_on_a_real_session_names_the_call_it_would_deny(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    notes = sandbox.cwd / "notes.txt"
    notes.write_text("hello\n")
    (sandbox.cwd / "precious.txt").write_text("keep\n")
    scripted({"responses": [
        tool_use("Bash", {"command": "echo hi > out.txt"}, "prompt"),
        tool_use("Bash", {"command": "rm -f precious.txt"}, "tool_result"),
        tool_use("Edit", {"file_path": str(notes), "old_string": "hello",
                          "new_string": "bye"}, "tool_result"),
        {"when": "tool_result", "text": "done"},
    ]})
    policy, stricter = sandbox.cwd.parent / "policy.yaml", sandbox.cwd.parent / "stricter.yaml"
    policy.write_text(POLICY)
    stricter.write_text(STRICTER)
    ran = gateway_run(sandbox, "tidy up", "--policy", str(policy),
                      "--allowed-tools", "Bash,Edit")
    assert ran.returncode == 0, ran.stderr
    assert notes.read_text() == "bye\n"  # the Edit ran: nothing in the policy stopped it
    assert (sandbox.cwd / "precious.txt").exists()  # the rm did not
    transcripts = sorted(sandbox.projects_root.rglob("*.jsonl"))
    assert transcripts, "Claude Code left no transcript"

    out = sandbox.cwd.parent / "decisions.jsonl"
    replayed = gateway_cli(sandbox, "policy", "replay", "--policy", str(stricter),
                           str(sandbox.projects_root), "--jsonl", str(out))
    assert replayed.returncode == 0, replayed.stderr
    lines = replayed.stdout.splitlines()
    assert "changes from the recorded decisions: 1 of 3 recorded calls" in lines, lines
    at = lines.index("  ran -> deny: 1")
    use_id, tool, path, where, rule = lines[at + 1].split()
    assert (tool, path, rule) == ("Edit", str(notes), "[stricter.yaml:permissions.deny[2]]")
    assert where.startswith(f"({transcripts[0]}:")
    decisions = {d["tool_use_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert decisions[use_id]["decision"] == "deny"
    assert sorted(d["decision"] for d in decisions.values()) == ["allow", "deny", "deny"]

    # The audit log of the same calls: the hook's own decisions, compared the same way.
    audit = gateway_cli(sandbox, "policy", "replay", "--policy", str(stricter), "--json",
                        "--cwd", str(sandbox.cwd), str(sandbox.gateway_home / "audit.jsonl"))
    assert audit.returncode == 0, audit.stderr
    summary = json.loads(audit.stdout)
    assert summary["recorded"] == 3
    (change,) = summary["changes"]
    assert (change["recorded"], change["would_be"]) == ("abstain", "deny")
    assert change["examples"][0]["tool_use_id"] == use_id
    # Replay appended nothing: the log holds the run's three decisions only.
    assert len((sandbox.gateway_home / "audit.jsonl").read_text().splitlines()) == 3
