"""Claude Code's refusals read back from transcript lines, as Claude Code 2.1.337 writes them:
only its own refusal texts count, never a command's output that imitates one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.audit.floor_scan import is_refusal_text, refusals_in
from gateway.handlers.turn_end import RecordedRefusals, record_turn_refusals
from gateway.types import ToolCall


def _call(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> bytes:
    return json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}]}}).encode()


def _result(tool_use_id: str, text: str, prompt: str = "p1", error: bool = True) -> bytes:
    return json.dumps({"type": "user", "promptId": prompt, "message": {"content": [
        {"type": "tool_result", "content": text, "is_error": error,
         "tool_use_id": tool_use_id}]}}).encode()


DIRECTORY = ("<tool_use_error>File is in a directory that is denied by your permission "
             "settings.</tool_use_error>")


def test_each_of_claude_codes_refusal_texts_counts() -> None:
    for text in (DIRECTORY,
                 "Permission to use Bash with command rm -rf build has been denied.",
                 "Permission to use Read has been denied by your rule Read(~/.netrc).",
                 "Permission to use WebFetch has been denied because Claude Code is running in "
                 "don't ask mode.",
                 "Claude requested permissions to use WebFetch, but you haven't granted it yet."):
        assert is_refusal_text(text), text


def test_output_that_imitates_a_refusal_is_none() -> None:
    for text in ("Exit code 1\nPermission to use Read has been denied.",
                 "PreToolUse:Bash hook error: policy: denied",
                 "File does not exist.", "cat: x: Permission denied"):
        assert not is_refusal_text(text), text


def test_a_refused_call_is_found_with_its_input() -> None:
    lines = [_call("t1", "Read", {"file_path": "/w/.env"}), _result("t1", DIRECTORY),
             _call("t2", "Bash", {"command": "echo Permission to use Read has been denied."}),
             _result("t2", "Exit code 1\nPermission to use Read has been denied."),
             _call("t3", "Bash", {"command": "ls"}), _result("t3", "a\nb", error=False)]
    [found] = refusals_in(lines)
    assert (found.tool_use_id, found.tool_name, dict(found.tool_input)) == (
        "t1", "Read", {"file_path": "/w/.env"})
    assert found.told == DIRECTORY


def test_only_the_turns_refusals_and_a_torn_line_is_skipped() -> None:
    lines = [_call("t1", "Read", {"file_path": "/a"}), _result("t1", DIRECTORY, prompt="p1"),
             _call("t2", "Read", {"file_path": "/b"}), _result("t2", DIRECTORY, prompt="p2"),
             _result("t3", DIRECTORY)[:30]]
    assert [r.tool_use_id for r in refusals_in(lines, "p2")] == ["t2"]
    assert [r.tool_use_id for r in refusals_in(lines)] == ["t1", "t2"]


class _Engine:
    def __init__(self) -> None:
        self.recorded: list[tuple[ToolCall, str, str]] = []

    def record_refusal(self, call: ToolCall, reason: str, tenant: str = "") -> None:
        self.recorded.append((call, reason, tenant))


def test_the_turn_end_records_each_refusal_once(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-w"
    project.mkdir(parents=True)
    transcript = project / "s1.jsonl"
    transcript.write_bytes(b"\n".join([_call("t1", "Read", {"file_path": "/w/.env"}),
                                       _result("t1", DIRECTORY)]) + b"\n")
    subagents = project / "s1" / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a.jsonl").write_bytes(
        _call("t9", "Grep", {"pattern": "x", "path": "/home/u/.ssh"}) + b"\n"
        + _result("t9", "Permission to use Grep has been denied.") + b"\n")
    engine, seen = _Engine(), RecordedRefusals()
    body = {"session_id": "s1", "transcript_path": str(transcript), "cwd": "/w",
            "prompt_id": "p1"}
    assert record_turn_refusals(engine, body, seen, tenant="team-a",
                                projects_root=tmp_path / "projects") == 2
    assert record_turn_refusals(engine, body, seen, tenant="team-a",
                                projects_root=tmp_path / "projects") == 0
    assert [(c.tool_use_id, c.session_id, c.cwd, t) for c, _, t in engine.recorded] == [
        ("t1", "s1", "/w", "team-a"), ("t9", "s1", "/w", "team-a")]
    assert engine.recorded[0][1] == f"Claude Code: {DIRECTORY}"


def test_another_sessions_transcript_is_not_read(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-w"
    project.mkdir(parents=True)
    other = project / "s2.jsonl"
    other.write_bytes(_call("t1", "Read", {"file_path": "/a"}) + b"\n"
                      + _result("t1", DIRECTORY) + b"\n")
    outside = tmp_path / "s1.jsonl"
    outside.write_bytes(other.read_bytes())
    engine = _Engine()
    for path in (other, outside):
        body = {"session_id": "s1", "transcript_path": str(path)}
        assert record_turn_refusals(engine, body, RecordedRefusals(),
                                    projects_root=tmp_path / "projects") == 0
    assert engine.recorded == []
