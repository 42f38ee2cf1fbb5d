"""Text mode's progress lines, fed the recorded stream of the real Claude Code 2.1.332."""

from __future__ import annotations

import io
import json
from typing import Any

from gateway.runner.progress import Progress
from gateway.types import Decision
from tests.fixtures import CLAUDE_CODE_RECORDINGS

URL = "http://127.0.0.1:8788"


def recorded(name: str) -> list[dict[str, Any]]:
    path = CLAUDE_CODE_RECORDINGS / f"stream-json.{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def lines(progress: Progress) -> list[str]:
    err = progress.err
    assert isinstance(err, io.StringIO)
    return err.getvalue().splitlines()


def test_session_first_then_each_tool_call_then_turns_and_cost() -> None:
    progress = Progress(io.StringIO(), URL)
    for message in recorded("tool-call"):
        progress(message)
        if message.get("type") == "assistant":
            for block in message["message"]["content"]:
                if block.get("type") == "tool_use":
                    progress.decided(block["id"], block["name"], block["input"],
                                     Decision("allow", "org.yaml:permissions.allow[1]"))
    out = lines(progress)
    session = recorded("tool-call")[-1]["session_id"]
    assert out[0] == f"session {session}"
    assert out[1] == "  Bash  echo hi  -> allow [org.yaml:permissions.allow[1]]"
    assert out[-1] == "success: 2 turns, $0.0113"
    assert len(out) == 3


def test_a_deny_shows_its_rule_and_claude_codes_own_refusal_shows_why() -> None:
    progress = Progress(io.StringIO(), URL)
    progress.decided("t1", "Bash", {"command": "rm -rf build/"},
                     Decision("deny", "org.yaml:permissions.deny[1]", "no"))
    progress.decided("t2", "Bash", {"command": "make"}, Decision("abstain"))
    progress.decided("t3", "Read", {"file_path": "/srv/a"}, None)
    for tool_use_id, text in (("t1", "denied by the policy"), ("t2", "needs approval")):
        progress({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "is_error": True,
             "content": text}]}})
    assert lines(progress) == [
        "  Bash  rm -rf build/  -> deny [org.yaml:permissions.deny[1]]",
        "  Bash  make  -> abstain (no rule: Claude Code decides)",
        "  Read  /srv/a  -> no policy",
        "  Bash failed: needs approval",
    ]


def test_a_compaction_only_run_says_what_happened() -> None:
    progress = Progress(io.StringIO(), URL)
    for message in recorded("manual-compact"):
        progress(message)
        if message.get("subtype") == "status" and message.get("compact_result"):
            progress.archived("ab" * 32, "", False)
    out = lines(progress)
    assert out[0] == "compacting the conversation ..."
    assert out[1] == f"transcript archived before compaction: {'ab' * 32}"
    assert out[2].startswith("session ")
    assert out[3] == "compacted (manual): 1242 -> 2588 tokens of context"
    # total_cost_usd counts the session's earlier process too; this run spent half of it
    assert out[-1] == "success: 0 turns, $0.0113 ($0.0226 for the whole session)"


def test_retries_name_the_url_and_what_to_check() -> None:
    progress = Progress(io.StringIO(), URL)
    for attempt, status in ((1, None), (2, None), (3, 529)):
        progress({"type": "system", "subtype": "api_retry", "attempt": attempt,
                  "max_retries": 10, "retry_delay_ms": 600 * attempt, "error_status": status,
                  "error": "overloaded" if status else "unknown"})
    first, second, third = lines(progress)
    assert first.startswith(f"the Messages API at {URL} cannot be reached (connection failed)")
    assert "(1 of 10, next in 0.6 s)" in first and "Check ANTHROPIC_BASE_URL" in first
    assert "Check" not in second
    assert "answered 529 (overloaded)" in third


def test_blocked_and_failed_archives() -> None:
    progress = Progress(io.StringIO(), URL)
    progress.archived("", "store not writable", True)
    progress.archived("", "store not writable", False)
    assert lines(progress) == [
        "compaction blocked: the transcript could not be archived: store not writable",
        "transcript NOT archived (compaction goes on): store not writable",
    ]
