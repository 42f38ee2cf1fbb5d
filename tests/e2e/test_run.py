"""`agent-gateway run` around the real Claude Code against the scripted Messages API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, gateway_cli, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]


def bash(command: str, text: str = "Running it.", **extra: Any) -> dict[str, Any]:
    return {"text": text, "tool_use": [{"name": "Bash", "input": {"command": command}}], **extra}


def test_multi_turn_tool_use_succeeds_with_real_effects(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    server = scripted(
        {
            "responses": [
                bash("echo written-by-agent > made.txt", when="prompt"),
                bash("cp made.txt copy.txt", when="tool_result"),
                {"when": "tool_result", "text": "Both files are in place."},
            ]
        }
    )
    out = gateway_run(sandbox, "make two files", "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr
    assert (sandbox.cwd / "made.txt").read_text() == "written-by-agent\n"
    assert (sandbox.cwd / "copy.txt").read_text() == "written-by-agent\n"
    assert out.result["subtype"] == "success"
    assert out.result["num_turns"] == 3
    assert out.result["result"] == "Both files are in place."
    # The scripted API saw three requests of one session, each tool result fed back.
    requests = server.requests
    assert [r.kind for r in requests] == ["prompt", "tool_result", "tool_result"]
    assert {r.session_id for r in requests} == {out.session_id}
    first_tool_id = requests[0].message_id.removeprefix("msg_")
    fed_back = requests[1].body["messages"][-1]["content"][0]
    assert (
        fed_back["type"] == "tool_result" and fed_back["tool_use_id"] == f"toolu_{first_tool_id}_0"
    )
    # stream-json has the CLI's shape: no partial stream unless asked for.
    types = [m["type"] for m in out.messages]
    assert types[0] == "system" and types[-1] == "result"
    assert "stream_event" not in types
    assert sum(1 for m in out.messages if m["type"] == "assistant") == 5  # one line per block


def test_partial_messages_are_forwarded_only_on_request(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    scripted({"responses": [{"text": "hello", "usage": {"input_tokens": 11, "output_tokens": 7}}]})
    out = gateway_run(sandbox, "hi", "--include-partial-messages")

    assert out.returncode == 0, out.stderr
    deltas = [
        m["event"]
        for m in out.messages
        if m["type"] == "stream_event" and m["event"]["type"] == "message_delta"
    ]
    assert len(deltas) == 1
    assert deltas[0]["usage"]["output_tokens"] == 7
    assert deltas[0]["delta"]["stop_reason"] == "end_turn"


def test_text_and_json_output_formats(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted({"responses": [{"text": "forty-two", "times": 0}]})
    text = gateway_cli(sandbox, "run", "answer")
    assert text.returncode == 0, text.stderr
    assert text.stdout == "forty-two\n"

    as_json = gateway_cli(sandbox, "run", "answer", "--output-format", "json")
    result = json.loads(as_json.stdout)
    assert result["type"] == "result" and result["result"] == "forty-two"


def test_max_turns_reached_exits_1_with_subtype(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted({"responses": [bash("echo again >> turns.txt", times=0)]})
    out = gateway_run(sandbox, "loop", "--max-turns", "1", "--allowed-tools", "Bash")

    assert out.returncode == 1
    assert out.result["subtype"] == "error_max_turns"
    assert "error_max_turns" in out.stderr
    assert "Traceback" not in out.stderr
    assert (sandbox.cwd / "turns.txt").read_text() == "again\n"  # the one allowed turn ran


def test_max_budget_reached_exits_1(sandbox: Sandbox, scripted: Scripted) -> None:
    heavy = {"input_tokens": 50_000, "output_tokens": 2_000}
    server = scripted({"responses": [bash("echo spend", usage=heavy, times=0)]})
    out = gateway_run(sandbox, "spend", "--max-budget-usd", "0.01", "--allowed-tools", "Bash")

    assert out.returncode == 1
    assert out.result["subtype"] == "error_max_budget_usd"
    assert out.result["total_cost_usd"] >= 0.01
    assert "error_max_budget_usd" in out.stderr
    assert len(server.requests) == 1  # stopped after the first priced response


def test_upstream_529_is_retried_then_succeeds(sandbox: Sandbox, scripted: Scripted) -> None:
    server = scripted({"responses": [{"status": 529}, {"text": "recovered"}]})
    out = gateway_run(sandbox, "hi")

    assert out.returncode == 0, out.stderr
    assert [r.status for r in server.requests] == [529, 200]
    assert any(m.get("subtype") == "api_retry" for m in out.messages)
    assert out.result["result"] == "recovered"


def test_upstream_500_exhausting_retries_fails(sandbox: Sandbox, scripted: Scripted) -> None:
    server = scripted({"responses": [{"status": 500, "times": 0}]})
    out = gateway_run(sandbox, "hi")

    assert out.returncode == 1
    assert out.result["is_error"] is True
    assert "500" in out.stderr
    assert [r.status for r in server.requests] == [500, 500]  # CLAUDE_CODE_MAX_RETRIES=1


def test_resume_and_fork_continue_the_conversation(sandbox: Sandbox, scripted: Scripted) -> None:
    server = scripted(
        {
            "responses": [
                {"text": "first answer"},
                {"text": "second answer"},
                {"text": "forked answer"},
            ]
        }
    )
    first = gateway_run(sandbox, "remember the word pelican")
    assert first.returncode == 0, first.stderr
    sid = first.session_id
    transcript = next(sandbox.projects_root.glob(f"*/{sid}.jsonl"))

    resumed = gateway_run(sandbox, "what was the word?", "--resume", sid)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.session_id == sid
    history = json.dumps(server.requests[1].body["messages"])
    assert "remember the word pelican" in history and "first answer" in history
    size_after_resume = transcript.stat().st_size

    forked = gateway_run(sandbox, "and now?", "--resume", sid, "--fork-session")
    assert forked.returncode == 0, forked.stderr
    assert forked.session_id != sid
    assert "remember the word pelican" in json.dumps(server.requests[2].body["messages"])
    assert transcript.stat().st_size == size_after_resume  # the original is untouched
    assert (transcript.parent / f"{forked.session_id}.jsonl").exists()


def test_cli_errors_are_one_line(sandbox: Sandbox) -> None:
    missing = gateway_cli(sandbox, "run")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "prompt" in missing.stderr

    bad = gateway_cli(sandbox, "run", "hi", "--max-turns", "many")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "--max-turns" in bad.stderr

    fork = gateway_cli(sandbox, "run", "hi", "--fork-session")
    assert fork.returncode == 2 and "--resume" in fork.stderr and "Traceback" not in fork.stderr


def test_help_documents_every_option(sandbox: Sandbox) -> None:
    out = gateway_cli(sandbox, "run", "--help")
    for option in (
        "--cwd",
        "--model",
        "--max-turns",
        "--max-budget-usd",
        "--permission-mode",
        "--allowed-tools",
        "--disallowed-tools",
        "--effort",
        "--resume",
        "--fork-session",
        "--settings",
        "--policy",
        "--output-format",
        "--include-partial-messages",
    ):
        assert option in out.stdout
