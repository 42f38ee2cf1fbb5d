"""Fail closed with the real Claude Code: `agent-gateway run` with a step of its hook callbacks
broken (injected into the real process before it starts). A tracer that raises after a deny
must not let the denied `rm` delete the file; a decision that cannot be made is a deny; a
compaction whose required archive fails stays blocked whatever tracing does."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import RunOutcome, Sandbox, gateway_run, parse_lines

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(echo:*)']\n"

BROKEN = {
    # Every method the SDK callbacks call on the run's tracer raises.
    "tracer": (
        "import gateway.runner.tracer as t\n"
        "def boom(*a, **k): raise RuntimeError('tracer broke')\n"
        "t.RunTracer.pre_tool_use = t.RunTracer.transcript = t.RunTracer.compacted = boom\n"
    ),
    # The policy evaluation itself raises.
    "decide": (
        "import gateway.handlers.decision as d\n"
        "def boom(*a, **k): raise RuntimeError('evaluation broke')\n"
        "d.decide = boom\n"
    ),
}


def broken_run(sandbox: Sandbox, broken: str, prompt: str, *args: str) -> RunOutcome:
    """`agent-gateway run PROMPT --output-format stream-json ARGS`, with `broken` injected."""
    code = BROKEN[broken] + (
        "import sys\nfrom gateway.cli.main import main\n"
        "main(['run', sys.argv[1], '--output-format', 'stream-json', *sys.argv[2:]])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, prompt, *args],
        cwd=sandbox.cwd, env=sandbox.env(), capture_output=True, text=True, timeout=180,
        check=False,
    )
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr, parse_lines(proc.stdout))


def rm_then_finish(command: str) -> dict[str, Any]:
    return {
        "responses": [
            {"when": "prompt", "text": "cleaning",
             "tool_use": [{"name": "Bash", "input": {"command": command}}]},
            {"when": "tool_result", "text": "finished"},
        ]
    }


def write_policy(sandbox: Sandbox, text: str = POLICY) -> Path:
    path = sandbox.cwd.parent / "policy.yaml"
    path.write_text(text)
    return path


def test_a_tracer_that_raises_never_lets_a_denied_rm_run(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    precious = sandbox.cwd / "precious.txt"
    precious.write_text("keep me\n")
    scripted(rm_then_finish("rm -f precious.txt"))
    # Bash is allowed by Claude Code's own settings: only the gateway's deny stands between
    # the model and the file (a hook error would let the call run).
    out = broken_run(sandbox, "tracer", "clean up", "--policy", str(write_policy(sandbox)),
                     "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    assert precious.read_text() == "keep me\n"  # the denied rm never ran
    (denied,) = out.tool_results()
    assert denied["is_error"] is True and "permissions.deny[1]" in str(denied["content"])
    assert [d["tool_name"] for d in out.result["permission_denials"]] == ["Bash"]
    assert "tracer broke" in out.stderr  # said, not swallowed
    records = [json.loads(line) for line in
               (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    assert [r["decision"] for r in records] == ["deny"]


def test_a_decision_that_cannot_be_made_is_a_deny(sandbox: Sandbox, scripted: Scripted) -> None:
    victim = sandbox.cwd / "victim.txt"
    victim.write_text("data\n")
    scripted(rm_then_finish("echo allowed > made.txt; rm -f victim.txt"))
    out = broken_run(sandbox, "decide", "go", "--policy", str(write_policy(sandbox)),
                     "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    assert victim.exists() and not (sandbox.cwd / "made.txt").exists()
    (denied,) = out.tool_results()
    assert denied["is_error"] is True and "could not decide" in str(denied["content"])
    record = json.loads((sandbox.gateway_home / "audit.jsonl").read_text().splitlines()[0])
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")


def test_a_tracer_that_raises_never_lets_a_required_archive_be_skipped(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    summary = {"when": "compaction", "text": "<summary>Work so far.</summary>", "times": 0}
    scripted({"responses": [{"when": "prompt", "text": "hello", "times": 0}, summary]})
    first = gateway_run(sandbox, "hi")
    assert first.returncode == 0, first.stderr[-2000:]
    blocker = sandbox.cwd.parent / "not-a-directory"
    blocker.write_text("a file where the store's parent should be")
    policy = write_policy(
        sandbox, f"version: 1\ncompaction:\n  path: {blocker}/store\n  require_archive: true\n"
    )
    blocked = broken_run(sandbox, "tracer", "/compact", "--resume", first.session_id,
                         "--policy", str(policy))

    assert not any(m.get("subtype") == "compact_boundary" for m in blocked.messages)
    assert "compaction blocked" in json.dumps(blocked.messages)
    assert "tracer broke" in blocked.stderr
