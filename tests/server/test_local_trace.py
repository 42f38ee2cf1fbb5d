"""The trace of sessions wired with local command hooks: the journal each hook appends to, the
responses read back from a transcript, and the build at each turn's end."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gateway.env import adopt_hook_otel_env
from gateway.handlers.trace_journal import MAX_ENTRY_BYTES, journal_path, note
from gateway.handlers.turn_end import RecordedRefusals
from gateway.server import local_trace
from gateway.telemetry.fact_state import decision_json
from gateway.telemetry.transcript_responses import responses_in, stamp_ns
from gateway.types import Decision

FIXTURE = (Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.332"
           / "transcript.subagent.jsonl")


def _line(message_id: str, block: dict[str, Any], at: str, **extra: Any) -> str:
    return json.dumps({"type": "assistant", "timestamp": at, **extra, "message": {
        "id": message_id, "model": "claude-opus-5-5", "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5}, "content": [block]}})


def test_the_lines_of_one_response_are_merged_back_into_it() -> None:
    lines = [
        _line("msg_1", {"type": "text", "text": "running"}, "2026-12-03T09:21:46.176Z"),
        json.dumps({"type": "user", "timestamp": "2026-12-03T09:21:46.177Z"}),
        _line("msg_1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
              "2026-12-03T09:21:46.179Z"),
        _line("msg_2", {"type": "text", "text": "x"}, "2026-12-03T09:21:47.000Z",
              isApiErrorMessage=True),
        json.dumps({"type": "assistant", "timestamp": "2026-12-03T09:21:48.000Z",
                    "message": {"id": "msg_3", "model": "<synthetic>", "content": []}}),
        "not json",
    ]
    (response,) = responses_in(lines)
    assert response.message_id == "msg_1"
    assert [b["type"] for b in response.message["content"]] == ["text", "tool_use"]
    assert response.at_ns == stamp_ns("2026-12-03T09:21:46.179Z")  # its last line's time
    assert stamp_ns("2026-12-03T09:21:46.179Z") == 1796289706179 * 10**6
    assert response.agent_id == ""


def test_a_subagents_responses_carry_its_id() -> None:
    found = responses_in(FIXTURE.read_text().splitlines())
    assert found and all(r.agent_id == "a3c859b2c31e97475" for r in found)
    assert found[0].message["usage"]["input_tokens"] == 1200


def test_a_session_without_a_journal_notes_nothing(tmp_path: Path) -> None:
    body = {"session_id": "s1", "tool_use_id": "t1"}
    assert not note(tmp_path, "PostToolUse", body)
    assert not journal_path(tmp_path, "s1").exists()
    assert note(tmp_path, "SessionStart", body)
    assert note(tmp_path, "PostToolUse", body)
    events = [json.loads(line)["event"] for line in
              journal_path(tmp_path, "s1").read_text().splitlines()]
    assert events == ["SessionStart", "PostToolUse"]
    assert oct(journal_path(tmp_path, "s1").stat().st_mode & 0o777) == "0o600"


def test_content_is_noted_only_when_spans_capture_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    note(tmp_path, "SessionStart", {"session_id": "s1"})
    secret = {"command": "export TOKEN=s3cret"}
    note(tmp_path, "PostToolUse", {"session_id": "s1", "tool_input": secret,
                                   "tool_response": {"stdout": "s3cret", "agentId": "a1"}})
    assert "s3cret" not in journal_path(tmp_path, "s1").read_text()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    note(tmp_path, "PostToolUse", {"session_id": "s1", "tool_input": secret})
    assert "s3cret" in journal_path(tmp_path, "s1").read_text()


def test_a_large_tool_response_is_noted_without_its_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    note(tmp_path, "SessionStart", {"session_id": "s1"})
    big = {"agentId": "a1", "isAsync": False, "content": "x" * MAX_ENTRY_BYTES}
    note(tmp_path, "PostToolUse", {"session_id": "s1", "tool_response": big})
    last = json.loads(journal_path(tmp_path, "s1").read_text().splitlines()[-1])
    assert last["body"]["tool_response"] == {"agentId": "a1", "isAsync": False}


def test_a_session_id_is_never_a_path(tmp_path: Path) -> None:
    note(tmp_path, "SessionStart", {"session_id": "../../escape"})
    assert [p.parent for p in tmp_path.rglob("*.jsonl")] == [tmp_path / "trace-journal"]


class _Sink:
    def __init__(self) -> None:
        self.specs: list[Any] = []
        self.settings = None

    def export(self, specs: Any) -> None:
        self.specs.extend(specs)

    def shutdown(self) -> None:
        pass


def _transcript(root: Path, session: str, lines: list[str]) -> Path:
    path = root / "proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_each_build_exports_what_is_new_and_the_session_end_removes_the_journal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = _Sink()
    monkeypatch.setattr("gateway.telemetry.export.span_sink_from_env", lambda: sink)
    home, root, session = tmp_path / "home", tmp_path / "projects", "s1"
    t0 = 1796289706000 * 10**6  # 2026-12-03T09:21:46Z
    transcript = _transcript(root, session, [
        _line("msg_1", {"type": "tool_use", "id": "t1", "name": "Bash",
                        "input": {"command": "ls"}}, "2026-12-03T09:21:46.100Z")])
    base = {"session_id": session, "transcript_path": str(transcript)}
    note(home, "UserPromptSubmit", {**base, "prompt": "go"}, at_ns=t0)
    note(home, "PreToolUse", {**base, "tool_use_id": "t1", "tool_name": "Bash",
                              "tool_input": {"command": "ls"}}, at_ns=t0 + 200_000_000,
         extra={"decision": decision_json(Decision("allow", "r", "ok"))})
    note(home, "PostToolUse", {**base, "tool_use_id": "t1", "tool_name": "Bash",
                               "tool_response": {}}, at_ns=t0 + 300_000_000)
    note(home, "Stop", {**base, "hook_event_name": "Stop"}, at_ns=t0 + 400_000_000)
    assert local_trace.build(home, {**base, "hook_event_name": "Stop"}, projects_root=root) == 5
    names = sorted(s.name for s in sink.specs)
    assert names == ["chat claude-opus-5-5", "execute_tool Bash", "turn"], names
    (chat,) = [s for s in sink.specs if s.name.startswith("chat ")]
    assert chat.start_ns == t0 and chat.end_ns == t0 + 100_000_000  # from the prompt to its line
    assert local_trace.build(home, {**base, "hook_event_name": "Stop"}, projects_root=root) == 0
    note(home, "SessionEnd", {**base, "hook_event_name": "SessionEnd"}, at_ns=t0 + 10**9)
    local_trace.build(home, {**base, "hook_event_name": "SessionEnd"}, projects_root=root)
    (root_span,) = [s for s in sink.specs if s.parent_span_id is None]
    assert root_span.start_ns <= t0 and root_span.end_ns == t0 + 10**9
    assert not journal_path(home, session).exists()
    assert not list((home / "trace-journal").glob("*.state.json"))


def test_a_journal_line_being_written_waits_for_the_next_build(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"event": "A"}\n{"event": "B"')
    events, offset = local_trace._journal_from(path, 0)
    assert [e["event"] for e in events] == ["A"] and offset == len(b'{"event": "A"}\n')


def test_refusals_recorded_by_one_process_are_not_recorded_again_by_the_next(
        tmp_path: Path) -> None:
    path = tmp_path / "seen"
    assert RecordedRefusals(path=path).first_time("", "s1", "toolu_1")
    assert not RecordedRefusals(path=path).first_time("", "s1", "toolu_1")
    assert RecordedRefusals(path=path).first_time("", "s1", "toolu_2")


def test_hooks_read_the_otel_variables_claude_code_withholds_from_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("AGENT_GATEWAY_OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    monkeypatch.setenv("AGENT_GATEWAY_OTEL_SERVICE_NAME", "from-settings")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-the-session")
    adopt_hook_otel_env()
    assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318"
    assert os.environ["OTEL_SERVICE_NAME"] == "from-the-session"  # set wins
