"""A developer machine with no gateway process: `agent-gateway settings --command-hook --policy
P` wires a bare `claude -p` with command hooks for every event, which decide, record Claude
Code's own refusals, archive before compaction and trace, all on this machine."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.harness import RunOutcome, Sandbox, claude_run

pytestmark = pytest.mark.e2e
SECRET = "top-secret-value"
POLICY = """\
version: 1
permissions:
  deny: ['Read(**/.env)']
rules:
  - id: no-rm
    reason: Deleting is for humans.
    tool: Bash
    command: "rm:*"
"""


def local_settings(sandbox: Sandbox, policy: str) -> str:
    printed = subprocess.run(
        [sys.executable, "-m", "gateway", "settings", "--command-hook", "--policy", policy],
        capture_output=True, text=True,
        env={k: v for k, v in sandbox.env().items() if not k.startswith("OTEL_")})
    assert printed.returncode == 0, printed.stderr
    assert "local span file" in printed.stderr  # no OTEL_* here: where the spans go instead
    settings = json.loads(printed.stdout)
    assert set(settings["hooks"]) >= {"PreToolUse", "PreCompact", "Stop", "SessionEnd"}
    assert "env" not in settings  # no proxy, no gateway URL
    return printed.stdout.replace(
        '"agent-gateway hook', f'"{shlex.quote(sys.executable)} -m gateway hook')


def gateway(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], capture_output=True,
                          text=True, env=sandbox.env())


def session(sandbox: Sandbox, settings: str, prompt: str, *args: str) -> RunOutcome:
    out = claude_run(sandbox, prompt, "--settings", settings, "--allowedTools", "Read,Bash",
                     *args)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    return out


def test_a_session_wired_with_local_command_hooks_is_decided_recorded_archived_and_traced(
        sandbox: Sandbox, scripted: Any) -> None:
    (sandbox.cwd / ".env").write_text(f"KEY={SECRET}\n")
    (sandbox.cwd / "victim.txt").write_text("keep me\n")
    scripted({"responses": [
        {"when": "prompt", "text": "ok", "tool_use": [
            {"name": "Read", "input": {"file_path": str(sandbox.cwd / ".env")}, "id": "toolu_r"},
            {"name": "Bash", "input": {"command": "touch made.txt"}, "id": "toolu_t"}]},
        {"when": "tool_result", "text": "ok", "tool_use": [
            {"name": "Bash", "input": {"command": "rm victim.txt"}, "id": "toolu_rm"}]},
        {"when": "tool_result", "text": "done, a long enough answer to summarise later"},
        {"when": "compaction", "text": "<summary>The user asked to look.</summary>"},
    ]})
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(POLICY)
    settings = local_settings(sandbox, str(policy))
    out = session(sandbox, settings, "look")
    # Decided: the allowed command ran, the denied one did not, the floor kept the secret.
    assert (sandbox.cwd / "made.txt").exists()
    assert (sandbox.cwd / "victim.txt").exists()
    assert SECRET not in out.stdout
    records = [json.loads(line) for line in
               (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    denies = sorted((r.get("tool_use_id"), r.get("enforced_by")) for r in records
                    if r.get("decision") == "deny")
    # Claude Code's own refusal of the Read, which no PreToolUse hook saw, is on record once.
    assert denies == [("toolu_r", "claude-code"), ("toolu_rm", "hook")], denies
    # Archived before compaction, in a later process of the same session.
    compacted = session(sandbox, settings, "/compact", "--resume", out.session_id)
    assert any(m.get("subtype") == "compact_boundary" for m in compacted.messages)
    listed = gateway(sandbox, "archive", "list")
    assert listed.returncode == 0 and out.session_id in listed.stdout, listed
    for what in ("audit", "archive"):
        verified = gateway(sandbox, what, "verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # Traced: the spans in the local span file, read back by `trace show`.
    shown = gateway(sandbox, "trace", "show", out.session_id)
    assert shown.returncode == 0, shown.stderr
    for expected in ("execute_tool Bash", "turn", "chat ", "compaction", "deny"):
        assert expected in shown.stdout, shown.stdout
    spans = [json.loads(line) for line in
             (sandbox.gateway_home / "spans" / "spans.jsonl").read_text().splitlines()]
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert len(chats) >= 3  # the model's three responses, read back from the transcript
    assert all(s["attributes"]["gen_ai.usage.input_tokens"] > 0 for s in chats)
    roots = [s for s in spans if s["parent_span_id"] is None]
    assert roots and all(r["status"]["code"] == "ok" for r in roots), roots


def test_local_observed_hooks_never_block_on_bad_input(sandbox: Sandbox) -> None:
    """Exit 2 at Stop would keep the agent going: an observed event that cannot be handled
    says so and exits 1; a blocking one still exits 2."""
    for event, status in (("stop", 1), ("post-tool-use", 1), ("pre-tool-use", 2)):
        done = subprocess.run([sys.executable, "-m", "gateway", "hook", event], input="[1,",
                              capture_output=True, text=True, env=sandbox.env())
        assert done.returncode == status, (event, done.stderr)
        assert done.stderr.count("\n") == 1 and "agent-gateway" in done.stderr
