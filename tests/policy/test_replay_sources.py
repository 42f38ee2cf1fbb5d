"""Replay sources: the calls and recorded decisions read from real Claude Code transcripts
(main session and subagent), the gateway's audit log of the same session, hook inputs and
stream-json output; lines that are none of these; streaming with a cap on line length."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from gateway.policy.replay import (
    CLAUDE_CODE_DENIED,
    RAN,
    BadLine,
    Item,
    NotDecidable,
    Recorded,
    Replayable,
    Source,
    kind_of,
    source_files,
)
from gateway.policy.replay import transcript as transcript_module
from gateway.policy.replay.lines import capped_lines
from tests.fixtures import CLAUDE_CODE_RECORDINGS

SESSION = CLAUDE_CODE_RECORDINGS / "transcript.session.jsonl"
SUBAGENT = CLAUDE_CODE_RECORDINGS / "transcript.subagent.jsonl"
AUDIT = CLAUDE_CODE_RECORDINGS / "audit.session.jsonl"
SESSION_ID = "0ab79346-d4a7-4a34-809a-ddc3a66fd35d"

# The session's calls (a run under a policy denying `rm` and reads of `.env`, asking before
# `git push`, allowing `echo`; Claude Code allowing Bash, Read, Write, Edit and Task and
# denying `Bash(curl:*)`), and what each became, as the transcript records it.
RECORDED_IN_TRANSCRIPT = {
    "toolu_0000_0": ("Bash", "allow"),  # the hook allowed echo
    "toolu_0001_0": ("Bash", "deny"),  # the hook denied rm
    "toolu_0002_0": ("Bash", "ask"),  # the hook asked before git push; -p cannot ask: refused
    "toolu_0003_0": ("Bash", CLAUDE_CODE_DENIED),  # curl: Claude Code's own deny rule
    "toolu_0004_0": ("Bash", RAN),  # the hook abstained, --allowed-tools let it run
    "toolu_0005_0": ("Read", RAN),
    "toolu_0006_0": ("Write", RAN),
    "toolu_0007_0": ("Edit", RAN),
    "toolu_0008_0": ("WebFetch", CLAUDE_CODE_DENIED),  # never granted
    "toolu_0009_0": ("Bash", "deny"),  # cat .env: the hook, by Read(**/.env)
    "toolu_0010_0": ("Agent", RAN),  # recorded as Task: the hook sees the Agent tool
}
RECORDED_IN_AUDIT_LOG = {
    "toolu_0000_0": "allow", "toolu_0001_0": "deny", "toolu_0002_0": "ask",
    "toolu_0003_0": "abstain", "toolu_0004_0": "abstain", "toolu_0005_0": "abstain",
    "toolu_0006_0": "abstain", "toolu_0007_0": "abstain", "toolu_0008_0": "abstain",
    "toolu_0009_0": "deny", "toolu_0010_0": "abstain", "toolu_0011_0": "allow",
}


def read(path: Path | str, data: bytes | None = None, cwd: str = "/work") -> list[Item]:
    stream = io.BytesIO(data) if data is not None else open(path, "rb")  # noqa: SIM115
    with stream:
        return list(Source(str(path), stream, cwd))


def calls(items: Iterable[Item]) -> dict[str, Replayable]:
    return {i.call.tool_use_id: i for i in items if isinstance(i, Replayable)}


def jsonl(*lines: dict[str, Any] | str) -> bytes:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()


# -- Claude Code transcripts ---------------------------------------------------------------
def test_a_transcript_yields_each_call_with_what_became_of_it() -> None:
    source = Source(str(SESSION), open(SESSION, "rb"), "/elsewhere")  # noqa: SIM115
    items = list(source)
    source._stream.close()
    assert source.kind == "transcript"
    assert [i for i in items if not isinstance(i, Replayable)] == []
    found = calls(items)
    assert {k: (v.call.tool_name, v.recorded and v.recorded.decision)
            for k, v in found.items()} == RECORDED_IN_TRANSCRIPT
    echo = found["toolu_0000_0"]
    assert echo.call.tool_input == {"command": "echo hi > out.txt", "description": "say hi"}
    assert echo.call.cwd == "/srv/project"  # the line's own, not --cwd
    assert echo.call.session_id == SESSION_ID
    assert echo.where == f"{SESSION}:11"  # the tool_use line, not the result's
    rm = found["toolu_0001_0"]
    assert rm.recorded == Recorded("deny", "policy.yaml:permissions.deny[1]")


def test_a_subagent_transcript_is_a_source_like_any_other() -> None:
    (call,) = calls(read(SUBAGENT)).values()
    assert call.call.tool_input == {"command": "echo from-sub > sub.txt"}
    assert call.call.agent_id == "a3c859b2c31e97475"
    assert call.call.session_id == SESSION_ID
    assert call.recorded == Recorded("allow")


def test_a_call_whose_result_never_came_is_decided_without_a_recorded_decision() -> None:
    lines = SESSION.read_text().splitlines()
    cut = "\n".join(lines[:11]).encode() + b"\n"  # up to the first tool_use, not its result
    (call,) = calls(read("cut.jsonl", cut)).values()
    assert call.call.tool_use_id == "toolu_0000_0" and call.recorded is None


def test_calls_awaiting_results_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcript_module, "MAX_PENDING", 3)
    uses = [{"type": "assistant", "sessionId": "s", "cwd": "/p", "message": {"content": [
        {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}]}}
        for n in range(10)]
    items = read("many.jsonl", jsonl(*uses))
    assert [i.call.tool_use_id for i in items if isinstance(i, Replayable)] == [
        f"t{n}" for n in range(10)]  # the oldest decided first, the rest at the end


RESULT_TEXTS = [
    ("PreToolUse:Bash hook error: policy org.yaml denies Bash(rm:*) "
     "[rule org.yaml:permissions.deny[1]]", True, Recorded("deny", "org.yaml:permissions.deny[1]")),
    ("Permission to use Bash with command curl x has been denied.", True,
     Recorded(CLAUDE_CODE_DENIED)),
    ("Claude requested permissions to use WebFetch, but you haven't granted it yet.", True,
     Recorded(CLAUDE_CODE_DENIED)),
    ("ls: cannot access 'x': No such file or directory", True, Recorded(RAN)),  # it ran
    ("(Bash completed with no output)", False, Recorded(RAN)),
]


@pytest.mark.parametrize(("text", "is_error", "recorded"), RESULT_TEXTS)
def test_without_a_permission_decision_the_result_text_tells(
    text: str, is_error: bool, recorded: Recorded
) -> None:
    use = {"type": "assistant", "sessionId": "s", "cwd": "/p", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "x"}}]}}
    result = {"type": "user", "sessionId": "s", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": text, "is_error": is_error}]}}
    assert calls(read("t.jsonl", jsonl(use, result)))["t1"].recorded == recorded


def test_stream_json_output_reads_as_a_transcript() -> None:
    """`claude -p --output-format stream-json`: the decision under tool_result_meta, the cwd
    on the init line."""
    path = CLAUDE_CODE_RECORDINGS / "stream-json.hook-denied.jsonl"
    (call,) = calls(read(path, cwd="/elsewhere")).values()
    assert call.call.tool_input["command"] == "echo hi"
    assert call.call.cwd == "/srv/project"
    assert call.recorded == Recorded("deny")


# -- the audit log -------------------------------------------------------------------------
def test_the_audit_log_of_the_same_session_holds_the_hooks_decisions() -> None:
    source = Source(str(AUDIT), open(AUDIT, "rb"), "/replay/cwd")  # noqa: SIM115
    found = calls(source)
    source._stream.close()
    assert source.kind == "audit log"
    assert {k: v.recorded and v.recorded.decision for k, v in found.items()} == (
        RECORDED_IN_AUDIT_LOG)
    rm = found["toolu_0001_0"]
    assert rm.recorded == Recorded("deny", "policy.yaml:permissions.deny[1]")
    assert rm.call.cwd == "/replay/cwd"  # records carry no cwd: decided against --cwd
    assert rm.call.session_id == SESSION_ID
    assert found["toolu_0010_0"].call.tool_name == "Agent"


def _record(**fields: Any) -> dict[str, Any]:
    base = {"seq": 1, "chain": "c", "hash": "h", "time": "2026-12-03T09:21:45+00:00",
            "session_id": "s", "tool_use_id": "t1", "tool": "Bash", "decision": "deny",
            "rule_id": "org.yaml:permissions.deny[1]", "input": {"command": "rm -rf x"}}
    return base | fields


def test_a_cut_input_is_not_decided_and_event_records_are_passed_over() -> None:
    items = read("audit.jsonl", jsonl(
        _record(),
        _record(seq=2, event="PreCompact", tool=None, decision="archived"),
        _record(seq=3, tool_use_id="t2", input="{\"command\": \"rm -rf x y z …",
                input_truncated=True),
        _record(seq=4, tool_use_id="t3", input={"command": "echo [REDACTED:aws-key]"},
                input_redactions=["aws-key"]),
    ))
    assert [type(i).__name__ for i in items] == ["Replayable", "NotDecidable", "Replayable"]
    cut = items[1]
    assert isinstance(cut, NotDecidable)
    assert (cut.where, cut.tool_use_id, cut.tool_name) == ("audit.jsonl:3", "t2", "Bash")
    assert "input_truncated" in cut.reason
    redacted = items[2]
    assert isinstance(redacted, Replayable) and redacted.redacted
    assert not items[0].redacted  # type: ignore[union-attr]


# -- hook inputs ---------------------------------------------------------------------------
def test_hook_inputs_are_read_with_the_hooks_parser() -> None:
    """The recorded hook inputs hold a PreToolUse and a PreCompact input: the second is
    passed over."""
    items = read(CLAUDE_CODE_RECORDINGS / "hook-inputs.jsonl")
    (call,) = calls(items).values()
    assert call.call.tool_name == "Bash" and call.call.cwd == "/srv/project"
    assert call.recorded is None
    assert len(items) == 1


def test_a_hook_input_without_a_cwd_takes_the_one_given() -> None:
    items = read("h.jsonl", jsonl(
        {"tool_name": "Read", "tool_input": {"file_path": "a"}, "tool_use_id": "t1"},
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"},
        {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {}},
    ), cwd="/given")
    assert calls(items)["t1"].call.cwd == "/given"
    assert items[1] == BadLine("h.jsonl:2", "tool_input must be a JSON object")
    assert len(items) == 2


# -- kinds and bad lines -------------------------------------------------------------------
def test_the_kind_is_told_by_content() -> None:
    assert kind_of(json.loads(AUDIT.read_text().splitlines()[0])) == "audit log"
    assert kind_of(json.loads(SESSION.read_text().splitlines()[0])) == "transcript"
    hook_input = (CLAUDE_CODE_RECORDINGS / "hook-inputs.jsonl").read_text().splitlines()[0]
    assert kind_of(json.loads(hook_input)) == "hook inputs"
    assert kind_of({"resourceSpans": []}) is None


def test_bad_lines_name_file_and_line_and_reading_goes_on() -> None:
    use = {"type": "assistant", "sessionId": "s", "cwd": "/p", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}
    items = read("mixed.jsonl", jsonl(
        {"resourceSpans": []},  # 1: no known kind, before the kind is known
        use,  # 2: the file is a transcript from here
        "{not json",  # 3
        "[1, 2]",  # 4
        "",  # 5: blank lines are not lines of anything
        _record(),  # 6: an audit record in a transcript
        {"type": "assistant", "sessionId": "s", "message": {"content": [
            {"type": "tool_use", "id": "t2", "name": "Bash"}]}},  # 7: no input
        {"nothing": "known"},  # 8
    ))
    bad = [i for i in items if isinstance(i, BadLine)]
    assert [b.where for b in bad] == [f"mixed.jsonl:{n}" for n in (1, 3, 4, 6, 7, 8)]
    assert "not a Claude Code transcript line, an audit record or a hook input" in bad[0].message
    assert bad[1].message.startswith("not JSON")
    assert bad[2].message == "not a JSON object"
    assert bad[3].message == "a line of audit log in a file of transcript"
    assert "without a name or an input" in bad[4].message
    assert bad[5].message == "a line of no known kind in a file of transcript"
    assert list(calls(items)) == ["t1"]


def test_a_line_over_the_cap_is_read_past_and_the_next_line_read() -> None:
    data = b'{"a": 1}\n' + b"x" * 5000 + b"\n" + b'{"b": 2}\n' + b"y" * 300
    assert list(capped_lines(io.BytesIO(data), cap=100)) == [
        (1, b'{"a": 1}\n'), (2, None), (3, b'{"b": 2}\n'), (4, None)]
    assert list(capped_lines(io.BytesIO(b"z" * 99 + b"\n"), cap=100)) == [
        (1, b"z" * 99 + b"\n")]


def test_a_source_is_read_as_a_stream(tmp_path: Path) -> None:
    """A pipe (no seeking, no size) serves as well as a file."""
    import os

    read_end, write_end = os.pipe()
    os.write(write_end, SUBAGENT.read_bytes())
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        assert list(calls(Source("<stdin>", pipe, "/w"))) == ["toolu_0011_0"]


def test_a_directory_names_every_jsonl_under_it(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-srv-project"
    (project / "s1" / "subagents").mkdir(parents=True)
    for name in ("s1.jsonl", "s1/subagents/agent-a.jsonl", "s1/subagents/agent-a.meta.json"):
        (project / name).write_text("{}\n")
    assert source_files(str(tmp_path / "projects")) == [  # a session, then its subagents
        str(project / "s1.jsonl"), str(project / "s1" / "subagents" / "agent-a.jsonl")]
    assert source_files(str(project / "s1.jsonl")) == [str(project / "s1.jsonl")]
    assert source_files("-") == ["-"]
    with pytest.raises(FileNotFoundError):
        source_files(str(tmp_path / "missing.jsonl"))
