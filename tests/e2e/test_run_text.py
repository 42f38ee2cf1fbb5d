"""`agent-gateway run` in text mode on the real Claude Code: what a person at a terminal sees."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.telemetry import attributes as A
from tests.e2e.harness import Sandbox

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm -rf:*)']\n  allow: ['Bash(echo:*)']\n"
SCENARIO = {
    "responses": [
        {"when": "prompt", "text": "First a note.",
         "tool_use": [{"name": "Bash", "input": {"command": "echo hello > note.txt"}}]},
        {"when": "tool_result", "text": "Now the cleanup.",
         "tool_use": [{"name": "Bash", "input": {"command": "rm -rf keep"}}]},
        {"when": "tool_result", "text": "The cleanup was refused; the note is written."},
    ]
}


def text_run(sandbox: Sandbox, *args: str, env: dict[str, str] | None = None,
             timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", "run", *args], cwd=sandbox.cwd,
        env=env or sandbox.env(), capture_output=True, text=True, timeout=timeout, check=False,
    )


def root_span(sandbox: Sandbox) -> dict[str, Any]:
    spans = [json.loads(line) for line in
             (sandbox.gateway_home / "spans" / "spans.jsonl").read_text().splitlines()]
    return next(s for s in reversed(spans) if s["name"] == "invoke_agent claude-code")


def test_session_tool_calls_and_cost_on_stderr_answer_on_stdout(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    scripted(SCENARIO)
    (sandbox.cwd / "keep").mkdir()
    policy = sandbox.cwd.parent / "org.yaml"
    policy.write_text(POLICY)
    out = text_run(sandbox, "--policy", str(policy), "write a note, then clean up")

    assert out.returncode == 0, out.stderr
    assert out.stdout == "The cleanup was refused; the note is written.\n"
    lines = out.stderr.splitlines()
    assert lines[0].startswith("session ") and len(lines[0].split()[1]) == 36
    assert lines[1] == "  Bash  echo hello > note.txt  -> allow [org.yaml:permissions.allow[1]]"
    assert lines[2] == "  Bash  rm -rf keep  -> deny [org.yaml:permissions.deny[1]]"
    assert lines[3].startswith("success: 3 turns, $0.")
    assert len(lines) == 4
    assert (sandbox.cwd / "keep").is_dir() and (sandbox.cwd / "note.txt").exists()

    quiet = text_run(sandbox, "--policy", str(policy), "--quiet", "again")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.strip()


def test_no_policy_is_said_in_one_line_and_recorded_on_the_root_span(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    scripted({"responses": [{"text": "Hello.", "times": 0}]})
    env = sandbox.env()
    env.pop("OTEL_TRACES_EXPORTER")  # spans to the local span file
    out = text_run(sandbox, "hi", env=env)
    assert out.returncode == 0, out.stderr
    warning = out.stderr.splitlines()[0]
    assert warning.startswith("agent-gateway run: no policy:") and "--policy" in warning
    assert root_span(sandbox)["attributes"][A.POLICY_FILES] == 0

    policy = sandbox.cwd.parent / "org.yaml"
    policy.write_text(POLICY)
    guarded = text_run(sandbox, "hi", env={**env, "AGENT_GATEWAY_POLICY": str(policy)})
    assert guarded.returncode == 0, guarded.stderr
    assert "no policy" not in guarded.stderr
    assert root_span(sandbox)["attributes"][A.POLICY_FILES] == 1


def test_policy_from_the_environment_decides(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted(SCENARIO)
    (sandbox.cwd / "keep").mkdir()
    policy = sandbox.cwd.parent / "org.yaml"
    policy.write_text(POLICY)
    out = text_run(sandbox, "clean up", env=sandbox.env(AGENT_GATEWAY_POLICY=str(policy)))
    assert out.returncode == 0, out.stderr
    assert "-> deny [org.yaml:permissions.deny[1]]" in out.stderr
    assert (sandbox.cwd / "keep").is_dir()


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: connections are refused


def test_an_unreachable_api_is_reported_within_10_seconds(sandbox: Sandbox) -> None:
    url = f"http://127.0.0.1:{_refused_port()}"
    env = sandbox.env(ANTHROPIC_BASE_URL=url, CLAUDE_CODE_MAX_RETRIES="10")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "run", "hi"], cwd=sandbox.cwd, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        while time.monotonic() - started < 20:
            line = proc.stderr.readline()
            seen.append(line)
            if "cannot be reached" in line:
                break
        elapsed = time.monotonic() - started
    finally:
        proc.kill()
        proc.wait()
    report = seen[-1]
    assert "cannot be reached" in report, seen
    assert elapsed < 10, f"reported after {elapsed:.1f} s"
    assert url in report and "Check ANTHROPIC_BASE_URL" in report


def test_a_compaction_only_run_is_not_silent(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted({"responses": [
        {"when": "prompt", "text": "Hello.", "times": 0},
        {"when": "compaction", "text": "<summary>Said hello.</summary>", "times": 0},
    ]})
    sid = json.loads(text_run(sandbox, "--output-format", "json", "hi").stdout)["session_id"]
    out = text_run(sandbox, "--resume", sid, "/compact")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert "compacting the conversation ..." in lines
    assert any(line.startswith("transcript archived before compaction: ") for line in lines)
    assert any(line.startswith("compacted (manual): ") for line in lines)
    assert f"session {sid}" in lines
    assert lines[-1].startswith("success: 0 turns, $")
