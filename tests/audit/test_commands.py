"""`audit list` and `audit show`: what an auditor reads, and what a machine reads."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.audit import append_decision
from gateway.audit.commands import audit_list, audit_show, parse_since
from gateway.errors import ConfigError
from gateway.types import Decision, ToolCall

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    calls = [
        (ToolCall("Bash", {"command": "rm -rf /srv"}, tool_use_id="a", session_id="s1"),
         Decision("deny", "org.yaml:permissions.deny[1]", "no rm")),
        (ToolCall("Read", {"file_path": "/repo/.env"}, tool_use_id="b", session_id="s1"),
         Decision("deny", "no-secrets", "no")),
        (ToolCall("WebFetch", {"url": "https://docs.example/x"}, tool_use_id="c",
                  session_id="s2"), Decision("allow", "docs", "")),
        (ToolCall("mcp__db__query", {"sql": "select 1"}, tool_use_id="d", session_id="s2"),
         Decision("abstain", would_deny=True, rule_id="monitor-db")),
    ]
    for call, decision in calls:
        append_decision(call, decision, path)
    return path


def _list(log: Path, **kw: object) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_list(str(log), out=out, err=err, **kw)  # type: ignore[arg-type]
    return code, out.getvalue().splitlines(), err.getvalue()


def test_list_shows_what_was_decided_on_what(log: Path) -> None:
    code, lines, _ = _list(log)
    assert code == 0 and len(lines) == 4
    assert lines[0].split()[:3] == ["1", lines[0].split()[1], "deny"]
    assert "Bash" in lines[0] and "org.yaml:permissions.deny[1]" in lines[0]
    assert lines[0].endswith("rm -rf /srv")
    assert lines[1].endswith("/repo/.env") and lines[2].endswith("https://docs.example/x")
    assert "(would deny)" in lines[3] and lines[3].endswith('{"sql": "select 1"}')


def test_list_filters(log: Path) -> None:
    assert [ln.split()[0] for ln in _list(log, decision="deny")[1]] == ["1", "2"]
    assert [ln.split()[0] for ln in _list(log, session="s2")[1]] == ["3", "4"]
    assert [ln.split()[0] for ln in _list(log, rule="no-secrets")[1]] == ["2"]
    assert _list(log, since="1h")[1] and not _list(log, since="2999-01-01")[1]


def test_list_json_is_the_records_as_stored(log: Path) -> None:
    code, lines, _ = _list(log, as_json=True, decision="deny")
    stored = [json.loads(line) for line in log.read_text().splitlines()][:2]
    assert code == 0 and [json.loads(line) for line in lines] == stored


def test_show_one_record(log: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert audit_show(2, str(log), out=out, err=err) == 0
    shown = json.loads(out.getvalue())
    assert shown["seq"] == 2 and shown["input"] == {"file_path": "/repo/.env"}
    assert out.getvalue().count("\n") > 10  # indented for people
    out = io.StringIO()
    assert audit_show(2, str(log), as_json=True, out=out, err=err) == 0
    assert out.getvalue().count("\n") == 1
    err = io.StringIO()
    assert audit_show(9, str(log), out=io.StringIO(), err=err) == 2
    assert err.getvalue() == f"audit show: no record 9 in {log}: it holds 4\n"


def test_since_forms() -> None:
    now = datetime(2026, 5, 2, 12, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("2026-05-01", now) == datetime(2026, 5, 1, tzinfo=UTC)
    assert parse_since("2026-05-01T10:00:00+02:00", now).hour == 10
    with pytest.raises(ConfigError, match="--since 'yesterday'"):
        parse_since("yesterday", now)


def test_bad_arguments_are_one_line(log: Path) -> None:
    code, _, err = _list(log, since="soon")
    assert code == 2 and err.count("\n") == 1 and err.startswith("audit list: --since")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "gateway", "audit", "show", "0", "--log",
                          str(log)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "1 is the first" in out.stderr


def test_a_closed_pipe_ends_the_listing_quietly(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    call = ToolCall("Bash", {"command": "echo " + "x" * 200}, session_id="s")
    for _ in range(3000):  # more than a pipe buffer holds
        append_decision(call, Decision("allow"), log)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "audit", "list", "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    assert proc.wait(timeout=60) == 0
    assert first.split()[0] == b"1" and proc.stderr.read() == b""


def test_every_decision_list_prints_is_one_it_selects_by(tmp_path: Path) -> None:
    """`audit list` prints refused requests, observed events and blocked compactions: each
    is a --decision the command line takes."""
    from gateway.audit.log import append_record
    from gateway.cli.main import build_parser
    from gateway.server.audit_events import BLOCK, NONE, REFUSED, event_record

    path = tmp_path / "audit.jsonl"
    for number, decision in enumerate((REFUSED, NONE, BLOCK, REFUSED)):
        append_record(event_record("PreCompact", {"session_id": f"s{number}"}, "team-a",
                                   decision=decision, reason="why"), path)
    printed = {line.split()[2] for line in _list(path)[1]}
    assert printed == {REFUSED, NONE, BLOCK}
    for decision in sorted(printed):
        args = build_parser().parse_args(["audit", "list", "--decision", decision])
        selected = _list(path, decision=args.decision)[1]
        assert selected and all(line.split()[2] == decision for line in selected)
    assert len(_list(path, decision=REFUSED)[1]) == 2


def test_an_event_that_is_no_tool_call_is_listed_by_its_name(tmp_path: Path) -> None:
    from gateway.audit.log import append_record
    from gateway.server.audit_events import NONE, event_record

    path = tmp_path / "audit.jsonl"
    append_record(event_record("SessionStart", {"session_id": "s1"}, "team-a", decision=NONE,
                               reason="SessionStart is observed"), path)
    append_record(event_record("PreCompact", {"session_id": "s1"}, "team-a", decision="none",
                               reason="archived", archive_id="ar-1"), path)
    start, compact = _list(path)[1]
    assert "SessionStart" in start and " ? " not in start, start
    assert start.endswith("SessionStart is observed")
    assert "PreCompact" in compact and compact.endswith("ar-1"), compact
