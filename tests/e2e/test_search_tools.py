"""Claude Code's own search tools over a tree that holds a denied file, in a run the gateway
starts: the hook sees a directory (a Grep over the project is no read of `.env`), so the run
hands Claude Code the policy's floor, whose Read denies its Grep follows, leaving the file out.
Before, the run's Grep printed `.env`'s secret into the conversation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.harness import Sandbox, claude_run, gateway_run
from tests.server.processes import ServeProcess

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


def test_a_settings_wired_session_records_the_floor_refusal_at_the_turn_end(
        sandbox: Sandbox, scripted: Any) -> None:
    """Behind `serve` no stream is read: the Stop hook at the end of the turn has the gateway
    read the turn's results back from the transcript and record Claude Code's refusal, once,
    beside the hook's own deny; the command's failure that merely looks like one is none."""
    (sandbox.cwd / ".env").write_text(f"KEY={SECRET}\n")
    scripted({"responses": [
        {"when": "prompt", "text": "ok", "tool_use": [
            {"name": "Read", "input": {"file_path": str(sandbox.cwd / ".env")}, "id": "toolu_r"},
            {"name": "Bash", "input": {"command": "echo Permission to use Read has been denied."
                                                  "; exit 1"}, "id": "toolu_f"}]},
        {"when": "tool_result", "text": "ok", "tool_use": [
            {"name": "Bash", "input": {"command": "cat .env"}, "id": "toolu_b"}]},
        {"when": "tool_result", "text": "done"},
    ]})
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(POLICY)
    token = "serve-token-floor"
    serve_env = {k: v for k, v in os.environ.items()
                 if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    serve_env.update(AGENT_GATEWAY_HOME=str(sandbox.gateway_home), AGENT_GATEWAY_TOKEN=token,
                     AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
                     OTEL_TRACES_EXPORTER="none", HOME=str(sandbox.home))
    with ServeProcess([str(policy)], str(sandbox.base_url), serve_env,
                      log=sandbox.home.parent / "serve.log") as gateway:
        printed = subprocess.run(
            [sys.executable, "-m", "gateway", "settings", "--url", gateway.url, "--policy",
             str(policy)], capture_output=True, text=True, check=True)
        out = claude_run(sandbox, "look", "--settings", printed.stdout,
                         "--allowedTools", "Read,Bash",
                         env=sandbox.env(AGENT_GATEWAY_TOKEN=token))
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    read, forged, bash = out.tool_results()
    assert read["is_error"] and "denied by your permission settings" in read["content"]
    assert forged["is_error"] and bash["is_error"]
    records = [json.loads(line) for line in
               (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    denies = sorted((r.get("tool_use_id"), r.get("enforced_by")) for r in records
                    if r.get("decision") == "deny")
    assert denies == [("toolu_b", "hook"), ("toolu_r", "claude-code")], denies
    floor = next(r for r in records if r.get("enforced_by") == "claude-code")
    assert floor["rule_id"] == "claude-code:permissions.deny", floor
    assert floor["input"] == {"file_path": str(sandbox.cwd / ".env")}, floor
    assert floor["tenant"] and floor["session_id"] == out.session_id, floor
    verified = subprocess.run([sys.executable, "-m", "gateway", "audit", "verify"],
                              capture_output=True, text=True, env=sandbox.env())
    assert verified.returncode == 0, verified.stdout + verified.stderr
