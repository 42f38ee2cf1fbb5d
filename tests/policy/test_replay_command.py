"""`agent-gateway policy replay`: decisions as the hook would make them (sandboxed under
`sandbox: required`), what would change against the recorded decisions, the --jsonl lines,
the summary, and exit statuses."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.policy import load_policy
from gateway.policy.commands import policy_replay
from gateway.policy.replay import (
    CLAUDE_CODE_DENIED,
    RAN,
    Recorded,
    Replayable,
    Replayed,
    changed,
    replay,
)
from gateway.types import ToolCall
from tests.fixtures import CLAUDE_CODE_RECORDINGS

from .conftest import WritePolicy

SESSION = CLAUDE_CODE_RECORDINGS / "transcript.session.jsonl"
SUBAGENT = CLAUDE_CODE_RECORDINGS / "transcript.subagent.jsonl"
AUDIT = CLAUDE_CODE_RECORDINGS / "audit.session.jsonl"
# The policy the recorded session ran under (see test_replay_sources.py).
RECORDED_POLICY = """\
version: 1
name: e2e
permissions:
  deny: [Bash(rm:*), Read(**/.env)]
  ask: [Bash(git push:*)]
  allow: [Bash(echo:*)]
"""
STRICTER = """\
version: 1
name: stricter
permissions:
  deny: [Bash(rm:*), Read(**/.env), Edit(**/notes.txt), WebFetch]
  ask: [Bash(git push:*), Bash(echo:*)]
