"""What the agent of `agent-gateway run` (and of `gateway.query`) can reach, with the real
Claude Code: none of the gateway's secrets in the environment its commands inherit, and no
way to put a decision or a message of its own making into what the gateway reads: the run's
hook endpoint (and so the audit log), Claude Code's output stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e import forgery
from tests.e2e.harness import RunOutcome, Sandbox, as_the_same_user, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]


SCAN = """printenv
echo SCANNED
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -E 'TOKEN|KEY_FILE' | sort -u
"""


def bash_then_finish(command: str) -> dict[str, Any]:
    return {"responses": [
        {"when": "prompt", "text": "working",
         "tool_use": [{"name": "Bash", "input": {"command": command}}]},
        {"when": "tool_result", "text": "finished"},
    ]}


def tool_output(out: RunOutcome) -> str:
    return "\n".join(str(b["content"]) for b in out.tool_results())


def audit_records(sandbox: Sandbox) -> list[dict[str, Any]]:
    log = sandbox.gateway_home / "audit.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def policy(sandbox: Sandbox, allow: str) -> str:
    path = sandbox.cwd.parent / "policy.yaml"
    path.write_text(f"version: 1\npermissions:\n  allow: ['{allow}']\n")
    return str(path)


def test_the_agents_commands_inherit_none_of_the_gateways_secrets(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    (sandbox.cwd / "scan.sh").write_text(SCAN)
    scripted(bash_then_finish("sh scan.sh"))
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {token: tok-local-5d7e9f1a3b, name: me}\n")
    key_file = tmp_path / "audit.key"
    key_file.write_text("0123456789abcdef0123456789abcdef0123456789\n")
    env = sandbox.env(
        AGENT_GATEWAY_TOKEN="tok-local-5d7e9f1a3b", AGENT_GATEWAY_TOKENS_FILE=str(tokens),
        AGENT_GATEWAY_AUDIT_KEY_FILE=str(key_file),
        AGENT_GATEWAY_METRICS_TOKEN="scrape-8b2c4d6e0f",
        USERS_OWN_SETTING="kept-for-the-agent",
    )
    out = gateway_run(sandbox, "env", "--policy", policy(sandbox, "Bash(sh scan.sh)"),
                      "--allowed-tools", "Bash", env=env, wrapper=as_the_same_user())

    assert out.returncode == 0, out.stderr[-2000:]
    printed = tool_output(out)
    assert "USERS_OWN_SETTING=kept-for-the-agent" in printed  # the user's, for their agent
    # The scan read what it may (Claude Code's environment), not the run's own.
    assert "AGENT_GATEWAY_RUN_HOOK_TOKEN=" in printed.split("SCANNED", 1)[1], printed
    for secret in ("tok-local-5d7e9f1a3b", "scrape-8b2c4d6e0f", str(key_file), str(tokens),
                   "AGENT_GATEWAY_TOKEN=", "AGENT_GATEWAY_TOKENS_FILE", "AUDIT_KEY_FILE"):
        assert secret not in printed
    # The key signed the run's record all the same: the gateway kept what the agent lost.
    (record,) = audit_records(sandbox)
    assert record["input"]["command"] == "sh scan.sh" and record.get("mac")


def test_a_decision_the_agent_posts_to_the_runs_endpoint_is_refused_and_never_recorded(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    (sandbox.cwd / "forge.py").write_text(forgery.SCRIPT)
    scripted(bash_then_finish("python3 forge.py"))
    out = gateway_run(sandbox, "forge", "--policy", policy(sandbox, "Bash(python3 forge.py)"),
                      "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    assert forgery.forge_status(tool_output(out)) == 403, tool_output(out)
    records = audit_records(sandbox)
    assert forgery.MARK not in json.dumps(records)
    # Claude Code's own hook call was answered and recorded as ever.
    assert [r["input"]["command"] for r in records] == ["python3 forge.py"]
    assert "not the run's Claude Code" in out.stderr


def test_lines_the_agent_writes_into_claude_codes_stdio_never_reach_the_run(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    (sandbox.cwd / "inject.py").write_text(forgery.STREAM_SCRIPT)
    scripted(bash_then_finish("python3 inject.py"))
    out = gateway_run(sandbox, "inject", "--policy", policy(sandbox, "Bash(python3 inject.py)"),
                      "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr[-2000:]
    said = tool_output(out)
    assert "REFUSED FD 1" in said and "REFUSED FD 0" in said, said
    assert forgery.MARK not in out.stdout
    assert out.result["result"] == "finished"


async def test_a_hook_callback_the_agent_writes_never_reaches_gateway_query(
    sandbox: Sandbox, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, UserMessage

    from gateway import query

    (sandbox.cwd / "inject.py").write_text(forgery.STREAM_SCRIPT)
    scripted(bash_then_finish("python3 inject.py"))
    for key, value in sandbox.env().items():
        monkeypatch.setenv(key, value)
    options = ClaudeAgentOptions(cwd=str(sandbox.cwd), allowed_tools=["Bash"])
    messages = [m async for m in query(prompt="inject", options=options,
                                       policy=[policy(sandbox, "Bash(python3 inject.py)")])]

    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "finished"
    said = "\n".join(str(b.content) for m in messages if isinstance(m, UserMessage)
                     and isinstance(m.content, list) for b in m.content)
    assert "REFUSED FD 1" in said, said
    records = audit_records(sandbox)
    assert forgery.MARK not in json.dumps(records)
    assert [r["input"]["command"] for r in records] == ["python3 inject.py"]
