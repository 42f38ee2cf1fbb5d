"""Claude Code's own search tools over a tree that holds a denied file, in a run the gateway
starts: the hook sees a directory (a Grep over the project is no read of `.env`), so the run
hands Claude Code the policy's floor, whose Read denies its Grep follows, leaving the file out.
Before, the run's Grep printed `.env`'s secret into the conversation."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.harness import Sandbox, gateway_run

pytestmark = pytest.mark.e2e
SECRET = "top-secret-value"
POLICY = "version: 1\npermissions:\n  deny: ['Read(**/.env)', 'Read(~/.ssh/**)']\n"


@pytest.mark.parametrize("search", [
    {"pattern": "KEY", "output_mode": "content"},
    {"pattern": "KEY", "path": ".", "output_mode": "content", "glob": "**/.env*"},
    {"pattern": "KEY", "path": "sub", "output_mode": "content"},
    {"pattern": "KEY", "path": "HOME", "output_mode": "content"},
])
def test_a_search_over_the_tree_leaves_the_denied_files_out(
        sandbox: Sandbox, scripted: Any, search: dict[str, Any]) -> None:
    (sandbox.cwd / ".env").write_text(f"KEY={SECRET}\n")
    (sandbox.cwd / "sub").mkdir()
    (sandbox.cwd / "sub" / ".env").write_text(f"KEY={SECRET}\n")
    (sandbox.cwd / "sub" / "notes.txt").write_text("KEY=public\n")
    (sandbox.home / ".ssh").mkdir(exist_ok=True)
    (sandbox.home / ".ssh" / "id_rsa").write_text(f"KEY={SECRET}\n")
    if search.get("path") == "HOME":
        search = {**search, "path": str(sandbox.home)}
    scripted({"responses": [
        {"when": "prompt", "text": "ok", "tool_use": [{"name": "Grep", "input": search}]},
        {"when": "tool_result", "text": "done"},
    ]})
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(POLICY)
    out = gateway_run(sandbox, "look", "--policy", str(policy), "--allowed-tools", "Grep")
    assert out.results, out.stderr[-2000:]
    transcript = "".join(p.read_text() for p in sandbox.projects_root.rglob("*.jsonl"))
    assert '"name":"Grep"' in transcript.replace(" ", "")  # the search ran
    assert SECRET not in transcript
    if "glob" not in search and search.get("path") != str(sandbox.home):
        assert "KEY=public" in transcript  # and found what it may


def test_a_read_the_floor_denies_is_refused_by_claude_code_before_the_hook(
        sandbox: Sandbox, scripted: Any) -> None:
    """Claude Code refuses a Read of a path its own deny rules name before any hook runs; the
    run reads the refusal from the stream and records it, by Claude Code, beside the hook's
    own deny of the Bash call: no gap in the audit log."""
    (sandbox.cwd / ".env").write_text(f"KEY={SECRET}\n")
    scripted({"responses": [
        {"when": "prompt", "text": "ok", "tool_use": [
            {"name": "Read", "input": {"file_path": str(sandbox.cwd / ".env")}}]},
        {"when": "tool_result", "text": "ok", "tool_use": [
            {"name": "Bash", "input": {"command": "cat .env"}}]},
        {"when": "tool_result", "text": "done"},
    ]})
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(POLICY)
    out = gateway_run(sandbox, "look", "--policy", str(policy), "--allowed-tools", "Read,Bash")
    assert out.results, out.stderr[-2000:]
    read, bash = out.tool_results()
    assert read["is_error"] and "denied by your permission settings" in read["content"]
    assert bash["is_error"] and "Read(**/.env)" in bash["content"]
    transcript = "".join(p.read_text() for p in sandbox.projects_root.rglob("*.jsonl"))
    assert SECRET not in transcript
    records = [json.loads(line) for line in
               (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    assert sorted((r.get("tool"), r.get("decision"), r.get("enforced_by"))
                  for r in records) == [("Bash", "deny", "hook"),
                                        ("Read", "deny", "claude-code")]
    floor = next(r for r in records if r.get("tool") == "Read")
    assert floor["rule_id"] == "claude-code:permissions.deny", floor
    assert "denied by your permission settings" in floor["reason"], floor
    assert floor["input"] == {"file_path": str(sandbox.cwd / ".env")}, floor
    verified = subprocess.run([sys.executable, "-m", "gateway", "audit", "verify"],
                              capture_output=True, text=True, env=sandbox.env())
    assert verified.returncode == 0, verified.stdout + verified.stderr