"""
JSONL_KEYS = ["tool_use_id", "tool_name", "decision", "rule_id", "reason", "enforced_by"]


def run(policies: list[str], *sources: str | Path, **options: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = policy_replay(policies, [str(s) for s in sources], out=out, err=err, **options)
    return status, out.getvalue(), err.getvalue()


def hook_inputs(tmp_path: Path, *calls: dict[str, Any], name: str = "inputs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"hook_event_name": "PreToolUse", "session_id": "s"}
                                       | c) + "\n" for c in calls))
    return path


# -- what would change ---------------------------------------------------------------------
@pytest.mark.parametrize(("recorded", "would", "expected"), [
    ("deny", "deny", False), ("deny", "abstain", True), ("allow", "abstain", True),
    ("abstain", "allow", True), ("ask", "ask", False),
    (RAN, "allow", False), (RAN, "abstain", False), (RAN, "deny", True), (RAN, "ask", True),
    (CLAUDE_CODE_DENIED, "deny", False), (CLAUDE_CODE_DENIED, "abstain", False),
    (CLAUDE_CODE_DENIED, "allow", True), (CLAUDE_CODE_DENIED, "ask", True),
])
def test_a_change_is_a_different_hook_decision_or_a_different_effect(
    recorded: str, would: Any, expected: bool
) -> None:
    """Where a transcript shows only Claude Code's own outcome, `abstain` leaves the call to
    Claude Code again, as it was; an effect that differs is a change."""
    assert changed(Recorded(recorded), would) is expected
    assert changed(None, would) is False


def test_the_same_policy_changes_nothing(write_policy: WritePolicy) -> None:
    policy = write_policy(RECORDED_POLICY, "policy.yaml")
    status, out, err = run([policy], SESSION, SUBAGENT, as_json=True)
    assert status == 0, err
    summary = json.loads(out)
    assert summary["decided"] == summary["recorded"] == 12
    assert summary["changes"] == []


def test_a_stricter_policy_names_the_calls_it_would_change(write_policy: WritePolicy) -> None:
    policy = write_policy(STRICTER, "stricter.yaml")
    status, out, err = run([policy], SESSION, SUBAGENT)
    assert status == 0, err
    lines = out.splitlines()
    assert "changes from the recorded decisions: 3 of 12 recorded calls" in lines
    at = lines.index("  ran -> deny: 1")  # the Edit ran; it would now be denied
    assert lines[at + 1].split() == ["toolu_0007_0", "Edit", "/srv/project/notes.txt",
                                     f"({SESSION}:25)", "[stricter.yaml:permissions.deny[3]]"]
    assert "  allow -> ask: 2" in lines  # echo, in the session and in its subagent
    # The WebFetch Claude Code refused would now be denied by the policy: the same effect.
    assert not any("WebFetch" in line for line in lines if line.startswith("    "))
    assert "  deny     4" in lines and "  ask      3" in lines


def test_the_audit_log_compares_hook_decisions(write_policy: WritePolicy) -> None:
    policy = write_policy(STRICTER, "stricter.yaml")
    status, out, _ = run([policy], AUDIT, as_json=True)
    assert status == 0
    changes = {(c["recorded"], c["would_be"]): c for c in json.loads(out)["changes"]}
    assert set(changes) == {("abstain", "deny"), ("allow", "ask")}
    assert [e["tool_name"] for e in changes[("abstain", "deny")]["examples"]] == [
        "Edit", "WebFetch"]  # the hook had no say on either: now it denies both
    assert changes[("abstain", "deny")]["examples"][0]["where"] == f"{AUDIT}:8"


def test_a_call_in_two_sources_is_decided_once(write_policy: WritePolicy) -> None:
    policy = write_policy(RECORDED_POLICY, "policy.yaml")
    status, out, _ = run([policy], SESSION, SUBAGENT, AUDIT, as_json=True)
    summary = json.loads(out)
    assert status == 0
    assert (summary["decided"], summary["seen_before"]) == (12, 12)
    assert summary["sources"] == {"transcript": 2, "audit log": 1}


# -- decided as the hook decides, in the session the policy makes --------------------------
SANDBOXED = """\
version: 1
sandbox: required
permissions:
  deny: [Bash(rm -rf:*), Read(**/.env), Read(~/.ssh/**)]
"""


def test_sandbox_required_decides_as_a_sandboxed_session(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    """What only the kernel sees is left to the sandbox a `sandbox: required` policy
    compiles; without the key the hook denies it as uncertain."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("TOKEN=1\n")
    source = hook_inputs(tmp_path, {"tool_name": "Bash", "tool_use_id": "t1",
                                    "tool_input": {"command": "cat $(echo .e)nv"},
                                    "cwd": str(project)},
                         {"tool_name": "Bash", "tool_use_id": "t2",
                          "tool_input": {"command": "cat .env"}, "cwd": str(project)})
    lines = {}
    for name, text in (("sandboxed.yaml", SANDBOXED),
                       ("hook-only.yaml", SANDBOXED.replace("sandbox: required\n", ""))):
        out = tmp_path / f"{name}.jsonl"
        status, _, err = run([write_policy(text, name)], source, jsonl=str(out))
        assert status == 0, err
        lines[name] = {d["tool_use_id"]: d for d in map(json.loads, out.read_text().splitlines())}
    sandboxed, hook_only = lines["sandboxed.yaml"]["t1"], lines["hook-only.yaml"]["t1"]
    assert (sandboxed["decision"], sandboxed["enforced_by"]) == ("abstain", "sandbox")
    assert "left to the OS sandbox" in sandboxed["reason"] and sandboxed["rule_id"]
    assert (hook_only["decision"], hook_only["enforced_by"]) == ("deny", "hook")
    # --hook-only decides the sandbox: required policy as a session without the sandbox.
    out = tmp_path / "forced.jsonl"
    status, summary, _ = run([str(tmp_path / "sandboxed.yaml")], source, jsonl=str(out),
                             hook_only=True)
    forced = json.loads(out.read_text().splitlines()[0])
    assert (forced["decision"], forced["enforced_by"]) == ("deny", "hook")
    assert "sandbox: required, decided hook-only (--hook-only)" in summary
    for provable in (lines["sandboxed.yaml"]["t2"], lines["hook-only.yaml"]["t2"]):
        assert (provable["decision"], provable["enforced_by"]) == ("deny", "hook")


def test_replay_records_nothing_and_exports_nothing(
    write_policy: WritePolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "gateway-home"
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(home))
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")
    status, out, _ = run([write_policy(STRICTER)], SESSION, AUDIT)
    assert status == 0
    assert not home.exists()  # no audit log, no cache, no span file
    assert "agent_gateway.audit" not in out


def test_decisions_match_the_hooks(write_policy: WritePolicy) -> None:
    """The recorded audit log was written by the hook deciding these calls under this
    policy: replayed, every decision and rule comes out the same."""
    policy = load_policy([write_policy(RECORDED_POLICY, "policy.yaml")])
    from gateway.policy.replay import Source

    with open(AUDIT, "rb") as stream:
        outcomes = list(replay(policy, Source(str(AUDIT), stream, "/srv/project")))
    assert len(outcomes) == 12
    for outcome in outcomes:
        assert isinstance(outcome, Replayed)
        recorded = outcome.item.recorded
        assert recorded is not None
        assert (outcome.decision.kind, outcome.decision.rule_id) == (
            recorded.decision, recorded.rule_id)


# -- the --jsonl lines ---------------------------------------------------------------------
def test_jsonl_holds_one_line_per_decided_call_with_exactly_its_fields(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    out = tmp_path / "decisions.jsonl"
    status, _, _ = run([write_policy(STRICTER, "stricter.yaml")], SESSION, SUBAGENT,
                       jsonl=str(out))
    assert status == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 12
    assert all(list(line) == JSONL_KEYS for line in lines)
    by_id = {line["tool_use_id"]: line for line in lines}
    assert by_id["toolu_0007_0"] == {
        "tool_use_id": "toolu_0007_0", "tool_name": "Edit", "decision": "deny",
        "rule_id": "stricter.yaml:permissions.deny[3]",
        "reason": "policy stricter.yaml denies Edit(**/notes.txt)", "enforced_by": "hook"}
    assert by_id["toolu_0004_0"] == {
        "tool_use_id": "toolu_0004_0", "tool_name": "Bash", "decision": "abstain",
        "rule_id": "", "reason": "", "enforced_by": "hook"}


def test_jsonl_to_stdout_moves_the_summary_to_stderr(write_policy: WritePolicy) -> None:
    status, out, err = run([write_policy(STRICTER)], SUBAGENT, jsonl="-")
    assert status == 0
    (line,) = out.splitlines()
    assert json.loads(line)["tool_use_id"] == "toolu_0011_0"
    assert err.startswith("policy replay: 1 call from 1 source (transcript 1)")


# -- what cannot be read or decided, and exit statuses -------------------------------------
def test_bad_lines_are_named_counted_and_fail_the_replay(
    write_policy: WritePolicy, tmp_path: Path
) -> None:
    source = tmp_path / "mixed.jsonl"
    source.write_text(SUBAGENT.read_text() + "{broken\n")
    status, out, err = run([write_policy(STRICTER)], source)
    assert status == 1
    assert err.splitlines() == [f"{source}:9: not JSON (Expecting property name enclosed in "
                                "double quotes: line 1 column 2 (char 1))"]
    assert "decided 1, not decided 0, bad lines 1, seen before 0" in out


def test_a_cut_audit_input_is_not_decided(write_policy: WritePolicy, tmp_path: Path) -> None:
    record = json.loads(AUDIT.read_text().splitlines()[1])
    record |= {"input": '{"command": "rm -f prec…', "input_truncated": True}
    log = tmp_path / "audit.jsonl"
    log.write_text(AUDIT.read_text().splitlines()[0] + "\n" + json.dumps(record) + "\n")
    status, out, err = run([write_policy(STRICTER)], log)
    assert status == 1
    assert err.startswith(f"{log}:2: not decided: the audit log kept only part of its input")
    assert "decided 1, not decided 1" in out
    assert f"  {log}:2  toolu_0001_0  Bash: the audit log kept only part" in out


def test_bad_many_lines_are_named_up_to_a_limit(write_policy: WritePolicy,
                                                tmp_path: Path) -> None:
    source = tmp_path / "junk.jsonl"
    source.write_text("junk\n" * 25)
    status, out, err = run([write_policy(STRICTER)], source)
    assert status == 1
    assert len(err.splitlines()) == 11 and err.splitlines()[-1] == f"{source}: 15 more bad lines"
    assert "bad lines 25" in out


def test_a_bad_policy_names_file_and_line(write_policy: WritePolicy) -> None:
    bad = write_policy("version: 1\npermissions:\n  deny: [Bash(rm:*]\n", "bad.yaml")
    status, out, err = run([bad], SESSION)
    assert (status, out) == (1, "")
    assert err.startswith(f"{bad}:3: ")


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: str(tmp / "missing.jsonl"), "cannot read: No such file or directory"),
    (lambda tmp: str(tmp), "no *.jsonl files in"),
])
def test_a_source_that_cannot_be_read_is_one_line_and_exit_2(
    write_policy: WritePolicy, tmp_path: Path, make: Any, message: str
) -> None:
    status, out, err = run([write_policy(STRICTER)], make(tmp_path))
    assert (status, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_cwd_must_be_a_directory(write_policy: WritePolicy, tmp_path: Path) -> None:
    status, _, err = run([write_policy(STRICTER)], AUDIT, cwd=str(tmp_path / "nowhere"))
    assert status == 2 and "not a directory" in err


def test_hook_inputs_record_no_decisions(write_policy: WritePolicy, tmp_path: Path) -> None:
    source = hook_inputs(tmp_path, {"tool_name": "Bash", "tool_input": {"command": "rm x"},
                                    "cwd": str(tmp_path)})
    status, out, _ = run([write_policy(STRICTER)], source)
    assert status == 0
    assert "changes: the sources recorded no decisions to compare with" in out
    assert "  deny          1  org.yaml:permissions.deny[1]" in out


def test_the_cli_reads_stdin_and_never_prints_a_traceback(write_policy: WritePolicy) -> None:
    policy = write_policy(STRICTER)
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "policy", "replay", "--policy", policy, "-",
         "--jsonl", "-"],
        input=SUBAGENT.read_bytes() + b"\x00\xff not json\n", capture_output=True, check=False)
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    assert json.loads(done.stdout.splitlines()[0])["decision"] == "ask"
    assert b"<stdin>:9: not JSON" in done.stderr


def test_an_evaluation_error_is_a_call_not_decided(
    write_policy: WritePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gateway.policy.replay.decide as decide_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(decide_module, "explain", broken)
    policy = load_policy([write_policy(STRICTER)])
    item = Replayable(ToolCall("Bash", {"command": "ls"}, tool_use_id="t1"), "f:1")
    (outcome,) = replay(policy, [item])
    assert outcome.reason == "could not decide: RuntimeError: boom"  # type: ignore[union-attr]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_jsonl_file_that_cannot_be_written_is_named(write_policy: WritePolicy) -> None:
    status, out, err = run([write_policy(STRICTER)], SESSION, jsonl="/dev/full")
    assert (status, out) == (2, "")
    assert err == "/dev/full: No space left on device\n"
