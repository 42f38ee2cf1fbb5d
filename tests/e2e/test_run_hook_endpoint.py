"""`agent-gateway run` asks its decisions over an http hook on a loopback endpoint inside the
run process, with the real Claude Code: a denied `rm` does not run; when the endpoint cannot
answer (the answer raises, a request without the run's token), Claude Code blocks the tool
(`onFailure: block`), it never runs it; and the run never imports claude_agent_sdk."""

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

# Bash is allowed by Claude Code's own settings (--allowed-tools Bash), so only the hook
# stands between the model and the file.
POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(echo:*)']\n"

REPORT_SDK = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('SDK LOADED' if any(m.split('.')[0] in "
    "('claude_agent_sdk', 'mcp') for m in sys.modules) else 'SDK NOT LOADED', file=sys.stderr))\n"
)
INJECTED = {
    "none": "",
    # The endpoint's answer itself raises (not the decision, which would fail closed to a
    # deny inside the shared path): the handler can only answer 500.
    "answer": (
        "import gateway.runner.hook_answers as h\n"
        "def boom(*a, **k): raise RuntimeError('endpoint broke')\n"
        "h.HookAnswers.pre_tool_use = boom\n"
    ),
    "compact": (
        "import gateway.runner.hook_answers as h\n"
        "async def boom(*a, **k): raise RuntimeError('endpoint broke')\n"
        "h.HookAnswers.pre_compact = boom\n"
    ),
    # The decision would take longer than the hook's 60 s timeout: its deadline denies it.
    "slow": (
        "import time\nimport gateway.handlers.decision as d\n"
        "decide = d.decide\n"
        "def slow(*a, **k):\n    time.sleep(65)\n    return decide(*a, **k)\n"
        "d.decide = slow\n"
    ),
    # Claude Code is given a token that is not the run's: every hook call gets a 401.
    "token": (
        "import gateway.runner.hook_endpoint as e\n"
        "e.HookEndpoint.env = lambda self: {e.TOKEN_ENV: 'not-the-token'}\n"
    ),
}


def run_with(sandbox: Sandbox, injected: str, prompt: str, *args: str) -> RunOutcome:
    code = REPORT_SDK + INJECTED[injected] + (
        "import sys\nfrom gateway.cli.main import main\n"
        "sys.exit(main(['run', sys.argv[1], '--output-format', 'stream-json', *sys.argv[2:]]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, prompt, *args], cwd=sandbox.cwd, env=sandbox.env(),
        capture_output=True, text=True, timeout=180, check=False,
    )
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr, parse_lines(proc.stdout))


def rm_then_finish(command: str) -> dict[str, Any]:
    return {"responses": [
        {"when": "prompt", "text": "cleaning",
         "tool_use": [{"name": "Bash", "input": {"command": command}}]},
        {"when": "tool_result", "text": "finished"},
    ]}


def policy_file(sandbox: Sandbox) -> Path:
    path = sandbox.cwd.parent / "policy.yaml"
    path.write_text(POLICY)
    return path


def audit_records(sandbox: Sandbox) -> list[dict[str, Any]]:
    log = sandbox.gateway_home / "audit.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_denied_rm_does_not_run_and_the_sdk_is_never_imported(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    precious = sandbox.cwd / "precious.txt"
    precious.write_text("keep me\n")
    scripted(rm_then_finish("rm -f precious.txt"))
    out = run_with(sandbox, "none", "clean up", "--policy", str(policy_file(sandbox)),
                   "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    assert precious.read_text() == "keep me\n"
    (denied,) = out.tool_results()
    assert denied["is_error"] is True and "permissions.deny[1]" in str(denied["content"])
    assert [r["decision"] for r in audit_records(sandbox)] == ["deny"]
    assert "SDK NOT LOADED" in out.stderr


def test_an_allowed_call_runs_through_the_endpoint(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted(rm_then_finish("echo made > made.txt"))
    out = run_with(sandbox, "none", "make", "--policy", str(policy_file(sandbox)),
                   "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    assert (sandbox.cwd / "made.txt").read_text() == "made\n"
    assert [r["decision"] for r in audit_records(sandbox)] == ["allow"]


@pytest.mark.parametrize("injected", ["answer", "token"])
def test_an_endpoint_that_cannot_answer_blocks_the_tool(
    sandbox: Sandbox, scripted: Scripted, injected: str
) -> None:
    victim = sandbox.cwd / "victim.txt"
    victim.write_text("data\n")
    # Even a call the policy would allow must not run without an answer.
    scripted(rm_then_finish("echo ran > ran.txt; rm -f victim.txt"))
    out = run_with(sandbox, injected, "go", "--policy", str(policy_file(sandbox)),
                   "--allowed-tools", "Bash")

    assert victim.read_text() == "data\n"
    assert not (sandbox.cwd / "ran.txt").exists()
    (blocked,) = out.tool_results()
    assert blocked["is_error"] is True
    assert "onFailure" in str(blocked["content"]) or "hook error" in str(blocked["content"])
    assert audit_records(sandbox) == []  # nothing was decided, so nothing recorded an allow


def test_an_endpoint_that_cannot_answer_blocks_the_compaction(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    summary = {"when": "compaction", "text": "<summary>Work so far.</summary>", "times": 0}
    scripted({"responses": [{"when": "prompt", "text": "hello", "times": 0}, summary]})
    first = gateway_run(sandbox, "hi")
    assert first.returncode == 0, first.stderr[-2000:]
    # Archiving is off: a working endpoint would let the compaction go ahead.
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text("version: 1\ncompaction:\n  archive: false\n  require_archive: false\n")
    allowed = run_with(sandbox, "none", "/compact", "--resume", first.session_id,
                       "--policy", str(policy))
    assert any(m.get("subtype") == "compact_boundary" for m in allowed.messages)

    blocked = run_with(sandbox, "compact", "/compact", "--resume", first.session_id,
                       "--policy", str(policy))
    assert not any(m.get("subtype") == "compact_boundary" for m in blocked.messages)
    assert "PreCompact not answered" in blocked.stderr


def test_a_decision_slower_than_its_deadline_is_a_recorded_deny(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    """Even a call the policy would allow: past the deadline (well inside the hook timeout)
    it is denied, the deny is recorded, and the abandoned decision never records itself."""
    victim = sandbox.cwd / "victim"
    victim.mkdir()
    scripted(rm_then_finish("echo ran > ran.txt; rm -rf victim"))
    out = run_with(sandbox, "slow", "go", "--policy", str(policy_file(sandbox)),
                   "--allowed-tools", "Bash")

    assert victim.is_dir() and not (sandbox.cwd / "ran.txt").exists()
    (denied,) = out.tool_results()
    assert denied["is_error"] is True and "deadline" in str(denied["content"])
    (record,) = audit_records(sandbox)
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")
    assert "deadline" in record["reason"]
