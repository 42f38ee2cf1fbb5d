from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from gateway.audit import append_decision, append_record, verify
from gateway.audit.commands import audit_verify
from gateway.types import Decision, ToolCall


def _fill(path: Path, count: int) -> None:
    for i in range(count):
        call = ToolCall("Bash", {"command": f"echo {i}"}, tool_use_id=f"t{i}", session_id="s")
        append_decision(call, Decision("deny", "r", "why", policy_hash="h"), path)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_record_fields_and_intact_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 3)
    records = [json.loads(line) for line in _lines(path)]
    assert set(records[0]) == {"time", "session_id", "prompt_id", "tool_use_id", "agent_id",
                               "tool", "decision", "would_deny", "rule_id", "reason", "policy",
                               "enforced_by",
                               "input", "input_sha256", "input_bytes", "chain", "seq",
                               "prev_hash", "hash"}
    assert [r["seq"] for r in records] == [1, 2, 3]
    assert len({r["chain"] for r in records}) == 1
    assert records[2]["input"] == {"command": "echo 2"}
    assert records[1]["prev_hash"] == records[0]["hash"]
    assert verify(path) is None


def test_edited_record_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 4)
    lines = _lines(path)
    lines[1] = lines[1].replace('"deny"', '"allow"')
    path.write_text("".join(lines))
    assert verify(path) == (2, "record 2: hash does not match its contents")


def test_deleted_record_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 4)
    lines = _lines(path)
    del lines[2]
    path.write_text("".join(lines))
    broken = verify(path)
    assert broken is not None and broken[0] == 3


def test_reordered_records_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 4)
    lines = _lines(path)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_text("".join(lines))
    broken = verify(path)
    assert broken is not None and broken[0] == 2


def test_garbage_line_and_append_after_damage(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 2)
    with open(path, "a") as handle:
        handle.write("{not json\n")
    append_record({"x": 1}, path)
    assert verify(path) == (3, "record 3: not valid JSON")


def _worker(path: str, count: int) -> None:
    _fill(Path(path), count)


def test_concurrent_appends_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(str(path), 25)) for _ in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    assert len(_lines(path)) == 100
    assert verify(path) is None


def test_audit_verify_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 3)
    assert audit_verify(str(path)) == 0
    assert "OK, 3 records" in capsys.readouterr().out
    lines = _lines(path)
    path.write_text(lines[0] + lines[2])
    assert audit_verify(str(path)) == 1
    assert "FAILED at record 2: prev_hash" in capsys.readouterr().err
    assert audit_verify(str(tmp_path / "missing.jsonl")) == 2
    assert "no such audit log" in capsys.readouterr().err


def test_a_short_write_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk cuts a record short: the fragment is cut back off, and the decision
    after space is freed is a whole record on its own line; the chain still verifies."""
    import os

    import gateway.audit.log as log

    path = tmp_path / "audit.jsonl"
    _fill(path, 2)
    before = path.read_bytes()
    real_write = os.write

    def full_disk(fd: int, data: bytes) -> int:
        return real_write(fd, data[:14])

    monkeypatch.setattr(log.os, "write", full_disk)
    with pytest.raises(OSError, match="short write"):
        _fill(path, 1)
    monkeypatch.setattr(log.os, "write", real_write)
    assert path.read_bytes() == before
    _fill(path, 1)
    assert verify(path) is None
    assert len(_lines(path)) == 3


def test_an_append_after_a_torn_line_starts_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _fill(path, 2)
    with open(path, "ab") as handle:
        handle.write(b'{"agent_id":"')  # a writer killed mid-record, long ago
    _fill(path, 1)
    lines = _lines(path)
    assert lines[2] == '{"agent_id":"\n'
    assert json.loads(lines[3])["seq"] == 4
    assert verify(path) == (3, "record 3: not valid JSON")


def test_a_lone_surrogate_in_the_input_is_recorded(tmp_path: Path) -> None:
    """JSON may carry a lone surrogate (`"l\\ud800s"`), which UTF-8 cannot hold: the record
    keeps U+FFFD in its place, its digest is of the input as decided, and it verifies."""
    path = tmp_path / "audit.jsonl"
    call = ToolCall("Bash", {"command": "l\ud800s -la"}, tool_use_id="t1", session_id="s")
    record = append_decision(call, Decision("deny", "r", "`l\ud800s`: why"), path)
    kept = json.loads(_lines(path)[0])
    assert kept["input"] == {"command": "l\ufffds -la"} and kept["reason"] == "`l\ufffds`: why"
    assert kept["input_sha256"] == record["input_sha256"]
    assert verify(path) is None
