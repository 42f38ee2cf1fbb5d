"""Two teams, two `serve` replicas sharing one state directory, the real Claude Code.

Team B starts a session through one replica; through the other, team A tries to resume it,
fork it, hook into it, archive it and send model requests for it: each is refused and
audited. Remote runs work only inside the token's runs roots.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, claude_run, post_ndjson, print_settings
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = "version: 1\nname: org\npermissions:\n  allow:\n    - Bash(touch:*)\n"
SCENARIO = {
    "responses": [
        {
            "when": "prompt",
            "times": 0,
            "text": "creating",
            "tool_use": [{"name": "Bash", "input": {"command": "touch made-by-run.txt"}}],
        },
        {"when": "tool_result", "times": 0, "text": "done", "stop_reason": "end_turn"},
    ]
}


def test_team_a_cannot_touch_team_bs_session(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    upstream = scripted(SCENARIO)
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    root_a, root_b = tmp_path / "runs-a", tmp_path / "runs-b"
    (root_a / "work").mkdir(parents=True)
    (root_b / "work").mkdir(parents=True)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "tokens:\n"
        f"  - {{token: tok-a, name: team-a, runs_roots: [{root_a}]}}\n"
        f"  - {{token: tok-b, name: team-b, runs_roots: [{root_b}]}}\n"
    )
    env = sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens))
    env["AGENT_GATEWAY_CLAUDE_PROJECTS"] = str(sandbox.projects_root)
    logs = [sandbox.home / "serve-1.log", sandbox.home / "serve-2.log"]
    one = ServeProcess([str(policy)], upstream.url, env, log=logs[0])
    two = ServeProcess([str(policy)], upstream.url, env, log=logs[1])
    with one, two:
        # team B's session, started through replica one
        status, lines = post_ndjson(one.url, "tok-b", "/v1/runs",
                             {"prompt": "make a file", "cwd": str(root_b / "work")})
        assert status == 200 and lines[-1] == {"type": "gateway_exit", "exit_code": 0,
                                                "errors": []}, lines[-3:]
        sid = next(m["session_id"] for m in lines if m.get("type") == "result")
        assert (root_b / "work" / "made-by-run.txt").exists()
        requests_before = len(upstream.requests)

        # through replica two, team A: resume and fork
        resume = {"prompt": "what did they do?", "cwd": str(root_a / "work"), "resume": sid}
        status, body = post_ndjson(two.url, "tok-a", "/v1/runs", resume)
        assert status == 403 and "cannot resume" in body[0]["error"]
        status, body = post_ndjson(two.url, "tok-a", "/v1/runs", {**resume, "fork_session": True})
        assert status == 403 and "cannot fork" in body[0]["error"]

        # hooks into it
        hook = {"hook_event_name": "PreToolUse", "session_id": sid, "tool_name": "Bash",
                "tool_input": {"command": "touch x"}, "tool_use_id": "toolu_a", "cwd": "/"}
        status, body = post_ndjson(two.url, "tok-a", "/hooks/PreToolUse", hook)
        assert status == 403
        assert body[0]["hookSpecificOutput"]["permissionDecision"] == "deny"

        # archive it: PreCompact naming its transcript
        (transcript,) = sandbox.projects_root.rglob(f"{sid}.jsonl")
        compact = {"hook_event_name": "PreCompact", "session_id": sid,
                   "transcript_path": str(transcript), "trigger": "manual"}
        status, body = post_ndjson(two.url, "tok-a", "/hooks/PreCompact", compact)
        assert status == 403 and body[0]["decision"] == "block"

        # the real Claude Code with team A's settings, resuming team B's session
        settings_file = tmp_path / "team-a-settings.json"
        print_settings(two.url, settings_file)
        started = time.monotonic()
        at_b = replace(sandbox, cwd=root_b / "work")  # where the transcript's project is
        attempt = claude_run(
            at_b, "continue", "--resume", sid, "--settings", str(settings_file),
            env=at_b.env(AGENT_GATEWAY_TOKEN="tok-a"),
            timeout=60,
        )
        took = time.monotonic() - started
        assert attempt.returncode != 0
        assert "belongs to another tenant" in attempt.stdout + attempt.stderr
        assert took < 10
        assert len(upstream.requests) == requests_before  # nothing of it reached the model

        # runs stay inside the token's roots: outside refused, inside accepted
        for cwd in ("/etc", str(root_b / "work"), "/"):
            status, body = post_ndjson(two.url, "tok-a", "/v1/runs", {"prompt": "x", "cwd": cwd})
            assert status == 403 and "outside this token's runs roots" in body[0]["error"], cwd
        status, lines = post_ndjson(two.url, "tok-a", "/v1/runs",
                             {"prompt": "make a file", "cwd": str(root_a / "work")})
        assert status == 200 and lines[-1]["exit_code"] == 0
        assert (root_a / "work" / "made-by-run.txt").exists()

    audit = [json.loads(line)
             for line in (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    refused = [(r["event"], r.get("session_id")) for r in audit
               if r.get("rule_id") == "gateway.tenant" and r["tenant"] == "team-a"]
    for attempted in (("RemoteRun", sid), ("PreToolUse", sid), ("PreCompact", sid),
                      ("ModelRequest", sid), ("SessionEnd", sid), ("RemoteRun", "")):
        assert attempted in refused, (attempted, refused)
    assert sum(1 for e in refused if e == ("RemoteRun", sid)) == 2  # resume and fork
    assert sum(1 for e in refused if e == ("RemoteRun", "")) == 3  # three cwds outside
    assert not [r for r in audit if r.get("rule_id") == "gateway.tenant"
                and r["tenant"] == "team-b"]
    for log in logs:
        assert "Traceback" not in log.read_text()
